"""``cqels load --spark``: the Spark bulk pipeline loads what the normal load loads, or nothing.

The oracle is ``StaticStore.load`` (pyoxigraph's own parser and loader) on the same file into a
store with the same prior content; the stores are compared as canonicalised datasets, since both
loads give the file's blank nodes fresh labels. The files span several text partitions and several
sorted runs, so a blank node label used at both ends of a file must still be one node.
"""

from __future__ import annotations

from pathlib import Path

import pyoxigraph as ox
import pytest

from cqels_endpoint.cli import EXIT_BAD_INPUT, main
from cqels_endpoint.errors import RdfSyntaxError, UnsupportedMediaType
from cqels_endpoint.oxigraph.requests import open_store
from cqels_endpoint.spark.bulk_load import line_format, spark_load
from static_store import StaticStore

EX = "http://example.org/"
# Already in both stores before the load: the file's _:b0 must not become this node.
PRIOR = f"INSERT DATA {{ _:b0 <{EX}knows> _:b1 . GRAPH <{EX}g1> {{ _:b0 <{EX}p> 1 }} }}"


def generated_lines(count: int, quads: bool) -> list[str]:
    """Lines of an N-Triples/N-Quads file: IRIs, literals of every kind, blank nodes reused far
    apart, duplicates, comments and blank lines."""
    objects = [
        '"plain"', '"tab\\tand \\"quote\\""', '"chat"@fr', '"42"^^<http://www.w3.org/2001/XMLSchema#integer>',
        '"\\u00E9t\\u00E9"', f"<{EX}o>", "_:b0", "_:shared",
    ]
    lines = ["# generated for the Spark load test", ""]
    for i in range(count):
        subject = f"_:b{i % 40}" if i % 3 == 0 else f"<{EX}s{i % 500}>"
        graph = ""
        if quads and i % 4:
            graph = f" _:g{i % 2}" if i % 17 == 0 else f" <{EX}g{i % 4}>"
        lines.append(f"{subject} <{EX}p{i % 9}> {objects[i % len(objects)]}{graph} .")
        if i % 250 == 0:
            lines.append(lines[-1])  # a duplicate quad
    return lines


def write(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def canonical(store: StaticStore) -> ox.Dataset:
    dataset = ox.Dataset(list(store))
    dataset.canonicalize(ox.CanonicalizationAlgorithm.UNSTABLE)
    return dataset


def changes(event) -> list[tuple]:
    """The event's changes, blank-node graph names (fresh in each load) reduced to ``_:``."""
    named = [("_:" if c.graph and c.graph.startswith("_:") else c.graph or "", c.added, c.removed) for c in event.changes]
    return sorted(named)


def two_stores() -> tuple[StaticStore, StaticStore]:
    stores = open_store(), open_store()
    for store in stores:
        store.update(PRIOR)
    return stores


@pytest.mark.parametrize(("suffix", "graph"), [(".nq", None), (".nt", None), (".nt", f"{EX}into"), (".nq", f"{EX}into")])
def test_the_spark_load_equals_the_normal_load(spark, tmp_path: Path, suffix: str, graph: str | None) -> None:
    source = write(tmp_path / f"data{suffix}", generated_lines(3000, quads=suffix == ".nq"))
    on_spark, oracle = two_stores()
    events = []
    on_spark.subscribe(events.append)
    event = spark_load(on_spark, source, spark, graph=graph, run_quads=700)
    expected = oracle.load(source, graph=graph)
    assert events == [event]  # one load, one change event
    assert changes(event) == changes(expected)
    assert on_spark.version == oracle.version
    assert len(on_spark) == len(oracle)
    assert canonical(on_spark) == canonical(oracle)
    # The file's _:b0 is a node of its own: the prior _:b0 still has exactly its two quads.
    prior = next(iter(on_spark.query(f"SELECT ?b WHERE {{ ?b <{EX}knows> ?x }}")))["b"]
    assert len(list(on_spark._ox.quads_for_pattern(prior, None, None, None))) == 2


def test_several_partitions_and_runs_are_used(spark, tmp_path: Path) -> None:
    # What the equality test above relies on to be a test of partition- and run-crossing blank nodes.
    source = write(tmp_path / "data.nq", generated_lines(3000, quads=True))
    assert spark.sparkContext.textFile(source.as_uri(), minPartitions=spark.sparkContext.defaultParallelism) \
        .getNumPartitions() >= 2
    store = open_store()
    spark_load(store, source, spark, run_quads=700)
    blank_subjects = {q.subject for q in store if isinstance(q.subject, ox.BlankNode)}
    assert len(blank_subjects) == 40  # _:b0 … _:b39, each one node across the whole file


def test_a_malformed_line_loads_nothing_and_names_the_first_bad_line(spark, tmp_path: Path) -> None:
    lines = generated_lines(3000, quads=True)
    first, second = 2600, 700  # 1-based line numbers; the later one is reported second
    lines[second - 1] = f"<{EX}s> <{EX}p> <{EX}o> <{EX}g> <{EX}h> ."
    lines[first - 1] = f"<{EX}s> <relative> <{EX}o> ."
    source = write(tmp_path / "bad.nq", lines)
    store = open_store()
    store.update(PRIOR)
    before, version, events = canonical(store), store.version, []
    store.subscribe(events.append)
    with pytest.raises(RdfSyntaxError) as raised:
        spark_load(store, source, spark)
    assert raised.value.line == second
    assert f"line {second}" in str(raised.value) and "nothing was loaded" in str(raised.value)
    with pytest.raises(RdfSyntaxError) as normal:
        open_store().load(source)
    assert normal.value.line == second  # the same line as the normal load names
    assert (store.version, events, canonical(store)) == (version, [], before)

    lines[second - 1] = lines[second]
    source = write(tmp_path / "bad.nq", lines)
    with pytest.raises(RdfSyntaxError) as raised:
        spark_load(store, source, spark)
    with pytest.raises(RdfSyntaxError) as normal:
        open_store().load(source)
    assert (raised.value.line, raised.value.column) == (normal.value.line, normal.value.column)
    assert (raised.value.line, raised.value.column) == (first, len(f"<{EX}s> ") + 1)
    assert "No scheme found in an absolute IRI" in str(raised.value)
    assert store.version == version


@pytest.mark.parametrize("name", ["data.ttl", "data.trig", "data.rdf"])
def test_syntaxes_that_do_not_split_by_line_are_refused(tmp_path: Path, name: str) -> None:
    source = tmp_path / name
    source.write_text("", encoding="utf-8")
    with pytest.raises(UnsupportedMediaType, match="N-Triples and N-Quads only"):
        line_format(source)


def test_the_cli_refuses_turtle_with_spark_before_starting_spark(tmp_path: Path, capsys) -> None:
    source = tmp_path / "data.ttl"
    source.write_text(f"<{EX}s> <{EX}p> <{EX}o> .\n", encoding="utf-8")
    code = main(["load", "--spark", "--quiet", "--data-dir", str(tmp_path / "store"), str(source)])
    assert code == EXIT_BAD_INPUT
    assert "N-Triples and N-Quads only" in capsys.readouterr().err
