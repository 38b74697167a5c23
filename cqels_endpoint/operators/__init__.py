"""Physical operators of the continuous engine (compiled with Cython, pure-Python twins in reference/)."""

import importlib
import os
from types import ModuleType


def use_pure_python() -> bool:
    """True when ``CQELS_PURE_PYTHON=1`` asks the thin modules for the reference twins."""
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
