"""``GET /metrics``: the endpoint's state in the Prometheus text exposition format 0.0.4.

Each family group is one function from the ``Endpoint`` to a list of ``Family`` (its ``# HELP`` and
``# TYPE`` lines and its samples), listed in ``GROUPS``; a new group (streams, queries) is one more
function there. Values are read when the request comes, so a scrape sees the current state.

>>> print(render([Family("cqels_demo", "gauge", "A demo.", [({"q": 'a"b'}, 2)])]), end="")
# HELP cqels_demo A demo.
# TYPE cqels_demo gauge
cqels_demo{q="a\\"b"} 2
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from flask import Blueprint, Response

from cqels_endpoint.http.context import Endpoint, endpoint

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

blueprint = Blueprint("metrics", __name__)

Labels = dict[str, str]


@dataclass(frozen=True)
class Family:
    """One metric family: ``kind`` is ``gauge`` or ``counter`` (a counter's name ends in ``_total``)."""

    name: str
    kind: str
    help: str
    samples: list[tuple[Labels, float]] = field(default_factory=list)


# --------------------------------------------------------------------------- the groups


def store_families(context: Endpoint) -> list[Family]:
    store = context.store
    return [
        Family("cqels_store_version", "gauge", "Version of the static store, bumped by every write that changed it.",
               [({}, store.version)]),
        Family("cqels_store_quads", "gauge", "Quads in the static store, all graphs.", [({}, len(store))]),
    ]


# (name, kind, help, the value of one cache_stats() entry or None for no sample)
_CACHE_FAMILIES: tuple[tuple[str, str, str, Callable[[dict], float | None]], ...] = (
    ("cqels_cache_rows", "gauge", "Rows (mappings) in the static cache now served.", lambda s: s["rows"]),
    ("cqels_cache_version", "gauge", "Store version the static cache now served was built from.",
     lambda s: s["version"]),
    ("cqels_cache_last_rebuild_timestamp_seconds", "gauge",
     "When the static cache now served was built, in seconds since the epoch.",
     lambda s: None if s["built_at_ms"] is None else s["built_at_ms"] / 1000),
    ("cqels_cache_last_rebuild_duration_seconds", "gauge", "How long the build of the static cache now served took.",
     lambda s: None if s["built_at_ms"] is None else s["duration_ms"] / 1000),
    ("cqels_cache_rebuilds_total", "counter",
     "Rebuilds of the static cache swapped in after a change (the build at registration not counted).",
     lambda s: s["rebuilds"]),
    ("cqels_cache_rebuild_failures_total", "counter",
     "Rebuilds of the static cache that failed (the previous cache kept serving).", lambda s: s["failures"]),
    ("cqels_cache_stale", "gauge", "1 while the static cache is older than a change of the graphs it reads.",
     lambda s: 1 if s["stale"] else 0),
)


def cache_families(context: Endpoint) -> list[Family]:
    """One sample per static cache of every registered query, labelled by query, cache and the
    engine that built the cache now served."""
    stats = context.engine.cache_stats()
    families = []
    for name, kind, help_text, value in _CACHE_FAMILIES:
        samples = []
        for entry in stats:
            number = value(entry)
            if number is not None:
                labels = {"query": entry["query"], "cache": entry["cache"], "engine": entry["engine"]}
                samples.append((labels, number))
        families.append(Family(name, kind, help_text, samples))
    return families


GROUPS: tuple[Callable[[Endpoint], list[Family]], ...] = (store_families, cache_families)


# --------------------------------------------------------------------------- exposition


@blueprint.get("/metrics")
def metrics() -> Response:
    context = endpoint()
    families = [family for group in GROUPS for family in group(context)]
    return Response(render(families), content_type=CONTENT_TYPE)


def render(families: Iterable[Family]) -> str:
    """The text exposition of ``families``: HELP and TYPE lines, then one line per sample."""
    lines = []
    for family in families:
        lines.append(f"# HELP {family.name} {_escape_help(family.help)}")
        lines.append(f"# TYPE {family.name} {family.kind}")
        for labels, value in family.samples:
            lines.append(f"{family.name}{_labels(labels)} {_number(value)}")
    return "\n".join(lines) + "\n"


def _labels(labels: Labels) -> str:
    if not labels:
        return ""
    return "{" + ",".join(f'{name}="{_escape_label(value)}"' for name, value in labels.items()) + "}"


def _escape_label(value: str) -> str:
    # The format's three escapes in label values; anything else (UTF-8 included) stays as it is.
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _escape_help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def _number(value: float) -> str:
    if isinstance(value, bool):
        return str(int(value))
    if isinstance(value, int):
        return str(value)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(float(value))
