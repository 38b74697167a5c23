"""CEP sequence matching for ``FILTER(SEQ(step ; step ; ...))``: the brute-force definition, the
incremental automaton (reference twin here, compiled in ``_cep.pyx``) and ``build_matcher``.

Terms. A spec is a list of steps; a *bound* step takes one
event, a *gap* step ``{low, high}`` constrains the events between its bound neighbours. The matcher is
fed *entries* ``(step, key, t)``: ``key`` names the entry (unique, increasing in arrival order), so the
order "by time, then arrival" is the order of ``(t, key)``. A match is one entry per bound step with
strictly increasing times such that every gap holds and the guards accept the keys: the guard of
the complete match and the *prefix guards*, ``prefix_guards[j]`` a test of the keys of the first
``j`` bound entries (their conjunction is the definition; the matcher asks each as soon as its
prefix is bound). Gap ``j`` (``0``
before the first bound step, ``k`` after the last of ``k``) is the maximal run of gap steps there; it
holds when its *relevant entries* (the entries of its steps with time strictly inside the interval
that pass their step's gap guard) cut into one segment per gap step, segment ``i`` of
``low_i..high_i`` entries of step ``g_i``. A *gap guard* ``gap_guards[s] = (level, test)`` of gap
step ``s`` makes an entry of ``s`` relevant to a match only when ``test(keys[:level], key)`` holds,
``keys`` the match's bound keys: which events count for a gap depends on the match's bound events
(before or after the gap).

``all_matches`` is that definition enumerated: every increasing choice of bound entries, each gap
checked by a small recursive cut once the bound entries it reads are chosen. It is the oracle of
the tests and the re-evaluation mode.

The automaton. The steps of one gap are distinct, so a gap's cut is deterministic and a gap is a DFA
over its steps (state = current step, entries taken so far in it, capped at ``low`` when ``high`` is
unbounded; a dead state when no cut can exist any more). The matcher keeps a tree of *runs*: the root
(depth 0) and, at depth ``d``, one node per valid prefix ``b_1..b_d`` of bound entries (increasing
times, the gaps checked up to depth ``d`` holding, the prefix guards of depths ``1..d`` true). Each node carries the DFA state of
its *open* gap ``d`` over all present entries after ``t(b_d)`` (the root: gap 0 over every entry)
relevant to its prefix, plus the state before the entries of its last time, so that a bound entry
arriving at that same time sees only the strictly earlier ones. A node at depth ``k`` is a match
when its open (trailing) gap's state accepts; its entries may still add or retract it.

A gap whose guards read only bound steps before it (or that has none) is *followed* that way, at
the open gap of the nodes of its depth, checked when they are extended (their prefix holds what its
guards read). A gap ``d`` with a guard reading bound step ``L > d`` is *deferred*: the open gap of
the nodes of depth ``d`` is not fed (it accepts) and the gap is checked when a node of depth ``L``
is made, by a replay of its relevant entries in ``(t(b_d), t(b_{d+1}))``, its ``L`` keys known.

In-order insert (``(t, key)`` after every present entry): a gap entry of a followed gap ``j``
advances the live nodes of depth ``j`` older than ``t`` that it is relevant to (an entry of a
deferred gap comes after every interval already closed, so it changes nothing yet); a bound entry
of step ``i`` extends every live node of depth ``i - 1`` older than ``t`` whose gap accepts before
``t``, if the new prefix passes the guard of depth ``i`` and the gaps deferred to it (a prefix
failing its guard is not made: a guard only reads keys, so no later change of the window
makes it pass, and only gaps, replayed below, can make an existing node valid again). A node
whose DFA state is dead is no longer *live* (no in-order entry revives it) but stays in the tree: an
expiry or a late entry may. Cost: one DFA step per live run touched (and a gap guard's call per
live run of its depth), one new node per extension (and a replay per deferred gap checked).

Expiry of a bound entry removes the nodes holding it, with their subtrees (matches retracted). Expiry
or out-of-order insert of a gap entry at ``t_e`` in a followed gap ``j`` *rescans* each node of
depth ``j`` older than ``t_e`` that the entry is relevant to (for the leading gap: the root): its
DFA state is replayed over the present entries after it, and its children newer than ``t_e`` are
reconciled (removed if their gap no longer holds, created and grown by the same replay if it now
does). In a gap ``j`` deferred to depth ``L``, it rescans the nodes of depth ``L - 1`` whose gap
``j`` spans ``t_e`` and reconciles only their children (or would-be children) the entry is relevant
to, by the replay of gap ``j``. An out-of-order bound entry is added under every node of the depth
before whose gap accepts before it, and grown. Cost: a replay of the window per rescanned node, plus
the subtree grown; with windows that expire oldest first only the leading gap (the root, or the
nodes of depth ``L - 1`` when the leading gap is deferred to ``L``) ever needs it.

``take()`` returns the net change of the match bag since the previous call, sorted, one ``(keys,
+1/-1)`` per occurrence; a match added and retracted in between cancels out.
"""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cached_property

