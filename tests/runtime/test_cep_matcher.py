"""The CEP matchers (``runtime/cep.py``'s twin, ``runtime/_cep.pyx`` compiled) against the
brute-force definition ``all_matches``, on random specs, guards, gap guards and insert/expire/take
sequences; ``all_matches`` itself against ``definition``, every check asked of complete matches."""

import itertools
import re
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cqels_endpoint.runtime import _cep, cep
from cqels_endpoint.runtime.cep import SeqMatcherPython, SeqSpec, SeqStep, all_matches, build_matcher

BOUND = SeqStep(True, 1, 1)


def gap(low, high):
    return SeqStep(False, low, high)


def both(spec, guard=None, prefix_guards=None, gap_guards=None):
    return [make(spec, guard, prefix_guards=prefix_guards, gap_guards=gap_guards) for make in (SeqMatcherPython, _cep.SeqMatcher)]


def feed(matchers, calls):
    for call, *args in calls:
        for matcher in matchers:
            getattr(matcher, call)(*args)


# -- readable examples from the semantics ----------------------------------------------------------

A, X, B = 0, 1, 2  # step indexes in SEQ(?a ; NOT ?x ; ?b)


@pytest.mark.parametrize("make", [SeqMatcherPython, _cep.SeqMatcher])
def test_plain_sequence_pairs_every_a_with_every_later_b(make):
    spec = SeqSpec((BOUND, BOUND))
    matcher = make(spec, None)
    for step, key, t in [(0, 1, 10), (1, 2, 10), (0, 3, 20), (1, 4, 30)]:
        matcher.insert(step, key, t)
    # b 2 is simultaneous with a 1: neither precedes the other.
    assert matcher.take() == [((1, 4), 1), ((3, 4), 1)]
    assert len(matcher) == 2
    matcher.expire(1)
    assert matcher.take() == [((1, 4), -1)]
    assert matcher.matches() == [(3, 4)]


@pytest.mark.parametrize("make", [SeqMatcherPython, _cep.SeqMatcher])
def test_not_gap_forbids_an_x_strictly_between(make):
    spec = SeqSpec((BOUND, gap(0, 0), BOUND))
    matcher = make(spec, None)
    calls = [(A, 1, 10), (X, 2, 20), (A, 3, 20), (B, 4, 20), (B, 5, 30)]
    for step, key, t in calls:
        matcher.insert(step, key, t)
    # a 1 .. b 4: the x at 20 is not strictly before b 4 (same time); a 1 .. b 5 has it between.
    assert matcher.take() == [((1, 4), 1), ((3, 5), 1)]
    matcher.expire(2)  # the x leaves the window: a 1 .. b 5 holds now
    assert matcher.take() == [((1, 5), 1)]
    assert sorted(matcher.matches()) == [(1, 4), (1, 5), (3, 5)]


@pytest.mark.parametrize("make", [SeqMatcherPython, _cep.SeqMatcher])
def test_exact_count_in_the_trailing_gap_adds_then_retracts(make):
    spec = SeqSpec((BOUND, gap(2, 2)))  # SEQ(?a ; ?b{2})
    matcher = make(spec, None)
    matcher.insert(0, 1, 10)
    matcher.insert(1, 2, 11)
    assert matcher.take() == []
    matcher.insert(1, 3, 12)
    assert matcher.take() == [((1,), 1)]
    matcher.insert(1, 4, 13)  # a third b: no longer exactly two
    assert matcher.take() == [((1,), -1)]
    matcher.insert(1, 5, 14)
    matcher.expire(4)
    matcher.expire(5)
    assert matcher.take() == [((1,), 1)]


@pytest.mark.parametrize("make", [SeqMatcherPython, _cep.SeqMatcher])
def test_guard_sees_the_keys_of_complete_matches(make):
    spec = SeqSpec((BOUND, BOUND))
    seen = []

    def guard(keys):
        seen.append(keys)
        return sum(keys) % 2 == 0

    matcher = make(spec, guard)
    for step, key, t in [(0, 1, 1), (0, 2, 2), (1, 3, 3), (1, 4, 4)]:
        matcher.insert(step, key, t)
    assert matcher.matches() == [(1, 3), (2, 4)]
    assert sorted(seen) == [(1, 3), (1, 4), (2, 3), (2, 4)]


