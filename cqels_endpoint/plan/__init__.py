"""The physical plan of a continuous query: compiled once from the optimised algebra.

``compile_plan`` chooses an operator per algebra node (``plan.nodes``), ``plan.caches`` computes
the static caches with pyoxigraph, ``plan.explain`` prints the plan with live operator counters.
"""

from cqels_endpoint.plan.compile import compile_plan
from cqels_endpoint.plan.explain import explain_plan
from cqels_endpoint.plan.nodes import PhysicalPlan

__all__ = ["PhysicalPlan", "compile_plan", "explain_plan"]