from cqels_endpoint.runtime.compiled import compiled_imports, use_pure_python

Guard = Callable[[tuple[int, ...]], bool]
PrefixGuards = dict[int, Guard]  # j (bound steps, 1..k) -> a test of the keys of the first j
GapTest = Callable[[tuple[int, ...], int], bool]  # (the first `level` bound keys, a gap entry's key)
GapGuards = dict[int, tuple[int, GapTest]]  # gap step -> (level, its test)

DEAD = -1  # the DFA state from which no cut of the gap can exist any more
NO_TIME = -(2**63)  # the root's time: before every int64 event time


@dataclass(frozen=True)
class SeqStep:
    """One step of a SEQ: ``bound`` (exactly one event, ``low = high = 1``) or a gap step taking
    ``low..high`` events (``high`` None: unbounded)."""

    bound: bool
    low: int
    high: int | None

    def __post_init__(self) -> None:
        if self.bound and (self.low, self.high) != (1, 1):
            raise ValueError(f"a bound SEQ step takes exactly one event, not {{{self.low},{self.high}}}")
        if self.low < 0 or (self.high is not None and self.high < self.low):
            raise ValueError(f"bad SEQ step bounds {{{self.low},{self.high}}}")


@dataclass(frozen=True)
class SeqAutomaton:
    """The tables of a spec, as plain data for both matchers. Per step: the bound index it fills
    (-1 for gap steps), the gap it belongs to (-1 for bound steps) and its symbol in that gap. Per gap
    ``j`` (``0..k``): its number of symbols ``width[j]``, transitions ``trans[j][state * width[j] +
    symbol]`` (``DEAD`` = -1) and ``accept[j][state]``; every gap starts in state 0."""

    bound_count: int
    step_bound: tuple[int, ...]
    step_gap: tuple[int, ...]
    step_symbol: tuple[int, ...]
    width: tuple[int, ...]
    trans: tuple[tuple[int, ...], ...]
    accept: tuple[tuple[bool, ...], ...]


@dataclass(frozen=True)
class GapGuardTables:
    """The gap guards of a spec, as plain data for both matchers: per step, the level of its gap
    guard (0: none) and its test; per gap ``d``, ``deferred[d]``: the depth ``L > d`` of the last bound
    step its guards read, where it is checked (0: followed at the open gap of the nodes of depth ``d``)."""

    level: tuple[int, ...]
    test: tuple[GapTest | None, ...]
    deferred: tuple[int, ...]


