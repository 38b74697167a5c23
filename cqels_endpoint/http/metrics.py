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
    """One metric family: ``kind`` is ``gauge``, ``counter`` (a counter's name ends in ``_total``) or
    ``histogram``, whose samples are ``(suffix, labels, value)`` — ``_bucket`` with an ``le`` label,
    ``_sum``, ``_count`` — where the others' are ``(labels, value)``."""

    name: str
    kind: str
    help: str
    samples: list[tuple[Labels, float]] | list[tuple[str, Labels, float]] = field(default_factory=list)


# --------------------------------------------------------------------------- the groups


def store_families(context: Endpoint) -> list[Family]:
    store = context.store
    return [
        Family("cqels_store_version", "gauge", "Version of the static store, bumped by every write that changed it.",
               [({}, store.version)]),
        Family("cqels_store_quads", "gauge", "Quads in the static store, all graphs.", [({}, store.quad_count())]),
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


def stream_families(context: Endpoint) -> list[Family]:
    """Per stream IRI: events accepted, rejections by reason, latest timestamp and watermark."""
    stats = context.engine.stream_stats()
    rejected = [({"stream": s["stream"], "reason": reason}, s[reason]) for reason in ("late", "future", "malformed") for s in stats]
    return [
        Family("cqels_stream_events_ingested_total", "counter", "Events accepted on the stream.",
               [({"stream": s["stream"]}, s["events"]) for s in stats]),
        Family("cqels_stream_events_rejected_total", "counter",
               "Rejections on the stream: reason=late counts late events, reason=future events further ahead of "
               "the server clock than --max-future-ms, reason=malformed pushes whose body or timestamps did not "
               "parse (each rejected whole).", rejected),
        Family("cqels_stream_latest_timestamp_seconds", "gauge", "Latest event timestamp of the stream.",
               [({"stream": s["stream"]}, s["latest"] / 1000) for s in stats if s["latest"] is not None]),
        Family("cqels_stream_watermark_seconds", "gauge",
               "Watermark of the stream (latest timestamp - lateness): older events are rejected.",
               [({"stream": s["stream"]}, s["watermark"] / 1000) for s in stats if s["watermark"] is not None]),
    ]


def subscriber_families(context: Endpoint) -> list[Family]:
    """Clients of ``/queries/{name}/results`` (and ``/ws``) per query, the streams the server ended, by
    reason (``slow``: the client's queue was full; ``unregistered``: the query went away;
    ``shutdown``), and the emissions the clients' overflow policies discarded, by policy."""
    subscribers, disconnects, discarded = context.subscriptions.stats()
    return [
        Family("cqels_query_subscribers", "gauge", "Open results streams of the query.",
               [({"query": name}, count) for name, count in sorted(subscribers.items())]),
        Family("cqels_query_subscriber_disconnects_total", "counter",
               "Results streams of the query the server ended, by reason.",
               [({"query": name, "reason": reason}, count) for (name, reason), count in sorted(disconnects.items())]),
        Family("cqels_query_subscriber_dropped_emissions_total", "counter",
               "Emissions of the query not delivered to a subscriber (a results WebSocket, a sink) whose queue was "
               "full, by its overflow policy (drop-oldest: the oldest queued one discarded; drop-newest: the new one).",
               [({"query": name, "policy": policy}, count) for (name, policy), count in sorted(discarded.items())]),
    ]


def query_families(context: Endpoint) -> list[Family]:
    """Per registered continuous query (stored queries and their instances alike): evaluations,
    emissions and the latency of each event (and advance) it handled; the window states and static
    cache builds its instances share."""
    engine = context.engine
    running = sorted(list(engine.queries.values()), key=lambda q: q.name)
    latency = []
    for query in running:
        labels = {"query": query.name}
        histogram = query.latency
        for bound, count in histogram.cumulative():
            latency.append(("_bucket", labels | {"le": "+Inf" if math.isinf(bound) else repr(bound)}, count))
        latency.append(("_sum", labels, histogram.sum))
        latency.append(("_count", labels, histogram.count))
    sharing = engine.shared_windows.stats()
    plans = engine.plan_sharing()
    builds = engine.caches.build_counts()
    return [
        Family("cqels_query_evaluations_total", "counter", "Evaluations of the continuous query.",
               [({"query": q.name}, q.evaluations) for q in running]),
        Family("cqels_query_emissions_total", "counter", "Emissions of the continuous query.",
               [({"query": q.name}, q.emitted) for q in running]),
        Family("cqels_query_shed_triples_total", "counter",
               "Stream triples the query's full windows did not take (max_window_triples, limit action shed).",
               [({"query": q.name}, q.shed) for q in running]),
        Family("cqels_queries_failed", "gauge",
               "Continuous queries the engine stopped because they failed (past their limits), until deleted.",
               [({}, len(engine.failed))]),
        Family("cqels_query_event_latency_seconds", "histogram",
               "Time the engine spent on one event (or advance) for the query: windows and evaluation.", latency),
        Family("cqels_window_states", "gauge",
               "Window states kept; state=shared counts them once however many queries read them (readers).",
               [({"state": "shared"}, sharing["windows"]), ({"state": "readers"}, sharing["readers"])]),
        Family("cqels_shared_plans", "gauge",
               "Operator graphs evaluating the instances of templates (kind=plans), and those instances "
               "(kind=instances).",
               [({"kind": "plans"}, plans["plans"]), ({"kind": "instances"}, plans["instances"])]),
        Family("cqels_cache_builds_total", "counter",
               "Static cache builds: outcome=built ran the cache engine, outcome=reused served an identical "
               "cache's build of the same store version.",
               [({"outcome": "built"}, builds["builds"]), ({"outcome": "reused"}, builds["reused"])]),
    ]


def connector_families(context: Endpoint) -> list[Family]:
    sources = [source.status() for source in context.connectors.listed("source")]
    sinks = [sink.status() for sink in context.connectors.listed("sink")]
    states = [({"role": role, "name": status["name"], "state": status["state"]}, 1)
              for role, listed in (("source", sources), ("sink", sinks)) for status in listed]
    return [
        Family("cqels_connector_state", "gauge", "1 for the state each source and sink is in now.", states),
        Family("cqels_connector_connections_total", "counter", "Times a source or sink connected to its peer.",
               [({"role": role, "name": s["name"]}, s["connections"]) for role, listed in (("source", sources), ("sink", sinks))
                for s in listed]),
        Family("cqels_source_messages_total", "counter", "Messages a source received.",
               [({"source": s["name"]}, s["received"]) for s in sources]),
        Family("cqels_source_events_total", "counter", "Events a source pushed that its stream accepted.",
               [({"source": s["name"]}, s["accepted"]) for s in sources]),
        Family("cqels_source_rejected_total", "counter", "Messages a source skipped, by reason.",
               [({"source": s["name"], "reason": reason}, count) for s in sources for reason, count in sorted(s["rejected"].items())]),
        Family("cqels_sink_published_total", "counter", "Emissions a sink published.",
               [({"sink": s["name"]}, s["published"]) for s in sinks]),
        Family("cqels_sink_failed_total", "counter", "Emissions a sink failed to publish.",
               [({"sink": s["name"]}, s["failed"]) for s in sinks]),
        Family("cqels_sink_dropped_total", "counter", "Emissions a sink's full buffer dropped.",
               [({"sink": s["name"]}, s["dropped"]) for s in sinks]),
    ]


GROUPS: tuple[Callable[[Endpoint], list[Family]], ...] = (
    store_families, cache_families, stream_families, subscriber_families, query_families, connector_families,
)


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
        for sample in family.samples:
            suffix, labels, value = sample if family.kind == "histogram" else ("", *sample)
            lines.append(f"{family.name}{suffix}{_labels(labels)} {_number(value)}")
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