@pytest.mark.parametrize("make", [SeqMatcherPython, _cep.SeqMatcher])
def test_a_prefix_failing_its_guard_is_not_extended(make):
    spec = SeqSpec((BOUND, BOUND, BOUND))
    asked = {1: [], 2: [], 3: []}

    def level(j, test):
        def guard(keys):
            assert len(keys) == j
            asked[j].append(keys)
            return test(keys)

        return guard

    # Level 2 keeps the pairs of equal parity: the dead pairs (1, 4) and (3, 4) are never extended.
    guards = {1: level(1, lambda keys: True), 2: level(2, lambda keys: keys[0] % 2 == keys[1] % 2),
              3: level(3, lambda keys: True)}
    matcher = make(spec, None, prefix_guards=guards)
    for step, key, t in [(0, 1, 1), (0, 3, 2), (1, 4, 3), (1, 5, 4), (2, 6, 5)]:
        matcher.insert(step, key, t)
    assert asked[1] == [(1,), (3,)]
    assert sorted(asked[2]) == [(1, 4), (1, 5), (3, 4), (3, 5)]
    assert sorted(asked[3]) == [(1, 5, 6), (3, 5, 6)]
    assert matcher.matches() == [(1, 5, 6), (3, 5, 6)]
    # An expiry and a late entry replay gaps, never guards: the dead pairs stay out.
    matcher.expire(5)
    matcher.insert(1, 7, 3)
    assert matcher.matches() == [(1, 7, 6), (3, 7, 6)]


@pytest.mark.parametrize("make", [SeqMatcherPython, _cep.SeqMatcher])
def test_prefix_guards_of_no_level_are_refused(make):
    for j in (0, 3):
        with pytest.raises(ValueError, match=f"a prefix guard of {j} bound steps, but the SEQ has 2"):
            make(SeqSpec((BOUND, gap(0, 1), BOUND)), None, prefix_guards={j: lambda keys: True})
    with pytest.raises(ValueError, match="SEQ has 1"):
        all_matches(SeqSpec((BOUND,)), [], prefix_guards={2: lambda keys: True})


# Gap guards (CQELS-QL 2.0 §7): an event of a gap step counts only when the guard holds with the
# match's bound events. Here each key's machine: the NOT gap forbids an x of the same machine only.
MACHINE = {key: f"m{2 - key % 2}" for key in range(1, 13)}  # odd keys m1, even keys m2


def same_machine(keys, key):
    return MACHINE[keys[-1]] == MACHINE[key]


@pytest.mark.parametrize("make", [SeqMatcherPython, _cep.SeqMatcher])
def test_a_not_gap_guarded_by_the_step_before_counts_its_machine_only(make):
    spec = SeqSpec((BOUND, gap(0, 0), BOUND))  # SEQ(?a ; NOT ?x ; ?b), x of a's machine
    matcher = make(spec, None, prefix_guards={2: lambda keys: MACHINE[keys[0]] == MACHINE[keys[1]]},
                   gap_guards={X: (1, same_machine)})
    for step, key, t in [(A, 1, 10), (A, 2, 12), (X, 4, 20), (B, 3, 30), (B, 6, 31)]:
        matcher.insert(step, key, t)
    # x 4 is m2's: it separates a 2 from b 6, not a 1 from b 3.
    assert matcher.take() == [((1, 3), 1)]
    matcher.insert(X, 5, 25)  # late, and m1's: now between a 1 and b 3
    assert matcher.take() == [((1, 3), -1)]
    matcher.expire(4)
    assert matcher.take() == [((2, 6), 1)]
    matcher.expire(5)
    assert matcher.matches() == [(1, 3), (2, 6)]


@pytest.mark.parametrize("make", [SeqMatcherPython, _cep.SeqMatcher])
def test_a_not_gap_guarded_by_the_step_after_is_checked_when_it_is_bound(make):
    spec = SeqSpec((BOUND, gap(0, 0), BOUND))  # SEQ(?a ; NOT ?x ; ?b), x of b's machine
    matcher = make(spec, None, gap_guards={X: (2, same_machine)})
    for step, key, t in [(A, 1, 10), (X, 2, 20), (B, 3, 30), (B, 4, 31)]:
        matcher.insert(step, key, t)
    assert matcher.take() == [((1, 3), 1)]  # x 2 is m2's, as b 4 is
    matcher.insert(X, 7, 30)  # late, at b 3's time: not strictly between
    matcher.insert(X, 8, 11)  # late and m2's: b 4 stays blocked
    assert matcher.take() == []
    matcher.expire(2)
    matcher.expire(8)
    assert matcher.take() == [((1, 4), 1)]
    matcher.insert(X, 5, 15)  # late, m1's: blocks b 3
    assert matcher.take() == [((1, 3), -1)]