@dataclass(frozen=True)
class SeqSpec:
    """The steps of a SEQ, in order; at least one is bound."""

    steps: tuple[SeqStep, ...]

    def __post_init__(self) -> None:
        if not any(step.bound for step in self.steps):
            raise ValueError("a SEQ needs at least one bound step")

    @cached_property
    def bound_steps(self) -> tuple[int, ...]:
        """The indexes of the bound steps, in order."""
        return tuple(i for i, step in enumerate(self.steps) if step.bound)

    @cached_property
    def gaps(self) -> tuple[tuple[int, ...], ...]:
        """The step indexes of each gap: ``gaps[j]`` precedes bound step ``j`` (``gaps[k]``: trails)."""
        gaps: list[list[int]] = [[]]
        for i, step in enumerate(self.steps):
            if step.bound:
                gaps.append([])
            else:
                gaps[-1].append(i)
        return tuple(tuple(gap) for gap in gaps)

    @cached_property
    def automaton(self) -> SeqAutomaton:
        step_bound = [-1] * len(self.steps)
        step_gap = [-1] * len(self.steps)
        step_symbol = [-1] * len(self.steps)
        for i, step in enumerate(self.bound_steps):
            step_bound[step] = i
        tables = []
        for j, gap in enumerate(self.gaps):
            for symbol, step in enumerate(gap):
                step_gap[step], step_symbol[step] = j, symbol
            tables.append(_gap_dfa([self.steps[step] for step in gap]))
        return SeqAutomaton(
            len(self.bound_steps),
            tuple(step_bound),
            tuple(step_gap),
            tuple(step_symbol),
            tuple(len(gap) for gap in self.gaps),
            tuple(t for t, _ in tables),
            tuple(a for _, a in tables),
        )

    def gap_tables(self, gap_guards: GapGuards | None) -> GapGuardTables:
        """The tables of ``gap_guards`` (``{gap step: (level, test)}``), checked against the spec."""
        k = len(self.bound_steps)
        level = [0] * len(self.steps)
        test: list[GapTest | None] = [None] * len(self.steps)
        for step, (at, check) in (gap_guards or {}).items():
            if not 0 <= step < len(self.steps) or self.steps[step].bound:
                raise ValueError(f"a gap guard on step {step}, which is not a gap step")
            if not 1 <= at <= k:
                raise ValueError(f"a gap guard of {at} bound steps, but the SEQ has {k}")
            level[step], test[step] = at, check
        deferred = []
        for d, gap in enumerate(self.gaps):
            reads = max((level[step] for step in gap), default=0)
            deferred.append(reads if reads > d else 0)
        return GapGuardTables(tuple(level), tuple(test), tuple(deferred))


def _gap_dfa(steps: list[SeqStep]) -> tuple[tuple[int, ...], tuple[bool, ...]]:
    """The DFA of one gap: state ``(i, c)`` = in segment ``i`` with ``c`` entries (capped at ``low``
    when unbounded); a gap without steps has the one accepting state and no symbols."""
    if not steps:
        return (), (True,)
    caps = [step.high if step.high is not None else step.low for step in steps]
    base = [sum(cap + 1 for cap in caps[:i]) for i in range(len(steps))]

    def enter(j: int) -> int:
        return base[j] + min(1, caps[j]) if steps[j].high != 0 else DEAD

    def move(i: int, count: int, symbol: int) -> int:
        step = steps[i]
        if symbol == i and (step.high is None or count < step.high):
            return base[i] + min(count + 1, caps[i])
        if count < step.low:
            return DEAD
        # Close segment i; later segments are skipped (empty) until the symbol's own.
        for j in range(i + 1, len(steps)):
            if j == symbol:
                return enter(j)
            if steps[j].low > 0:
                return DEAD
        return DEAD

    trans: list[int] = []
    accept: list[bool] = []
    for i, cap in enumerate(caps):
        for count in range(cap + 1):
            trans.extend(move(i, count, symbol) for symbol in range(len(steps)))
            accept.append(count >= steps[i].low and all(step.low == 0 for step in steps[i + 1 :]))
    return tuple(trans), tuple(accept)


def _cuts(spec: SeqSpec, gap: tuple[int, ...], steps: list[int], i: int = 0, pos: int = 0) -> bool:
    """Whether ``steps[pos:]`` (the relevant entries' steps) cuts into segments for ``gap[i:]``."""
    if i == len(gap):
        return pos == len(steps)
    low, high = spec.steps[gap[i]].low, spec.steps[gap[i]].high
    n = 0
    while True:
        if n >= low and _cuts(spec, gap, steps, i + 1, pos + n):
            return True
        if pos + n == len(steps) or steps[pos + n] != gap[i] or n == high:
            return False
        n += 1


