"""Builds the Cython extensions only; everything else is in pyproject.toml.

Every ``cqels_endpoint/**/_*.pyx`` becomes an extension module of the same dotted name.
``CQELS_CYTHON_ANNOTATE=1`` writes Cython's HTML annotation next to each module;
``CQELS_CYTHON_DEBUG=1`` builds with assertions and without optimisation;
``CQELS_CYTHON_PROFILE=1`` makes compiled functions visible to cProfile (``benchmarks/profile_q1.py``).

Cython and the C++ compiler run on every core. An editable install (``pip install -e .``) compiles into
``build/``, as ``setup.py build_ext --inplace`` does, instead of a temporary folder it throws away: a wheel
built afterwards from the same tree (``tests/test_packaging.py``) finds the extensions up to date there
(setuptools' own check, outputs newer than their sources) and links them instead of compiling them again.
"""

import os
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build import build
from setuptools.command.build_ext import build_ext


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
        nthreads=os.cpu_count() or 0,
        language_level=3,
        annotate=os.environ.get("CQELS_CYTHON_ANNOTATE") == "1",
        compiler_directives={"boundscheck": debug, "wraparound": debug, "profile": os.environ.get("CQELS_CYTHON_PROFILE") == "1"},
    )


class BuildExt(build_ext):
    def finalize_options(self):
        # editable_wheel points build_lib and build_temp at temporary folders; take the ones a plain build uses.
        # Not in strict editable mode: its link tree takes the extensions from that temporary build_lib only.
        if self.editable_mode and self.build_lib is None and self._editable_mode_name() != "strict":
            regular = build(self.distribution)
            regular.ensure_finalized()
            self.build_lib, self.build_temp = regular.build_platlib, regular.build_temp
        super().finalize_options()

    def _editable_mode_name(self):
        return (self.distribution.get_command_obj("editable_wheel").mode or "").lower()


setup(ext_modules=extensions(), cmdclass={"build_ext": BuildExt}, options={"build_ext": {"parallel": True}})