@pytest.mark.parametrize("make", [SeqMatcherPython, _cep.SeqMatcher])
def test_a_quantified_gap_counts_the_events_its_guard_keeps(make):
    spec = SeqSpec((gap(0, 0), BOUND, gap(2, 2)))  # SEQ(NOT ?y ; ?a ; ?x{2}), y and x of a's machine
    matcher = make(spec, None, gap_guards={0: (1, same_machine), 2: (1, same_machine)})
    for step, key, t in [(1, 1, 10), (2, 2, 11), (2, 3, 12), (2, 4, 13)]:
        matcher.insert(step, key, t)
    assert matcher.take() == []  # one x of m1 after a 1 so far
    matcher.insert(2, 5, 14)
    assert matcher.take() == [((1,), 1)]
    for step, key, t in [(1, 6, 15), (2, 7, 17), (2, 8, 18), (2, 10, 19)]:
        matcher.insert(step, key, t)
    assert matcher.take() == [((1,), -1), ((6,), 1)]  # three x of m1 after a 1; two of m2 after a 6
    matcher.insert(0, 9, 5)  # late y of m1, before a 1
    matcher.insert(0, 12, 14)  # late y of m2, before a 6
    assert matcher.take() == [((6,), -1)]
    for key in (12, 7, 9):
        matcher.expire(key)
    assert matcher.take() == [((1,), 1), ((6,), 1)]


def test_spec_errors():
    with pytest.raises(ValueError, match="at least one bound step"):
        SeqSpec((gap(0, 0),))
    with pytest.raises(ValueError, match="exactly one event"):
        SeqStep(True, 0, 1)
    with pytest.raises(ValueError, match="bad SEQ step bounds"):
        gap(3, 2)


@pytest.mark.parametrize("make", [SeqMatcherPython, _cep.SeqMatcher])
def test_call_errors(make):
    matcher = make(SeqSpec((BOUND,)), None)
    matcher.insert(0, 1, 5)
    with pytest.raises(ValueError, match="twice"):
        matcher.insert(0, 1, 6)
    with pytest.raises(ValueError, match="no SEQ step 3"):
        matcher.insert(3, 2, 6)
    with pytest.raises(KeyError):
        matcher.expire(9)


def test_build_matcher_makes_the_selected_matcher():
    matcher = build_matcher(SeqSpec((BOUND,)))
    assert isinstance(matcher, _cep.SeqMatcher) is (not cep.use_pure_python())


# -- properties ------------------------------------------------------------------------------------

bounds = st.sampled_from([(0, 0), (0, 1), (0, None), (1, None), (1, 1), (2, 2), (0, 2), (1, 2), (2, 3)])


@st.composite
def specs(draw):
    steps = [BOUND] * draw(st.integers(1, 4))
    for low, high in draw(st.lists(bounds, max_size=3)):
        steps.insert(draw(st.integers(0, len(steps))), gap(low, high))
    return SeqSpec(tuple(steps))


GUARDS = {
    "none": None,
    "even sum": lambda keys: sum(keys) % 2 == 0,
    "first key odd": lambda keys: keys[0] % 2 == 1,
}
# Tests of a prefix of keys (any length >= 1), for the prefix guards.
PREFIX_TESTS = {
    "even sum": lambda keys: sum(keys) % 2 == 0,
    "last key odd": lambda keys: keys[-1] % 2 == 1,
    "ends apart mod 3": lambda keys: (keys[0] + keys[-1]) % 3 != 0,
    "sum not 1 mod 4": lambda keys: sum(keys) % 4 != 1,
}
# Gap guards: tests of a gap entry's key with the first `level` bound keys of a match.
GAP_TESTS = {
    "parity of the last": lambda keys, key: (key - keys[-1]) % 2 == 0,
    "apart from the first mod 3": lambda keys, key: (key - keys[0]) % 3 != 0,
    "above their mean": lambda keys, key: key * len(keys) > sum(keys),
}


@st.composite
def scenarios(draw):
    """A spec, a guard name and calls: mostly in-order inserts (with ties), some late ones, random
    expiries and takes."""
    spec = draw(specs())
    calls, present, key, now = [], [], 0, 0
    for _ in range(draw(st.integers(0, 40))):
        kind = draw(st.sampled_from(["insert"] * 6 + ["late"] + ["expire"] * 2 + ["take"]))
        if kind == "take":
            calls.append(("take",))
        elif kind == "expire" and present:
            if draw(st.booleans()):  # oldest first, as time windows do
                gone = min(present, key=lambda entry: (entry[2], entry[1]))
            else:  # any entry, as per-pattern TRIPLES windows do
                gone = draw(st.sampled_from(present))
            present.remove(gone)
            calls.append(("expire", gone[1]))
        elif kind != "expire":
            key += 1
            if kind == "late":
                t = now - draw(st.integers(0, 4))
            else:
                now += draw(st.sampled_from([0, 0, 1, 2]))
                t = now
            entry = (draw(st.integers(0, len(spec.steps) - 1)), key, t)
            present.append(entry)
            calls.append(("insert", *entry))
    calls.append(("take",))
    levels = range(1, len(spec.bound_steps) + 1)
    prefix = draw(st.dictionaries(st.sampled_from(levels), st.sampled_from(sorted(PREFIX_TESTS)), max_size=len(levels)))
    # Gap guards of any level: reading bound steps before the gap (followed), after it (deferred) or both.
    gap_steps = [i for i, step in enumerate(spec.steps) if not step.bound]
    gaps = draw(st.dictionaries(st.sampled_from(gap_steps), st.tuples(st.sampled_from(levels), st.sampled_from(sorted(GAP_TESTS))))
                if gap_steps else st.just({}))
    return spec, draw(st.sampled_from(sorted(GUARDS))), calls, prefix, gaps