def level_guards(spec: SeqSpec, guard: Guard | None, prefix_guards: PrefixGuards | None) -> list[Guard | None]:
    """The test of each depth ``0..k`` (None: none): ``prefix_guards[j]`` at ``j``, and at ``k`` also
    ``guard``."""
    k = len(spec.bound_steps)
    levels: list[Guard | None] = [None] * (k + 1)
    for j, test in (prefix_guards or {}).items():
        if not 1 <= j <= k:
            raise ValueError(f"a prefix guard of {j} bound steps, but the SEQ has {k}")
        levels[j] = test
    if guard is not None:
        last = levels[k]
        levels[k] = guard if last is None else (lambda keys: last(keys) and guard(keys))
    return levels


def all_matches(
    spec: SeqSpec,
    entries: Iterable[tuple[int, int, int]],
    guard: Guard | None = None,
    *,
    prefix_guards: PrefixGuards | None = None,
    gap_guards: GapGuards | None = None,
) -> Counter[tuple[int, ...]]:
    """Every match over ``entries`` (``(step, key, t)``), by the definition: the oracle of the
    matchers and the re-evaluation mode. The guards' conjunction is asked of each match, each
    prefix guard as soon as its ``j`` bound entries are chosen and each gap as soon as the bound
    entries around it and those its gap guards read are (they read nothing else, so the bag is the
    same: the tests check it against every check asked of complete matches)."""
    tests = level_guards(spec, guard, prefix_guards)
    tables = spec.gap_tables(gap_guards)
    k = len(spec.bound_steps)
    ordered = sorted(entries, key=lambda entry: (entry[2], entry[1]))
    time = {key: t for _step, key, t in ordered}
    candidates = [[(key, t) for step, key, t in ordered if step == bound] for bound in spec.bound_steps]
    checked_at: list[list[int]] = [[] for _ in range(k + 1)]  # depth (1..k) -> the gaps checked there
    for d, gap in enumerate(spec.gaps):
        if gap:
            checked_at[tables.deferred[d] or min(d + 1, k)].append(d)

    def gap_holds(d: int, keys: tuple[int, ...]) -> bool:
        gap = spec.gaps[d]
        after = time[keys[d - 1]] if d else float("-inf")
        before = time[keys[d]] if d < k else float("inf")
        relevant = [
            step for step, key, t in ordered
            if step in gap and after < t < before
            and (not tables.level[step] or tables.test[step](keys[: tables.level[step]], key))
        ]
        return _cuts(spec, gap, relevant)

    found: Counter[tuple[int, ...]] = Counter()

    def choose(chosen: tuple[int, ...], after: float) -> None:
        i = len(chosen)
        if i == k:
            found[chosen] += 1
            return
        test = tests[i + 1]
        for key, t in candidates[i]:
            keys = (*chosen, key)
            if t > after and (test is None or test(keys)) and all(gap_holds(d, keys) for d in checked_at[i + 1]):
                choose(keys, t)

    choose((), float("-inf"))
    return found


class _Run:
    """A node of the run tree: the prefix ending with entry ``key`` at ``t`` (the root: none), its
    keys ``path``, the DFA state of its open gap, and the state before the entries of ``last_t``."""

    __slots__ = ("alive", "children", "counted", "depth", "key", "last_t", "parent", "path", "prev", "state", "t")

    def __init__(self, parent: _Run | None, key: int, t: int) -> None:
        self.parent = parent
        self.depth = 0 if parent is None else parent.depth + 1
        self.path: tuple[int, ...] = () if parent is None else (*parent.path, key)
        self.key, self.t = key, t
        self.state = self.prev = 0
        self.last_t = t
        self.children: dict[int, _Run] = {}
        self.counted = False
        self.alive = True


