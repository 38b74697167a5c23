"""How a query splits for a Spark job (plan.partitioning), what ``cqels explain`` says about it,
and the mistakes ``cqels spark-job`` refuses before Spark starts."""

from __future__ import annotations

import pytest
from paths import ROOT

from cqels_endpoint.cli import main
from cqels_endpoint.errors import ArgumentError, QuerySyntaxError
from cqels_endpoint.streaming.job import run_job
from cqels_endpoint.streaming.plan import job_plan

QUERIES = ROOT / "examples" / "queries"
S = "<http://ex.org/s>"


@pytest.mark.parametrize(
    ("query", "key", "positions"),
    [
        (f"SELECT ?s WHERE {{ STREAM {S} [RANGE 1s] {{ ?s <http://ex.org/p> ?o . ?s <http://ex.org/q> ?x }} }}", "?s", [0]),
        (f"SELECT ?a WHERE {{ STREAM {S} [RANGE 1s] {{ ?a <http://ex.org/p> ?o }} STREAM {S} [NOW] {{ ?o <http://ex.org/q> ?b }} }}", "?o", [0, 2]),
        ((QUERIES / "debs-q1-frequent-routes.rq").read_text(), "?trip", [0]),
        # ?s of the sub-query is not the outer ?s: the sub-query's results join on ?o.
        (f"SELECT ?o WHERE {{ {{ SELECT ?o WHERE {{ STREAM {S} [RANGE 1s] {{ ?s <http://ex.org/p> ?o }} }} }} "
         f"STREAM {S} [RANGE 1s] {{ ?s <http://ex.org/q> ?o }} }}", "?o", [2]),
    ],
)
def test_the_key_is_a_variable_of_every_stream_pattern(query, key, positions):
    plan = job_plan(query, 4)
    assert plan.partitioned and str(plan.split.key) == key
    assert list(plan.split.positions.values()) == [tuple(positions)]


@pytest.mark.parametrize(
    ("group_by", "where", "in_partitions"),
    [
        ("?s", "?s <http://ex.org/p> ?o", True),  # the key ?s is the group key: each group in one partition
        ("?o", "?s <http://ex.org/p> ?o . ?s <http://ex.org/q> ?x", False),  # key ?s: a group spans partitions
        ("(STR(?s) AS ?k)", "?s <http://ex.org/p> ?o", False),  # the group key is computed, not the key
    ],
)
def test_the_group_runs_in_the_partitions_when_the_key_is_a_group_key(group_by, where, in_partitions):
    query = f"SELECT (COUNT(?o) AS ?c) WHERE {{ STREAM {S} [RANGE 1s] {{ {where} }} }} GROUP BY {group_by} HAVING (COUNT(?o) > 1)"
    split = job_plan(query, 2).split
    assert split.partitioned and split.grouped == in_partitions
    assert any(type(node).__name__ == "Group" for node in split.top) != in_partitions
    assert split.key in split.schema


@pytest.mark.parametrize(
    ("query", "reason"),
    [
        ((QUERIES / "debs-q2-profitable-areas.rq").read_text(), "no variable occurs in every stream triple pattern"),
        (f"SELECT ?s WHERE {{ STREAM {S} [TRIPLES 5] {{ ?s <http://ex.org/p> ?o }} }}", "not an eager time window"),
        # CQELS-QL 2.0 (REGISTER QUERY … AS reads as cqels2): the last 5 statements of the stream, every key's.
        (f"REGISTER QUERY Q AS SELECT ?s WHERE {{ STREAM {S} [TRIPLES 5] {{ ?s <http://ex.org/p> ?o }} }}",
         "last statements of the whole stream"),
        (f"SELECT ?s WHERE {{ STREAM {S} [RANGE 10s SLIDE 2s] {{ ?s <http://ex.org/p> ?o }} }}", "not an eager time window"),
        (f"SELECT ?s WHERE {{ STREAM {S} [RANGE 10s] {{ ?s <http://ex.org/p>+ ?o }} }}", "property path over a stream"),
        (f"SELECT ?s WHERE {{ {{ SELECT ?s WHERE {{ STREAM {S} [RANGE 1s] {{ ?s <http://ex.org/p> ?o }} }} LIMIT 2 }} "
         f"STREAM {S} [RANGE 1s] {{ ?s <http://ex.org/q> ?x }} }}", "sub-query below the top"),
        (f"SELECT ?s WHERE {{ {{ STREAM {S} [RANGE 1s] {{ ?s <http://ex.org/p> ?o }} }} UNION {{ ?s <http://ex.org/q> ?o }} }}",
         "bound by a stream in every solution"),
    ],
)
def test_a_query_without_a_key_runs_on_one_partition_and_says_why(query, reason):
    plan = job_plan(query, 4)
    assert not plan.partitioned and plan.tasks == 1
    assert reason in plan.split.reason


