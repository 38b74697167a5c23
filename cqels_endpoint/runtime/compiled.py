"""Compiled or pure Python: the one switch for every Cython module of the package.

The hot parts of the engine are compiled with Cython (``runtime/_encoding.pyx``, the operators'
``_*.pyx``); each has a pure-Python twin giving the same results. ``CQELS_PURE_PYTHON=1`` makes
the package use the twins everywhere, so that it runs (and its twins are tested) without a build.
A module that has twins imports its compiled names inside ``compiled_imports`` unless
``use_pure_python()``, and the twins otherwise.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager


def use_pure_python() -> bool:
    """True when ``CQELS_PURE_PYTHON=1`` asks for the pure-Python twins."""
    return os.environ.get("CQELS_PURE_PYTHON") == "1"


@contextmanager
def compiled_imports(what: str) -> Iterator[None]:
    """Around the imports of compiled modules: a missing build becomes an ImportError that says how
    to build it, naming ``what`` the modules hold."""
    try:
        yield
    except ImportError as error:
        msg = (
            f"the Cython build of the {what} is missing: run `pip install -e .` (or `python setup.py "
            "build_ext --inplace`) in the checkout, or set CQELS_PURE_PYTHON=1 for the pure-Python twins"
        )
        raise ImportError(msg) from error