class SeqMatcherPython:
    """The reference twin of ``_cep.SeqMatcher`` (the algorithm is in the module docstring)."""

    def __init__(
        self,
        spec: SeqSpec,
        guard: Guard | None = None,
        *,
        prefix_guards: PrefixGuards | None = None,
        gap_guards: GapGuards | None = None,
    ) -> None:
        self._a = a = spec.automaton
        self._k = a.bound_count
        self._guards = level_guards(spec, guard, prefix_guards)
        tables = spec.gap_tables(gap_guards)
        self._level, self._test, self._deferred = tables.level, tables.test, tables.deferred
        # The gap whose open state an entry of each step feeds (-1: a bound step or a deferred gap's),
        # and the open states' acceptance (a deferred gap is not followed: its open state accepts).
        self._open_gap = tuple(-1 if gap < 0 or self._deferred[gap] else gap for gap in a.step_gap)
        self._accept = tuple((True,) * len(table) if self._deferred[d] else table for d, table in enumerate(a.accept))
        self._deferred_at: list[list[int]] = [[] for _ in range(self._k + 1)]  # depth -> gaps checked there
        for d, depth in enumerate(self._deferred):
            if depth:
                self._deferred_at[depth].append(d)
        self._gap_order: dict[int, list[tuple[int, int]]] = {d: [] for d, depth in enumerate(self._deferred) if depth}
        self._order: list[tuple[int, int]] = []  # present (t, key), sorted
        self._info: dict[int, tuple[int, int]] = {}  # key -> (t, step)
        self._all: list[dict[_Run, None]] = [{} for _ in range(self._k + 1)]
        self._live: list[dict[_Run, None]] = [{} for _ in range(self._k + 1)]
        self._by_key: dict[int, list[_Run]] = {}  # nodes ending with key (removed ones skipped)
        self._delta: dict[tuple[int, ...], int] = {}
        self._count = 0
        self._root = _Run(None, -1, NO_TIME)
        self._add(self._root)

    # -- the calls -------------------------------------------------------------------------------

    def insert(self, step: int, key: int, t: int) -> None:
        if not 0 <= step < len(self._a.step_bound):
            raise ValueError(f"no SEQ step {step}")
        if key in self._info:
            raise ValueError(f"SEQ entry key {key} inserted twice")
        in_order = not self._order or (t, key) > self._order[-1]
        if in_order:
            self._order.append((t, key))
        else:
            bisect.insort(self._order, (t, key))
        self._info[key] = (t, step)
        gap, bound = self._a.step_gap[step], self._a.step_bound[step]
        if gap >= 0 and self._deferred[gap]:
            bisect.insort(self._gap_order[gap], (t, key))
        if in_order:
            if gap >= 0:
                if not self._deferred[gap]:  # a deferred gap's entry is after every interval checked
                    self._advance_live(gap, step, key, t)
            else:
                self._extend_live(bound, key, t)
        elif gap >= 0:
            self._gap_changed(gap, step, key, t)
        else:
            for parent in list(self._all[bound]):
                if parent.depth == 0 or parent.t < t:
                    state = self._replay_state(parent, t)
                    if state != DEAD and self._accept[bound][state]:
                        child = self._extend(parent, key, t)
                        if child is not None:
                            self._rescan(child, t)

    def expire(self, key: int) -> None:
        t, step = self._info.pop(key)
        del self._order[bisect.bisect_left(self._order, (t, key))]
        gap = self._a.step_gap[step]
        if gap >= 0:
            if self._deferred[gap]:
                entries = self._gap_order[gap]
                del entries[bisect.bisect_left(entries, (t, key))]
            self._gap_changed(gap, step, key, t)
        else:
            for node in self._by_key.pop(key, ()):
                if node.alive:
                    self._remove(node)

    def take(self) -> list[tuple[tuple[int, ...], int]]:
        changes = [(keys, 1 if n > 0 else -1) for keys, n in sorted(self._delta.items()) for _ in range(abs(n))]
        self._delta.clear()
        return changes

    def matches(self) -> list[tuple[int, ...]]:
        return sorted(node.path for node in self._all[self._k] if node.counted)

    def __len__(self) -> int:
        return self._count

    # -- the tree --------------------------------------------------------------------------------

    def _add(self, node: _Run) -> None:
        self._all[node.depth][node] = None
        self._live[node.depth][node] = None
        if node.parent is not None:
            node.parent.children[node.key] = node
            self._by_key.setdefault(node.key, []).append(node)
        self._recount(node)

    def _extend(self, parent: _Run, key: int, t: int) -> _Run | None:
        """A new child of ``parent`` ending with ``key`` (None when its prefix fails its depth's guard
        or a gap deferred to its depth)."""
        path = (*parent.path, key)
        test = self._guards[parent.depth + 1]
        if (test is not None and not test(path)) or not self._deferred_hold(path):
            return None
        child = _Run(parent, key, t)
        self._add(child)
        return child

    def _remove(self, node: _Run) -> None:
        for child in list(node.children.values()):
            self._remove(child)
        if node.counted:
            self._change(node.path, -1)
        del node.parent.children[node.key]
        del self._all[node.depth][node]
        self._live[node.depth].pop(node, None)
        node.alive = False

    def _recount(self, node: _Run) -> None:
        if node.depth != self._k:
            return
        counted = node.state != DEAD and self._accept[self._k][node.state]
        if counted != node.counted:
            node.counted = counted
            self._change(node.path, 1 if counted else -1)

    def _change(self, keys: tuple[int, ...], sign: int) -> None:
        self._count += sign
        net = self._delta.get(keys, 0) + sign
        if net:
            self._delta[keys] = net
        else:
            del self._delta[keys]

    # -- the gap states --------------------------------------------------------------------------

    def _relevant(self, keys: tuple[int, ...], step: int, key: int) -> bool:
        """Whether the gap entry ``key`` of ``step`` counts for a match whose bound keys start with ``keys``."""
        level = self._level[step]
        return not level or self._test[step](keys[:level], key)

    def _deferred_hold(self, keys: tuple[int, ...]) -> bool:
        """Whether the gaps deferred to the depth of ``keys`` hold, each replayed over its relevant entries."""
        a = self._a
        for gap in self._deferred_at[len(keys)]:
            entries = self._gap_order[gap]
            start = bisect.bisect_right(entries, (self._info[keys[gap - 1]][0], float("inf"))) if gap else 0
            end = bisect.bisect_left(entries, (self._info[keys[gap]][0], float("-inf")))
            state = 0
            for _t, key in entries[start:end]:
                step = self._info[key][1]
                if self._relevant(keys, step, key):
                    state = a.trans[gap][state * a.width[gap] + a.step_symbol[step]]
                    if state == DEAD:
                        return False
            if not a.accept[gap][state]:
                return False
        return True

    def _step(self, node: _Run, symbol: int, t: int) -> None:
        """Feeds ``node``'s open gap one entry of ``symbol`` at ``t`` (>= every time fed before)."""
        if t > node.last_t:
            node.prev, node.last_t = node.state, t
        if node.state != DEAD:
            gap = node.depth
            node.state = self._a.trans[gap][node.state * self._a.width[gap] + symbol]
            self._recount(node)

    @staticmethod
    def _before(node: _Run, t: int) -> int:
        """The state of ``node``'s open gap over its entries before ``t`` (>= every time fed)."""
        return node.state if t > node.last_t else node.prev

    def _advance_live(self, gap: int, step: int, key: int, t: int) -> None:
        symbol = self._a.step_symbol[step]
        for node in list(self._live[gap]):
            if node.depth and node.t >= t:
                continue
            if node.state == DEAD:
                if t > node.last_t:
                    del self._live[gap][node]
                continue
            if self._relevant(node.path, step, key):
                self._step(node, symbol, t)

    def _extend_live(self, bound: int, key: int, t: int) -> None:
        for node in list(self._live[bound]):
            if node.depth and node.t >= t:
                continue
            state = self._before(node, t)
            if node.state == DEAD and t > node.last_t:
                del self._live[bound][node]
            elif state != DEAD and self._accept[bound][state]:
                self._extend(node, key, t)

    def _replay_state(self, node: _Run, before: int) -> int:
        """The state of ``node``'s open gap over the present entries in ``(node.t, before)``."""
        gap, state = node.depth, 0
        start = 0 if node.depth == 0 else bisect.bisect_right(self._order, (node.t, float("inf")))
        for t, key in self._order[start:]:
            if t >= before or state == DEAD:
                break
            step = self._info[key][1]
            if self._open_gap[step] == gap and self._relevant(node.path, step, key):
                state = self._a.trans[gap][state * self._a.width[gap] + self._a.step_symbol[step]]
        return state

    def _gap_changed(self, gap: int, step: int, key: int, t: int) -> None:
        """The gap entry ``key`` of ``step`` at ``t`` left, or came out of order: the runs it is relevant to."""
        depth = self._deferred[gap]
        if not depth:
            for node in list(self._all[gap]):
                if (node.depth == 0 or node.t < t) and self._relevant(node.path, step, key):
                    self._rescan(node, t)
            return
        # The parents of the nodes checking the gap, where the gap spans t (when the gap precedes
        # the parent's last step; else their children newer than t).
        for node in list(self._all[depth - 1]):
            if (gap == 0 or self._info[node.path[gap - 1]][0] < t) and (
                depth - 1 == gap or t < self._info[node.path[gap]][0]
            ):
                self._rescan(node, t, (step, key))

    def _rescan(self, node: _Run, after: int, changed: tuple[int, int] | None = None) -> None:
        """Replays ``node``'s open gap over the present entries and reconciles its children newer
        than ``after`` (a new node: all of them, grown recursively); with ``changed``, the ``(step,
        key)`` of a gap entry of a gap deferred to the children's depth, only those it is relevant to."""
        gap, a = node.depth, self._a
        node.state = node.prev = 0
        node.last_t = node.t
        start = 0 if node.depth == 0 else bisect.bisect_right(self._order, (node.t, float("inf")))
        for t, key in self._order[start:]:
            step = self._info[key][1]
            if self._open_gap[step] == gap:
                if self._relevant(node.path, step, key):
                    self._step(node, a.step_symbol[step], t)
            elif a.step_bound[step] == gap and t > after:
                state = self._before(node, t)
                child = node.children.get(key)
                if state != DEAD and self._accept[gap][state]:
                    if child is None:
                        if changed is None or self._relevant((*node.path, key), *changed):
                            child = self._extend(node, key, t)
                            if child is not None:
                                self._rescan(child, t)
                    elif changed is not None and self._relevant(child.path, *changed) and not self._deferred_hold(child.path):
                        self._remove(child)
                elif child is not None:
                    self._remove(child)
        self._recount(node)
        if node.state == DEAD and node.prev == DEAD:
            self._live[gap].pop(node, None)
        else:
            self._live[gap][node] = None


if use_pure_python():
    _MATCHER: type = SeqMatcherPython
else:
    with compiled_imports("CEP matcher"):
        from cqels_endpoint.runtime import _cep

        _MATCHER = _cep.SeqMatcher


def build_matcher(
    spec: SeqSpec,
    guard: Guard | None = None,
    *,
    prefix_guards: PrefixGuards | None = None,
    gap_guards: GapGuards | None = None,
) -> SeqMatcherPython:
    """The incremental matcher of ``spec``: compiled (``_cep.pyx``) unless ``CQELS_PURE_PYTHON=1``
    selects ``SeqMatcherPython``, its twin (same calls, same answers). ``prefix_guards[j]`` tests
    the keys of the first ``j`` bound entries of a partial match, which is not extended when it
    fails; ``gap_guards[s] = (level, test)``: an entry of gap step ``s`` counts for a match only when
    ``test`` accepts the match's first ``level`` bound keys and the entry's key."""
    return _MATCHER(spec, guard, prefix_guards=prefix_guards, gap_guards=gap_guards)
