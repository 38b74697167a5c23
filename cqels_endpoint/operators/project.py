"""Projection: keep (and reorder) some columns; lineage passes through. The compiled ``_project``
or, with ``CQELS_PURE_PYTHON=1``, the twin of ``reference/project.py``."""

from cqels_endpoint.operators import compiled_module

_compiled = compiled_module("cqels_endpoint.operators._project", "projection")
if _compiled is None:
    from cqels_endpoint.operators.reference.project import Project
else:
    Project = _compiled.Project
COMPILED = _compiled is not None

__all__ = ["COMPILED", "Project"]
