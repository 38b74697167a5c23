"""Builds the Cython extensions only; everything else is in pyproject.toml.

Every ``cqels_endpoint/**/_*.pyx`` becomes an extension module of the same dotted name.
``CQELS_CYTHON_ANNOTATE=1`` writes Cython's HTML annotation next to each module;
``CQELS_CYTHON_DEBUG=1`` builds with assertions and without optimisation;
``CQELS_CYTHON_PROFILE=1`` makes compiled functions visible to cProfile (``benchmarks/profile_q1.py``).
"""

import os
from pathlib import Path

from setuptools import Extension, setup


def extensions():
    sources = sorted(Path("cqels_endpoint").rglob("*.pyx"))
    if not sources:
        return []
    from Cython.Build import cythonize

    debug = os.environ.get("CQELS_CYTHON_DEBUG") == "1"
    modules = [
        Extension(
            ".".join(source.with_suffix("").parts),
            [str(source)],
            language="c++",
            extra_compile_args=["-std=c++17", "-O0" if debug else "-O2"],
        )
        for source in sources
    ]
    return cythonize(
        modules,
        language_level=3,
        annotate=os.environ.get("CQELS_CYTHON_ANNOTATE") == "1",
        compiler_directives={"boundscheck": debug, "wraparound": debug, "profile": os.environ.get("CQELS_CYTHON_PROFILE") == "1"},
    )


setup(ext_modules=extensions())
