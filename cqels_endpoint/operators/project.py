"""Projection: keep (and reorder) some columns; lineage passes through. The compiled ``_project``
or, with ``CQELS_PURE_PYTHON=1``, the twin of ``reference/project.py``."""

from cqels_endpoint.operators import use_pure_python

if use_pure_python():
    from cqels_endpoint.operators.reference.project import Project

    COMPILED = False
else:
    try:
        from cqels_endpoint.operators._project import Project
    except ImportError as error:
        msg = (
            "the compiled projection is not built: run `pip install -e .` (or `python setup.py "
            "build_ext --inplace`) in the checkout, or set CQELS_PURE_PYTHON=1 for the pure-Python twins"
        )
        raise ImportError(msg) from error

    COMPILED = True

__all__ = ["COMPILED", "Project"]
