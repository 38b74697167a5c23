"""Compiled or pure Python: the one switch for every Cython module of the package.

The hot parts of the engine are compiled with Cython (``runtime/_encoding.pyx``, the operators'
``_*.pyx``); each has a pure-Python twin giving the same results. ``CQELS_PURE_PYTHON=1`` makes
the package use the twins everywhere, so that it runs (and its twins are tested) without a build.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType


def use_pure_python() -> bool:
    """True when ``CQELS_PURE_PYTHON=1`` asks for the pure-Python twins."""
    return os.environ.get("CQELS_PURE_PYTHON") == "1"


def compiled_module(name: str, what: str) -> ModuleType | None:
    """The Cython module ``name``, or None under ``CQELS_PURE_PYTHON=1`` (the caller then takes its twin).

    A missing build is an ImportError that says how to build it, naming ``what`` it holds.
    """
    if use_pure_python():
        return None
    try:
        return importlib.import_module(name)
    except ImportError as error:
        msg = (
            f"the compiled {what} is not built: run `pip install -e .` (or `python setup.py "
            "build_ext --inplace`) in the checkout, or set CQELS_PURE_PYTHON=1 for the pure-Python twins"
        )
        raise ImportError(msg) from error
