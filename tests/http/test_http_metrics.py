"""``GET /metrics``: the Prometheus text exposition (format 0.0.4) of the store and the static caches.

The exposition is read back with a strict parser of the format written here from its rules (HELP
and TYPE once per family and before its samples, label values with exactly three escapes, one
sample per name and label set), and every value is checked against ``Engine.cache_stats()``.
"""

from __future__ import annotations

import re

import pytest
from paths import ROOT

from cqels_endpoint.config import ServerConfig
from cqels_endpoint.engine import Engine
from cqels_endpoint.http.app import create_app
from cqels_endpoint.http.context import endpoint
from cqels_endpoint.oxigraph.requests import open_store

FLOORPLAN = ROOT / "examples" / "data" / "floorplan.trig"
Q2 = (ROOT / "examples" / "queries" / "conference-q2-reachable.rq").read_text()
LV = "http://deri.org/floorplan/"

CACHE_FAMILIES = {
    "cqels_cache_rows": "gauge",
    "cqels_cache_version": "gauge",
    "cqels_cache_last_rebuild_timestamp_seconds": "gauge",
    "cqels_cache_last_rebuild_duration_seconds": "gauge",
    "cqels_cache_rebuilds_total": "counter",
    "cqels_cache_rebuild_failures_total": "counter",
    "cqels_cache_stale": "gauge",
}


# --------------------------------------------------------------------------- a strict 0.0.4 parser

_NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
_LABEL_NAME = r"[a-zA-Z_][a-zA-Z0-9_]*"
_VALUE = r"[+-]?(?:Inf|NaN|[0-9]+(?:\.[0-9]*)?(?:[eE][+-]?[0-9]+)?|\.[0-9]+(?:[eE][+-]?[0-9]+)?)"


class ExpositionError(AssertionError):
    pass


def parse_exposition(text: str) -> dict[str, dict]:
    """``{family: {"type", "help", "samples": {frozenset(labels.items()): value}}}``; raises
    ``ExpositionError`` for anything the text format does not allow."""
    if not text.endswith("\n"):
        raise ExpositionError("the exposition must end with a line feed")
    families: dict[str, dict] = {}
    for number, line in enumerate(text[:-1].split("\n"), 1):
        if line.startswith("# HELP ") or line.startswith("# TYPE "):
            keyword, rest = line[2:6], line[7:]
            name, _, value = rest.partition(" ")
            if not re.fullmatch(_NAME, name):
                raise ExpositionError(f"line {number}: bad metric name {name!r}")
            family = families.setdefault(name, {"type": None, "help": None, "samples": {}})
            key = keyword.lower()
            if family[key] is not None:
                raise ExpositionError(f"line {number}: a second {keyword} for {name}")
            if family["samples"]:
                raise ExpositionError(f"line {number}: {keyword} of {name} after its samples")
            if key == "type" and value not in ("counter", "gauge", "histogram", "summary", "untyped"):
                raise ExpositionError(f"line {number}: unknown type {value!r}")
            family[key] = _unescape(value) if key == "help" else value
        elif line.startswith("#") or not line.strip():
            raise ExpositionError(f"line {number}: comments and blank lines are not written by this exporter")
        else:
            name, labels, value = _sample(line, number)
            family = families.get(name)
            if family is None:  # a histogram's samples carry a suffix on the family's name
                base, _, suffix = name.rpartition("_")
                family = families.get(base) if suffix in ("bucket", "sum", "count") else None
                if family is not None and family["type"] != "histogram":
                    family = None
                labels = labels | {"__sample__": suffix}
            if family is None or family["type"] is None:
                raise ExpositionError(f"line {number}: sample of {name} without a TYPE line before it")
            key = frozenset(labels.items())
            if key in family["samples"]:
                raise ExpositionError(f"line {number}: a second sample of {name} with labels {labels}")
            family["samples"][key] = value
    return families