KEYED_JOIN = f"STREAM {S} [RANGE 1s] {{ ?s <http://ex.org/p> ?o . ?s <http://ex.org/q> ?x }}"


@pytest.mark.parametrize(
    ("select", "group_by", "merged"),
    [
        ("(COUNT(*) AS ?n) (COUNT(?x) AS ?c)", "GROUP BY ?o", "COUNT → SUM"),
        ("(MIN(?x) AS ?lo) (MAX(?x) AS ?hi) (SAMPLE(?x) AS ?any)", "GROUP BY ?o", "MAX, MIN, SAMPLE"),
        ("(COUNT(DISTINCT ?s) AS ?keys)", "GROUP BY ?o", "COUNT → SUM"),  # the key's values live in one partition each
        ("(SUM(?x) AS ?t) (AVG(?x) AS ?a)", "GROUP BY ?o", "AVG as EXACT_SUM → AVG_OF_EXACT, SUM as EXACT_SUM → SUM_OF_EXACT"),
        ("(COUNT(*) AS ?n) (SUM(?x) AS ?t) (SAMPLE(?x) AS ?any)", "", "COUNT → SUM, SAMPLE, SUM as EXACT_SUM → SUM_OF_EXACT"),
    ],
)
def test_mergeable_aggregates_are_aggregated_in_part_by_the_partitions(select, group_by, merged):
    plan = job_plan(f"SELECT {'?o ' if group_by else ''}{select} WHERE {{ {KEYED_JOIN} }} {group_by}", 2, partial_aggregates=True)
    assert plan.partial is not None and plan.partial.describe().endswith(merged)
    assert plan.output_schema == plan.partial.schema
    assert job_plan(plan.text, 2).partial is None  # off unless asked for


@pytest.mark.parametrize(
    ("select", "group_by", "reason"),
    [
        ("(GROUP_CONCAT(?x) AS ?all)", "GROUP BY ?o", "GROUP_CONCAT has no partial aggregate here"),
        ("(MEDIAN(?x) AS ?m)", "GROUP BY ?o", "MEDIAN has no partial aggregate here"),
        ("(COUNT(DISTINCT ?x) AS ?d)", "GROUP BY ?o", "COUNT(DISTINCT …) of anything but the key"),
        ("(SUM(DISTINCT ?x) AS ?d)", "GROUP BY ?o", "SUM(DISTINCT …) of anything but the key"),
        ("(MIN(?x) AS ?lo)", "", "MIN without GROUP BY"),
    ],
)
def test_other_aggregates_are_merged_from_the_solutions_and_explain_says_why(select, group_by, reason):
    plan = job_plan(f"SELECT {select} WHERE {{ {KEYED_JOIN} }} {group_by}", 2, partial_aggregates=True)
    assert plan.partitioned and plan.partial is None
    assert any(reason in line for line in plan.split.describe())


def test_explain_prints_the_split(capsys):
    assert main(["explain", str(QUERIES / "debs-q1-frequent-routes.rq")]) == 0
    section = capsys.readouterr().out.split("# spark job (cqels spark-job)\n")[1].splitlines()
    assert section[0] == "partitioned by ?trip (<http://debs2015.org/streams/trips> by subject)"
    assert section[1] == "global stage: slice → project → orderby → extend → filter → group (COUNT)"
    assert section[2] == ("the group over the solutions of every partition; with --partial-aggregates, "
                          "partial aggregates per partition, merged globally: COUNT → SUM")
    assert main(["explain", str(QUERIES / "conference-q2-reachable.rq")]) == 0
    assert capsys.readouterr().out.endswith("# spark job (cqels spark-job)\none partition: no variable occurs in every stream triple pattern\n")


def test_mistakes_are_refused_before_spark_starts(tmp_path, capsys):
    query = (QUERIES / "debs-q1-frequent-routes.rq").read_text()
    with pytest.raises(ArgumentError, match="does not exist"):
        run_job(query, tmp_path / "nowhere", output=tmp_path / "out")
    with pytest.raises(ArgumentError, match="needs a CONSTRUCT query"):
        run_job(query, tmp_path, sink="post", post_url="http://127.0.0.1:1/streams/x")
    with pytest.raises(QuerySyntaxError):
        run_job("SELECT ?x WHERE { STREAM <s> [RANGE 1s] { ?x ?p } }", tmp_path, output=tmp_path / "out")
    assert main(["spark-job", str(QUERIES / "debs-q1-frequent-routes.rq")]) == 2
    assert "give the events" in capsys.readouterr().err
    with pytest.raises(ArgumentError, match="partitions must be ≥ 1"):
        job_plan(query, 0)
