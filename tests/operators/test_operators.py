"""Static cache, filter, extend, project and CONSTRUCT, alone and wired into a whole pipeline that
is compared, after every tick, with the same query recomputed from the live inputs."""

from __future__ import annotations

import itertools
from collections import Counter

import pyoxigraph as ox
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from operator_scenarios import Recorder, compatible_merge, load_regressions

from cqels_endpoint.engine.emission import instantiate
from cqels_endpoint.errors import OperatorError, PlanError
from cqels_endpoint.operators import _join, _project
from cqels_endpoint.operators.base import Delta, Sink
from cqels_endpoint.operators.extend import Extend
from cqels_endpoint.operators.filter import Filter
from cqels_endpoint.operators.reference import join as reference
from cqels_endpoint.operators.reference import project as reference_project
from cqels_endpoint.operators.static_cache import StaticCache
from cqels_endpoint.query import ast
from cqels_endpoint.runtime.decoding import DecodedRow, TermDecoder
from cqels_endpoint.runtime.encoding import TermDictionary
from cqels_endpoint.runtime.expressions import ExpressionError, compile_expression, compile_filter
from cqels_endpoint.terms import IRI, XSD_INTEGER, BlankNode, Literal, Var

IMPLEMENTATIONS = [pytest.param((_join, _project), id="compiled"), pytest.param((reference, reference_project), id="pure")]
SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])

EX = "http://ex.org/"
# A mix of inline ids (integers) and dictionary ids (IRIs, strings).
TERMS = [ox.Literal(str(i), datatype=ox.NamedNode(XSD_INTEGER)) for i in range(3)] + [
    ox.NamedNode(EX + "x"),
    ox.NamedNode(EX + "y"),
    ox.Literal("s"),
]
FILTER_EXPRESSION = ast.BinaryOp("!=", Var("a"), Var("d"))
SUM_EXPRESSION = ast.BinaryOp("+", Var("a"), Var("c"))  # an error (unbound ?e1) unless both numeric
STR_EXPRESSION = ast.BuiltinCall("STR", (Var("b"),))  # new dictionary strings for IRIs


# ---- static cache -------------------------------------------------------------------------------


def test_static_cache_emits_the_bag_difference_at_the_next_tick():
    released = []
    cache = StaticCache(("a",), on_release=released.append)
    recorder = Recorder(cache.schema)
    cache.connect(recorder)
    cache.replace([(1,), (1,), (2,)])
    assert recorder.deltas == []  # a swap alone emits nothing
    cache.on_punctuation(0)
    assert recorder.relation() == Counter({(1,): 2, (2,): 1})
    assert all(delta.lineage[0] < 0 for delta in recorder.deltas)
    cache.replace([(1,), (3,)])
    assert released == [(1,)]  # the duplicate reference of the kept row, handed back at once
    cache.on_punctuation(1)
    assert recorder.relation() == Counter({(1,): 1, (3,): 1})
    assert [delta.sign for delta in recorder.deltas[3:]] == [-1, -1, 1]
    cache.on_punctuation(2)
    assert sorted(released) == [(1,), (1,), (2,)]
    cache.close()
    assert sorted(released) == [(1,), (1,), (1,), (2,), (3,)]
    assert cache.counters() == {"inputs": 5, "outputs": 6, "size": 0, "replacements": 2}


def test_static_cache_is_a_source():
    cache = StaticCache(("a",), label="cache C1")
    with pytest.raises(OperatorError, match="cache C1"):
        cache.on_batch(0, [])
    with pytest.raises(OperatorError, match="schema"):
        cache.replace([(1, 2)])


# ---- project ------------------------------------------------------------------------------------


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_project_reorders_keeps_duplicates_and_lineage(implementation):
    project = implementation[1].Project(("a", "b", "c"), ("c", "a", "z"))
    recorder = Recorder(project.schema)
    project.connect(recorder)
    project.on_batch(0, [Delta((1, 2, 3), 1, (1,)), Delta((1, 5, 3), 1, (2,)), Delta((1, 5, 3), -1, (2,))])
    assert recorder.deltas == [Delta((3, 1, None), 1, (1,)), Delta((3, 1, None), 1, (2,)), Delta((3, 1, None), -1, (2,))]
    assert recorder.relation() == Counter({(3, 1, None): 1})


