"""The router: compiled and twin route every triple to exactly the patterns it matches, in order,
with its index in the event."""

from array import array

from hypothesis import given, settings
from hypothesis import strategies as st

from cqels_endpoint.runtime import _routing
from cqels_endpoint.runtime.routing import PatternSpec, RouterPython

ids = st.sampled_from([1, 2, 3, -5])
positions = st.sampled_from([0, 1, 2])


@st.composite
def specs(draw) -> list[PatternSpec]:
    made = []
    for pattern_id in range(draw(st.integers(0, 6))):
        predicates = draw(st.none() | st.lists(ids, min_size=1, max_size=2, unique=True).map(tuple))
        constants = tuple(draw(st.lists(st.tuples(st.sampled_from([0, 2]), ids), max_size=2)))
        repeats = tuple(draw(st.lists(st.tuples(positions, positions), max_size=1)))
        made.append(PatternSpec(pattern_id, predicates, constants, repeats))
    return made


def matches(spec: PatternSpec, triple: tuple) -> bool:
    """The definition, spelled out."""
    return (
        (spec.predicates is None or triple[1] in spec.predicates)
        and all(triple[i] == value for i, value in spec.constants)
        and all(triple[a] == triple[b] for a, b in spec.repeats)
    )


@settings(max_examples=500)
@given(specs(), st.lists(ids, max_size=24).map(lambda values: values[: len(values) - len(values) % 3]))
def test_routers_route_each_triple_to_the_patterns_it_matches_in_order(patterns, values):
    event = array("q", values)
    expected = [
        (spec.pattern_id, triple, index)
        for index, triple in enumerate(zip(values[0::3], values[1::3], values[2::3]))
        for spec in patterns
        if matches(spec, triple)
    ]
    assert RouterPython(patterns).route(event) == expected
    assert _routing.Router(patterns).route(event) == expected