def definition(spec, entries, guard, gap_guards):
    """Every match by the letter: each choice of bound entries with increasing times, every gap (a
    regular expression over its relevant entries' steps) and the guard asked of it."""
    ordered = sorted(entries, key=lambda entry: (entry[2], entry[1]))
    found = Counter()
    for choice in itertools.product(*([(key, t) for step, key, t in ordered if step == b] for b in spec.bound_steps)):
        keys, times = tuple(key for key, _ in choice), [t for _, t in choice]
        if any(t >= later for t, later in itertools.pairwise(times)):
            continue
        bounds = [float("-inf"), *times, float("inf")]

        def relevant(step, key, keys=keys):
            level, test = gap_guards.get(step, (0, None))
            return not level or test(keys[:level], key)

        def holds(d, keys=keys, bounds=bounds):
            gap = spec.gaps[d]
            text = "".join(chr(65 + step) for step, key, t in ordered
                           if step in gap and bounds[d] < t < bounds[d + 1] and relevant(step, key))
            high = {step: "" if spec.steps[step].high is None else spec.steps[step].high for step in gap}
            return re.fullmatch("".join(f"{chr(65 + step)}{{{spec.steps[step].low},{high[step]}}}" for step in gap), text)

        if all(holds(d) for d in range(len(spec.gaps))) and (guard is None or guard(keys)):
            found[keys] += 1
    return found


def check(scenario):
    spec, guard_name, calls, prefix_names, gap_names = scenario
    guard = GUARDS[guard_name]
    prefix_guards = {j: PREFIX_TESTS[name] for j, name in prefix_names.items()} or None
    gap_guards = {step: (level, GAP_TESTS[name]) for step, (level, name) in gap_names.items()}

    def conjunction(keys):
        """The guard and the prefix guards as one guard of complete matches."""
        return (guard is None or guard(keys)) and all(PREFIX_TESTS[name](keys[:j]) for j, name in prefix_names.items())

    matchers = both(spec, guard, prefix_guards, gap_guards or None)
    bags = [Counter() for _ in matchers]
    present = {}
    for call, *args in calls:
        if call == "insert":
            present[args[1]] = tuple(args)
        elif call == "expire":
            del present[args[0]]
        if call != "take":
            for matcher in matchers:
                getattr(matcher, call)(*args)
            continue
        expected = all_matches(spec, present.values(), guard, prefix_guards=prefix_guards, gap_guards=gap_guards)
        # Asking guards and gaps as early as they can be never changes the match bag.
        assert expected == definition(spec, present.values(), conjunction, gap_guards)
        for matcher, bag in zip(matchers, bags, strict=True):
            changes = matcher.take()
            assert all(sign in (1, -1) for _, sign in changes)
            signs = {}
            for keys, sign in changes:
                assert signs.setdefault(keys, sign) == sign, f"{keys} both added and retracted"
                bag[keys] += sign
            assert +bag == bag, "a retraction of a match never added"
            assert bag == expected
            assert Counter(matcher.matches()) == expected
            assert len(matcher) == sum(expected.values())


@settings(max_examples=400, deadline=None)
@given(scenarios())
def test_matchers_agree_with_the_definition(scenario):
    check(scenario)


def test_all_matches_by_hand():
    # SEQ(NOT ?x ; ?a ; ?b{1,2}): no x before the a, then one or two b after it.
    spec = SeqSpec((gap(0, 0), BOUND, gap(1, 2)))
    entries = [(1, 1, 1), (0, 2, 2), (1, 3, 3), (2, 4, 4), (2, 5, 5)]
    # a 1: nothing before it, two b after it (the x is not of the trailing gap); a 3: the x precedes it.
    assert all_matches(spec, entries) == Counter({(1,): 1})
    assert all_matches(spec, [*entries, (2, 6, 6)]) == Counter()  # three b
    assert all_matches(spec, entries[2:]) == Counter({(3,): 1})