# ---- filter / extend ----------------------------------------------------------------------------


def encode_all(dictionary):
    return [dictionary.encode(term) for term in TERMS]


def test_filter_decision_is_remembered_by_lineage():
    dictionary = TermDictionary()
    ids = encode_all(dictionary)
    calls = []
    decoder = TermDecoder(dictionary)
    flt = Filter(("a",), [ast.BuiltinCall("RAND")], decoder)  # EBV of a random double: mostly true
    flt._passes = lambda row: calls.append(row.get("a")) or len(calls) % 2 == 1
    recorder = Recorder(flt.schema)
    flt.connect(recorder)
    flt.on_batch(0, [Delta((ids[0],), 1, (1,)), Delta((ids[3],), 1, (2,))])
    flt.on_batch(0, [Delta((ids[0],), -1, (1,)), Delta((ids[3],), -1, (2,))])
    assert len(calls) == 2  # the -1 rows are not evaluated again
    assert [(d.lineage, d.sign) for d in recorder.deltas] == [((1,), 1), ((1,), -1)]
    assert flt.counters()["rejected"] == 1


def test_extend_error_leaves_the_variable_unbound_and_releases_its_values():
    dictionary = TermDictionary()
    one, iri = dictionary.encode(TERMS[1]), dictionary.encode(TERMS[3])
    decoder = TermDecoder(dictionary)
    extend = Extend(("b",), "e", STR_EXPRESSION, decoder)
    sum_extend = Extend(("b",), "s", ast.BinaryOp("+", Var("b"), Var("b")), decoder)
    recorder = Recorder(extend.schema)
    extend.connect(recorder)
    sum_recorder = Recorder(sum_extend.schema)
    sum_extend.connect(sum_recorder)
    batch = [Delta((one,), 1, (1,)), Delta((iri,), 1, (2,))]
    extend.on_batch(0, batch)
    sum_extend.on_batch(0, batch)
    assert [dictionary.decode(row[1]) for row in recorder.relation()] == [ox.Literal("1"), ox.Literal(EX + "x")]
    assert sorted(sum_recorder.relation(), key=str) == [(one, dictionary.encode(ox.Literal("2", datatype=ox.NamedNode(XSD_INTEGER)))), (iri, None)]
    assert sum_extend.counters()["errors"] == 1
    entries = len(dictionary)
    retract = [Delta((one,), -1, (1,)), Delta((iri,), -1, (2,))]
    extend.on_batch(0, retract)
    extend.on_punctuation(0)
    assert len(dictionary) == entries  # the -1 rows of tick 0 may still be decoded
    extend.on_punctuation(1)
    assert len(dictionary) == entries - 2  # the strings "1" and "http://ex.org/x" are gone
    assert not recorder.live


def test_extend_refuses_a_bound_variable():
    with pytest.raises(PlanError, match="already bound"):
        Extend(("a",), "a", SUM_EXPRESSION, TermDecoder(TermDictionary()))


def test_decoded_row_decodes_lazily_through_the_cache():
    dictionary = TermDictionary()
    ids = encode_all(dictionary)
    decoder = TermDecoder(dictionary, capacity=2)
    row = DecodedRow({"a": 0, "b": 1, "c": 2}, (ids[3], None, ids[4]), decoder)
    assert row.get("b") is None and "b" not in row
    assert row["a"] == TERMS[3] and row.get("a") == TERMS[3]
    assert decoder.misses == 1
    assert dict(row) == {"a": TERMS[3], "c": TERMS[4]}
    assert DecodedRow({"a": 0}, (ids[3],), decoder)["a"] == TERMS[3]
    assert decoder.hits == 1
    decoder.decode(ids[5])  # over capacity: the cache starts again, answers stay right
    assert decoder.decode(ids[3]) == TERMS[3]


# ---- CONSTRUCT ----------------------------------------------------------------------------------


