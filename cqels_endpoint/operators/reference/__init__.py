"""Pure-Python reference twins of the compiled operators; CQELS_PURE_PYTHON=1 selects them."""
