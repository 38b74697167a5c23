"""Physical operators of the continuous engine (compiled with Cython, pure-Python twins in reference/)."""

import os


def use_pure_python() -> bool:
    """True when ``CQELS_PURE_PYTHON=1`` asks the thin modules for the reference twins."""
    return os.environ.get("CQELS_PURE_PYTHON") == "1"