def test_construct_template():
    template = [
        ast.TriplePattern(Var("s"), IRI(EX + "p"), BlankNode("b")),
        ast.TriplePattern(BlankNode("b"), IRI(EX + "q"), Var("o")),
        ast.TriplePattern(Var("o"), IRI(EX + "r"), Literal("c")),  # literal subject when ?o is one
        ast.TriplePattern(Var("s"), Var("p"), Var("o")),  # ?p unbound in one solution
    ]
    s, o = ox.NamedNode(EX + "s"), ox.Literal("1", datatype=ox.NamedNode(XSD_INTEGER))
    with_p = {"s": s, "o": o, "p": ox.NamedNode(EX + "p")}
    triples = instantiate(template, [{"s": s, "o": o}, with_p, dict(with_p)])
    blank_nodes = {t.object for t in triples if isinstance(t.object, ox.BlankNode)}
    assert len(blank_nodes) == 3  # fresh per solution
    assert {t.subject for t in triples if isinstance(t.subject, ox.BlankNode)} == blank_nodes
    assert ox.Triple(s, ox.NamedNode(EX + "p"), o) in triples
    assert sum(t.predicate == ox.NamedNode(EX + "r") for t in triples) == 0
    assert len(triples) == 3 + 3 + 1  # the repeated ground triple appears once


# ---- a whole pipeline against recomputation -----------------------------------------------------


class Pipeline:
    """buffer(?a ex:p ?b) ⋈ buffer(?b ex:q ?c) ⋈ static(?c ?d) → FILTER(?a != ?d) → BIND(?a + ?c AS ?e1)
    → BIND(STR(?b) AS ?e2) → project(?e2 ?a ?e1 ?d) → recorder."""

    def __init__(self, implementations, dictionary):
        implementation, project = implementations
        release = dictionary.decref_many
        self.left = implementation.WindowBuffer(("a", None, "b"), on_release=release)
        self.right = implementation.WindowBuffer(("b", None, "c"), on_release=release)
        self.static = StaticCache(("c", "d"), on_release=release)
        self.join = implementation.MultiwayJoin([self.left.schema, self.right.schema, self.static.schema])
        for port, source in enumerate((self.left, self.right, self.static)):
            source.connect(self.join, port)
        decoder = TermDecoder(dictionary)
        self.filter = Filter(self.join.schema, [FILTER_EXPRESSION], decoder)
        self.sum = Extend(self.filter.schema, "e1", SUM_EXPRESSION, decoder)
        self.str = Extend(self.sum.schema, "e2", STR_EXPRESSION, decoder)
        self.project = project.Project(self.str.schema, ("e2", "a", "e1", "d"))
        self.recorder = Recorder(self.project.schema)
        self.join.connect(self.filter).connect(self.sum).connect(self.str).connect(self.project).connect(self.recorder)
        self.operators = [self.left, self.right, self.static, self.join, self.filter, self.sum, self.str]

    def punctuate(self, tau):
        for source in (self.left, self.right, self.static):
            source.on_punctuation(tau)

    def close(self):
        for operator in self.operators:
            operator.close()


def recompute(left, right, static):
    """The pipeline's output from scratch on decoded terms (nested loops, E1's evaluator)."""
    passes = compile_filter([FILTER_EXPRESSION])
    total, text = compile_expression(SUM_EXPRESSION), compile_expression(STR_EXPRESSION)
    schema = ("a", "b", "c", "d")
    parts = [("a", "b"), ("b", "c"), ("c", "d")]
    result = Counter()
    for combination in itertools.product(left, right, static):
        merged = compatible_merge(schema, list(zip(parts, combination)))
        if merged is None:
            continue
        solution = dict(zip(schema, merged))
        if not passes(solution):
            continue
        values = []
        for expression in (total, text):
            try:
                values.append(expression(solution))
            except ExpressionError:
                values.append(None)
        result[(values[1], solution["a"], values[0], solution["d"])] += 1
    return result


TERM_INDEX = st.sampled_from([0, 0, 1, 2, 3, 3, 4, 5])
TRIPLE = st.tuples(TERM_INDEX, TERM_INDEX)
OPERATION = st.one_of(
    st.tuples(st.sampled_from(["left", "right"]), TRIPLE),
    st.tuples(st.just("expire"), st.integers(0, 30)),
    st.tuples(st.just("static"), st.lists(TRIPLE, max_size=4)),
)