def _sample(line: str, number: int) -> tuple[str, dict[str, str], float]:
    found = re.match(_NAME, line)
    if found is None:
        raise ExpositionError(f"line {number}: no metric name in {line!r}")
    name, position, labels = found.group(), found.end(), {}
    if position < len(line) and line[position] == "{":
        position += 1
        while line[position] != "}":
            label = re.compile(_LABEL_NAME + '="').match(line, position)
            if label is None:
                raise ExpositionError(f"line {number}: bad label at column {position + 1}")
            label_name = label.group()[:-2]
            position = label.end()
            raw = []
            while line[position] != '"':
                if line[position] == "\\":
                    position += 1
                    if line[position] not in '\\"n':
                        raise ExpositionError(f"line {number}: bad escape \\{line[position]}")
                    raw.append("\n" if line[position] == "n" else line[position])
                else:
                    raw.append(line[position])
                position += 1
            if label_name in labels:
                raise ExpositionError(f"line {number}: label {label_name} twice")
            labels[label_name] = "".join(raw)
            position += 1
            if line[position] == ",":
                position += 1
        position += 1
    value = line[position:]
    if not value.startswith(" ") or not re.fullmatch(_VALUE, value[1:]):
        raise ExpositionError(f"line {number}: bad value {value!r} (timestamps are not written)")
    return name, labels, float(value[1:])


def _unescape(text: str) -> str:
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "\\": "\\"}.get(m.group(1), "\\" + m.group(1)), text)


def test_the_parser_rejects_what_the_format_forbids() -> None:
    good = '# HELP m A m.\n# TYPE m gauge\nm{a="x\\"y\\\\z\\n"} 1.5\n'
    assert parse_exposition(good)["m"]["samples"] == {frozenset({("a", 'x"y\\z\n')}): 1.5}
    for bad in (
        "m 1\n",  # no TYPE
        "# TYPE m gauge\nm 1",  # no final line feed
        "# TYPE m gauge\nm 1\n# HELP m late\n",  # HELP after the samples
        "# TYPE m gauge\n# TYPE m counter\n",
        '# TYPE m gauge\nm{a="\\t"} 1\n',  # not one of the three escapes
        '# TYPE m gauge\nm{a="x"} 1\nm{a="x"} 2\n',  # the same series twice
        "# TYPE m gauge\nm one\n",
    ):
        with pytest.raises(ExpositionError):
            parse_exposition(bad)


# --------------------------------------------------------------------------- the endpoint


@pytest.fixture
def served():
    """An app over an in-memory floor plan with its own local-engine Engine, and that engine."""
    store = open_store()
    store.load(FLOORPLAN)
    engine = Engine(store, cache_engine="local", rebuild_debounce_ms=0)
    app = create_app(store, ServerConfig(memory=True, cache_engine="local"), engine=engine)
    try:
        yield app.test_client(), engine, store
    finally:
        engine.close()
        store.close()


def scrape(client) -> dict[str, dict]:
    response = client.get("/metrics")
    assert response.status_code == 200
    assert response.headers["Content-Type"] == "text/plain; version=0.0.4; charset=utf-8"
    families = parse_exposition(response.get_data(as_text=True))
    for name, family in families.items():
        assert family["help"], name
        if family["type"] == "counter":
            assert name.endswith("_total"), name
    return families


def expected_samples(stats: list[dict]) -> dict[str, dict[frozenset, float]]:
    """What each cache family must hold, computed from ``cache_stats()`` independently of metrics.py."""
    expected: dict[str, dict[frozenset, float]] = {name: {} for name in CACHE_FAMILIES}
    for entry in stats:
        key = frozenset({"query": entry["query"], "cache": entry["cache"], "engine": entry["engine"]}.items())
        expected["cqels_cache_rows"][key] = entry["rows"]
        expected["cqels_cache_version"][key] = entry["version"]
        expected["cqels_cache_last_rebuild_timestamp_seconds"][key] = entry["built_at_ms"] / 1000
        expected["cqels_cache_last_rebuild_duration_seconds"][key] = entry["duration_ms"] / 1000
        expected["cqels_cache_rebuilds_total"][key] = entry["rebuilds"]
        expected["cqels_cache_rebuild_failures_total"][key] = entry["failures"]
        expected["cqels_cache_stale"][key] = 1 if entry["stale"] else 0
    return expected


