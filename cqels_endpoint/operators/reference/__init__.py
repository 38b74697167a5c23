"""Pure-Python twins of the compiled operators (``operators/__init__`` takes them under
``CQELS_PURE_PYTHON=1``), and of the path window, which the property tests use as its oracle."""