def drive_pipeline(implementation, ticks):
    dictionary = TermDictionary()
    pipeline = Pipeline(implementation, dictionary)
    live: dict[int, tuple[str, tuple]] = {}
    static_rows: list[tuple] = []
    seq = 0
    ticks = [*ticks, [("expire", 0)] * 40 + [("static", [])]]
    for tau, tick in enumerate(ticks):
        for kind, value in tick:
            if kind in ("left", "right"):
                seq += 1
                terms = (TERMS[value[0]], ox.NamedNode(EX + kind), TERMS[value[1]])
                live[seq] = (kind, terms)
                getattr(pipeline, kind).insert(seq, tuple(dictionary.encode(term) for term in terms))
            elif kind == "expire":
                if live:
                    expired = sorted(live)[value % len(live)]
                    getattr(pipeline, live.pop(expired)[0]).expire(expired)
            else:
                static_rows = [(TERMS[c], TERMS[d]) for c, d in value]
                pipeline.static.replace([tuple(dictionary.encode(term) for term in row) for row in static_rows])
        pipeline.punctuate(tau)
        decoded = Counter(
            {tuple(None if i is None else dictionary.decode(i) for i in row): n for row, n in pipeline.recorder.relation().items()}
        )
        # A window is a set of triples: a second copy of a triple does not enter it again.
        left = list(dict.fromkeys((t[0], t[2]) for kind, t in live.values() if kind == "left"))
        right = list(dict.fromkeys((t[0], t[2]) for kind, t in live.values() if kind == "right"))
        assert decoded == recompute(left, right, static_rows), f"after tick {tau}"
    pipeline.punctuate(len(ticks))
    assert len(dictionary) == 0, "every dictionary reference released once everything left"
    return pipeline


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
@SETTINGS
@given(ticks=st.lists(st.lists(OPERATION, max_size=8), min_size=1, max_size=8))
def test_pipeline_equals_recomputation_after_every_tick(implementation, ticks):
    pipeline = drive_pipeline(implementation, ticks)
    assert not pipeline.recorder.live


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
@pytest.mark.parametrize("case", load_regressions("operators_pipeline.json"), ids=lambda case: case["note"])
def test_pipeline_regressions(implementation, case):
    drive_pipeline(implementation, [[(kind, value) for kind, value in tick] for tick in case["ticks"]])


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_pipeline_close_releases_every_reference(implementation):
    dictionary = TermDictionary()
    pipeline = Pipeline(implementation, dictionary)
    assert isinstance(pipeline.project, implementation[1].Project)
    pipeline.left.insert(1, tuple(dictionary.encode(t) for t in (TERMS[3], ox.NamedNode(EX + "p"), TERMS[4])))
    pipeline.right.insert(2, tuple(dictionary.encode(t) for t in (TERMS[4], ox.NamedNode(EX + "q"), TERMS[0])))
    pipeline.static.replace([(dictionary.encode(TERMS[0]), dictionary.encode(TERMS[5]))])
    pipeline.punctuate(0)
    assert len(pipeline.recorder.live) == 1
    pipeline.close()
    assert len(dictionary) == 0


@SETTINGS
@given(rows=st.lists(st.tuples(st.integers(-3, 3), st.one_of(st.none(), st.integers()), st.integers()), max_size=20))
def test_compiled_project_matches_its_twin(rows):
    outputs = []
    for module in (_project, reference_project):
        project = module.Project(("a", "b", "c"), ("c", "x", "b", "c"))
        recorder = Recorder(project.schema)
        project.connect(recorder)
        project.on_batch(0, [Delta(row, 1, (k,)) for k, row in enumerate(rows)])
        project.on_batch(0, [Delta(row, -1, (k,)) for k, row in enumerate(rows)])
        outputs.append(recorder.deltas)
    assert outputs[0] == outputs[1]
    assert [d.row for d in outputs[0][: len(rows)]] == [(c, None, b, c) for _, b, c in rows]


def test_sink_nets_the_changes_of_an_interval():
    sink = Sink(("a",))
    sink.on_batch(0, [Delta((1,), 1, (1,)), Delta((2,), 1, (2,))])
    sink.on_batch(0, [Delta((1,), -1, (1,))])
    sink.on_punctuation(4)
    assert sink.take() == [((2,), 1)]
    assert sink.take() == []
    assert sink.rows() == [(2,)] and sink.last_tau == 4
    assert sink.describe() == "sink [?a] inputs=3 outputs=0 rows=1"