def assert_caches_exposed(families: dict[str, dict], stats: list[dict]) -> None:
    for name, samples in expected_samples(stats).items():
        assert families[name]["type"] == CACHE_FAMILIES[name]
        assert families[name]["samples"] == pytest.approx(samples), name


def test_no_query_no_cache_samples_but_the_store(served) -> None:
    client, _, store = served
    families = scrape(client)
    assert families["cqels_store_quads"]["samples"] == {frozenset(): len(store)}
    assert families["cqels_store_version"]["samples"] == {frozenset(): store.version}
    for name in CACHE_FAMILIES:
        assert families[name]["samples"] == {}


def test_cache_metrics_follow_a_rebuild(served) -> None:
    client, engine, store = served
    # A name with every character the format escapes, to check the label values round-trip.
    name = 'reach "all"\\rooms\nnow'
    engine.register(Q2, name=name)
    stats = engine.cache_stats()
    assert [entry["query"] for entry in stats] == [name]
    before = stats[0]
    assert before["rows"] > 0 and before["engine"] == "local" and before["rebuilds"] == 0
    families = scrape(client)
    assert_caches_exposed(families, stats)
    assert families["cqels_store_version"]["samples"] == {frozenset(): store.version}

    store.update(f"INSERT DATA {{ GRAPH <{LV}> {{ <{LV}attic> <{LV}connected> <{LV}kitchen> }} }}")
    assert engine.wait_for_caches(30)
    stats = engine.cache_stats()
    after = stats[0]
    assert after["rows"] == before["rows"] + 1
    assert after["rebuilds"] == 1 and after["version"] == store.version and not after["stale"]
    families = scrape(client)
    assert_caches_exposed(families, stats)
    key = frozenset({"query": name, "cache": after["cache"], "engine": "local"}.items())
    assert families["cqels_cache_rows"]["samples"][key] == before["rows"] + 1
    assert families["cqels_cache_rebuilds_total"]["samples"][key] == 1
    assert families["cqels_store_quads"]["samples"] == {frozenset(): len(store)}
    assert families["cqels_store_version"]["samples"] == {frozenset(): store.version}


# --------------------------------------------------------------------------- the app's own engine


def test_the_app_builds_its_engine_from_the_config() -> None:
    with open_store() as store:
        app = create_app(store, ServerConfig(memory=True, cache_engine="local", rebuild_debounce_ms=5))
        context = endpoint(app)
        try:
            assert context.engine.store is store and context.spark is None
            context.engine.register(Q2, name="q2")
            assert [entry["engine"] for entry in context.engine.cache_stats()] == ["local"]
            assert "cqels_cache_rows{" in app.test_client().get("/metrics").get_data(as_text=True)
        finally:
            context.close()
        assert context.engine.queries == {}


