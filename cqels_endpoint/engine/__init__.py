"""The continuous engine: registers queries, owns time and windows, and turns Γ into emissions.

``core.Engine`` is the façade; ``continuous.ContinuousQuery`` a registered query and
``emission.Emission`` what it emits; ``evaluator`` the protocol of what computes Γ —
``incremental`` (the operator graph) or ``recompute`` (re-evaluation, the oracle); ``instances``
the plan the instances of a template share; ``registry`` the stored queries of a server.
"""

from cqels_endpoint.engine.continuous import ContinuousQuery
from cqels_endpoint.engine.core import Engine
from cqels_endpoint.engine.emission import Emission, Row, Term
from cqels_endpoint.engine.evaluator import Evaluator, Mode
from cqels_endpoint.errors import UnknownQueryError
from cqels_endpoint.query.kinds import R2S, QueryForm
from cqels_endpoint.runtime.limits import LimitExceeded, Limits

__all__ = [
    "R2S",
    "ContinuousQuery",
    "Emission",
    "Engine",
    "Evaluator",
    "LimitExceeded",
    "Limits",
    "Mode",
    "QueryForm",
    "Row",
    "Term",
    "UnknownQueryError",
]