def test_a_spark_app_starts_no_session_until_the_server_starts() -> None:
    # ServerConfig's default cache engine is Spark; making the app (as every HTTP test does) must not
    # start a JVM: the holder exists, and only Endpoint.start() would begin building the session.
    with open_store() as store:
        app = create_app(store, ServerConfig(memory=True, spark_master="local[1]"))
        context = endpoint(app)
        assert ServerConfig().cache_engine == "spark"
        assert context.spark is not None and context.spark.master == "local[1]"
        assert context.spark._thread is None and not context.spark._ready.is_set()
        context.close()


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"cache_engine": "hadoop"}, "unknown cache engine 'hadoop'"),
        ({"spark_master": " "}, "Spark master URL is empty"),
        ({"rebuild_debounce_ms": -1}, "non-negative"),
        ({"spark_parquet_rows": -1}, "spark_parquet_rows must be an integer of at least 0, not -1"),
        ({"spark_parquet_rows": 1.5}, "spark_parquet_rows must be an integer of at least 0, not 1.5"),
        ({"spark_parquet_rows": "100"}, "spark_parquet_rows must be an integer of at least 0, not '100'"),
    ],
)
def test_bad_cache_settings_are_refused(fields: dict, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        ServerConfig(**fields)


def test_serve_flags_and_their_environment_twins(monkeypatch) -> None:
    from cqels_endpoint.cli import build_parser

    args = build_parser().parse_args(["serve"])
    assert (args.cache_engine, args.spark_master, args.rebuild_debounce_ms) == ("spark", None, 200)
    monkeypatch.setenv("CQELS_CACHE_ENGINE", "local")
    monkeypatch.setenv("CQELS_SPARK_MASTER", "spark://h:7077")
    monkeypatch.setenv("CQELS_REBUILD_DEBOUNCE_MS", "50")
    args = build_parser().parse_args(["serve"])
    assert (args.cache_engine, args.spark_master, args.rebuild_debounce_ms) == ("local", "spark://h:7077", 50)
    args = build_parser().parse_args(["serve", "--cache-engine", "spark", "--rebuild-debounce-ms", "7"])
    assert (args.cache_engine, args.rebuild_debounce_ms) == ("spark", 7)
    with pytest.raises(SystemExit):
        build_parser().parse_args(["serve", "--cache-engine", "hadoop"])


def test_the_spark_parquet_rows_flag_and_its_environment_twin(monkeypatch, capsys) -> None:
    from cqels_endpoint.cli import build_parser, main

    assert build_parser().parse_args(["serve"]).spark_parquet_rows == 500_000
    monkeypatch.setenv("CQELS_SPARK_PARQUET_ROWS", "1000")
    assert build_parser().parse_args(["serve"]).spark_parquet_rows == 1000
    assert build_parser().parse_args(["serve", "--spark-parquet-rows", "0"]).spark_parquet_rows == 0  # the flag wins
    # A negative count is refused by ServerConfig before anything starts: a message and exit 2.
    assert main(["serve", "--memory", "--spark-parquet-rows", "-1"]) == 2
    assert "cqels serve: spark_parquet_rows must be an integer of at least 0, not -1" in capsys.readouterr().err
    # Not an integer, from the flag or the environment: argparse's usage error, exit 2.
    for argv, value in ((["serve", "--spark-parquet-rows", "1e6"], "1000"), (["serve"], "lots")):
        monkeypatch.setenv("CQELS_SPARK_PARQUET_ROWS", value)
        with pytest.raises(SystemExit) as stopped:
            build_parser().parse_args(argv)
        assert stopped.value.code == 2
        assert "--spark-parquet-rows: invalid int value" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("memory", "setting", "parquet_rows"), [(False, 1000, 1000), (True, 0, None), (True, None, 500_000)],
)
def test_the_app_gives_its_spark_engine_the_data_dir_and_parquet_rows(tmp_path, memory, setting, parquet_rows) -> None:
    from cqels_endpoint.spark.job import SparkCacheEngine

    settings = {} if setting is None else {"spark_parquet_rows": setting}
    config = ServerConfig(data_dir=tmp_path, memory=memory, **settings)
    with open_store(config.store_path) as store:
        context = endpoint(create_app(store, config))
        try:
            caches = context.engine.caches.engine
            assert isinstance(caches, SparkCacheEngine) and caches.session_holder is context.spark
            # In memory mode nothing goes to the (unused) data directory: the builds take a temporary one.
            assert (caches.data_dir, caches.parquet_rows) == (None if memory else tmp_path, parquet_rows)
            assert context.spark._thread is None  # wiring only: no session started
        finally:
            context.close()


def test_cache_engine_passes_data_dir_and_parquet_rows_to_spark(tmp_path) -> None:
    from cqels_endpoint.spark import cache_engine

    caches = cache_engine("spark", "local[1]", start=False, data_dir=tmp_path, parquet_rows=None)
    assert (caches.data_dir, caches.parquet_rows, caches.session_holder.master) == (tmp_path, None, "local[1]")
    assert cache_engine("local", data_dir=tmp_path, parquet_rows=5).name == "local"  # Spark's settings only
    # Refused before the session would start in the background (start=True).
    with pytest.raises(ValueError, match="parquet_rows must be ≥ 0 or None, not -1"):
        cache_engine("spark", parquet_rows=-1)
