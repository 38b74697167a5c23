# distutils: language = c++
"""Compiled CEP matcher: the twin of ``cep.SeqMatcherPython`` (same algorithm, same answers; see
``cep.py``'s docstring). The run tree is a pool of C structs (a deque, so pointers stay valid while
it grows; freed slots are reused), children as intrusive sibling lists, the present entries in a
``std::map`` ordered by ``(t, key)`` (and those of each deferred gap in one of their own). An
in-order insert touches no Python object but the guard calls (at the depths that have one, and per
live run for a gap step with a gap guard) and the keys of the changes, kept as C++ vectors until
``take()``."""

from cython.operator cimport dereference as deref
from cython.operator cimport predecrement as dec
from cython.operator cimport preincrement as inc
from libc.stdint cimport INT64_MAX, INT64_MIN, int64_t
from libcpp.algorithm cimport reverse
from libcpp.deque cimport deque
from libcpp.map cimport map as cmap
from libcpp.pair cimport pair
from libcpp.unordered_map cimport unordered_map
from libcpp.vector cimport vector


cdef enum:
    DEAD = -1  # cep.DEAD
    NONE = -1  # no node


ctypedef pair[int64_t, int64_t] TimeKey
ctypedef cmap[TimeKey, int].iterator OrderIter


cdef struct Run:
    int64_t key  # the entry ending the prefix (the root: none)
    int64_t t  # its time (the root: INT64_MIN)
    int64_t last_t  # the time of the last entry fed to the open gap
    int64_t serial  # tells a reused slot from the node a by_key entry named
    int state  # the open gap's DFA state
    int prev  # its state before the entries at last_t
    int depth
    int parent
    int first_child
    int next_sibling
    int prev_sibling
    int all_pos  # index in all_nodes[depth]
    int live_pos  # index in live[depth], NONE when not live
    bint counted  # depth k, trailing gap accepting: a match
    bint alive


cdef class SeqMatcher:
    """The incremental matcher of a ``cep.SeqSpec`` (``matcher.insert/expire/take/matches``)."""

    cdef int k
    cdef object guard  # of complete matches
    cdef list prefix  # per depth 0..k: the prefix guard, or None
    cdef vector[int] step_bound, step_gap, step_symbol, width
    cdef vector[vector[int]] trans
    cdef vector[vector[char]] accept  # the gaps' DFAs
    cdef vector[vector[char]] open_accept  # the open states' (a deferred gap's accepts: it is not fed)
    cdef vector[int] level  # per step: the level of its gap guard (0: none)
    cdef tuple tests  # per step: its gap guard's test, or None
    cdef vector[int] deferred  # per gap: the depth it is checked at (0: followed at its open gap)
    cdef vector[int] open_gap  # per step: the open gap its entries feed (-1: bound, or a deferred gap's)
    cdef vector[vector[int]] deferred_at  # per depth: the gaps checked there
    cdef vector[cmap[TimeKey, int]] gap_order  # per deferred gap: its present (t, key) -> step
    cdef cmap[TimeKey, int] order  # present (t, key) -> step
    cdef unordered_map[int64_t, pair[int64_t, int]] info  # key -> (t, step)
    cdef deque[Run] pool
    cdef vector[int] free_slots
    cdef int64_t serials
    cdef vector[vector[int]] all_nodes, live
    cdef unordered_map[int64_t, vector[pair[int, int64_t]]] by_key  # key -> (slot, serial)
    cdef cmap[vector[int64_t], int64_t] delta
    cdef int64_t count
    cdef vector[int64_t] keys_buffer

    def __init__(self, spec, guard=None, *, prefix_guards=None, gap_guards=None):
        automaton = spec.automaton
        tables = spec.gap_tables(gap_guards)
        self.k = automaton.bound_count
        self.guard = guard
        self.prefix = [None] * (self.k + 1)
        for j, test in (prefix_guards or {}).items():
            if not 1 <= j <= self.k:
                raise ValueError(f"a prefix guard of {j} bound steps, but the SEQ has {self.k}")
            self.prefix[j] = test
        self.step_bound = automaton.step_bound
        self.step_gap = automaton.step_gap
        self.step_symbol = automaton.step_symbol
        self.width = automaton.width
        self.trans = [list(table) for table in automaton.trans]
        self.accept = [[1 if accepting else 0 for accepting in table] for table in automaton.accept]
        self.level = tables.level
        self.tests = tables.test
        self.deferred = tables.deferred
        self.open_accept = [[1 if depth or accepting else 0 for accepting in table]
                            for depth, table in zip(tables.deferred, automaton.accept)]
        self.open_gap = [-1 if gap < 0 or tables.deferred[gap] else gap for gap in automaton.step_gap]
        self.deferred_at.resize(self.k + 1)
        for gap, depth in enumerate(tables.deferred):
            if depth:
                self.deferred_at[depth].push_back(gap)
        self.gap_order.resize(len(tables.deferred))
        self.all_nodes.resize(self.k + 1)
        self.live.resize(self.k + 1)
        self._new(NONE, -1, INT64_MIN)

    # -- the calls -------------------------------------------------------------------------------

    def insert(self, int step, int64_t key, int64_t t):
        if not 0 <= step < <int>self.step_bound.size():
            raise ValueError(f"no SEQ step {step}")
        if self.info.count(key):
            raise ValueError(f"SEQ entry key {key} inserted twice")
        cdef TimeKey at = TimeKey(t, key)
        cdef OrderIter last
        cdef bint in_order = self.order.empty()
        if not in_order:
            last = self.order.end()
            dec(last)
            in_order = at > deref(last).first
        self.order[at] = step
        self.info[key] = pair[int64_t, int](t, step)
        cdef int gap = self.step_gap[step], bound = self.step_bound[step]
        if gap >= 0 and self.deferred[gap]:
            self.gap_order[gap][at] = step
        if in_order:
            if gap >= 0:
                if not self.deferred[gap]:  # a deferred gap's entry is after every interval checked
                    self._advance_live(gap, step, key, t)
            else:
                self._extend_live(bound, key, t)
        elif gap >= 0:
            self._gap_changed(gap, step, key, t)
        else:
            self._insert_late_bound(bound, key, t)

    def expire(self, int64_t key):
        cdef unordered_map[int64_t, pair[int64_t, int]].iterator found = self.info.find(key)
        if found == self.info.end():
            raise KeyError(key)
        cdef int64_t t = deref(found).second.first
        cdef int step = deref(found).second.second
        self.info.erase(found)
        self.order.erase(TimeKey(t, key))
        cdef int gap = self.step_gap[step]
        cdef vector[pair[int, int64_t]] holders
        cdef pair[int, int64_t] slot_serial
        cdef unordered_map[int64_t, vector[pair[int, int64_t]]].iterator holder
        if gap >= 0:
            if self.deferred[gap]:
                self.gap_order[gap].erase(TimeKey(t, key))
            self._gap_changed(gap, step, key, t)
            return
        holder = self.by_key.find(key)
        if holder == self.by_key.end():
            return
        holders.swap(deref(holder).second)
        self.by_key.erase(holder)
        for slot_serial in holders:
            if self.pool[slot_serial.first].alive and self.pool[slot_serial.first].serial == slot_serial.second:
                self._remove(slot_serial.first)

    def take(self):
        cdef pair[vector[int64_t], int64_t] keys_net
        changes = []
        for keys_net in self.delta:
            keys = tuple(keys_net.first)
            change = (keys, 1 if keys_net.second > 0 else -1)
            changes.extend([change] * abs(keys_net.second))
        self.delta.clear()
        return changes

    def matches(self):
        cdef int slot
        found = []
        for slot in self.all_nodes[self.k]:
            if self.pool[slot].counted:
                self._keys(slot)
                found.append(tuple(self.keys_buffer))
        found.sort()
        return found

    def __len__(self):
        return self.count

    # -- the tree --------------------------------------------------------------------------------

    cdef int _new(self, int parent, int64_t key, int64_t t):
        """A new node under ``parent`` (NONE: the root), with its open gap in state 0."""
        cdef int slot
        if self.free_slots.empty():
            slot = self.pool.size()
            self.pool.emplace_back()  # an insertion at the end: pointers to the others stay valid
        else:
            slot = self.free_slots.back()
            self.free_slots.pop_back()
        cdef Run* node = &self.pool[slot]
        self.serials += 1
        node.key, node.t, node.last_t, node.serial = key, t, t, self.serials
        node.state = node.prev = 0
        node.depth = 0 if parent == NONE else self.pool[parent].depth + 1
        node.parent = parent
        node.first_child = node.prev_sibling = NONE
        node.next_sibling = NONE
        node.counted = False
        node.alive = True
        node.all_pos = self.all_nodes[node.depth].size()
        self.all_nodes[node.depth].push_back(slot)
        node.live_pos = NONE
        self._set_live(slot, True)
        if parent != NONE:
            node.next_sibling = self.pool[parent].first_child
            if node.next_sibling != NONE:
                self.pool[node.next_sibling].prev_sibling = slot
            self.pool[parent].first_child = slot
            self.by_key[key].push_back(pair[int, int64_t](slot, node.serial))
        self._recount(slot)
        return slot

    cdef int _extend(self, int parent, int64_t key, int64_t t) except -2:
        """A new child of ``parent`` ending with ``key`` (NONE when its prefix fails its depth's guards
        or a gap deferred to its depth)."""
        cdef int depth = self.pool[parent].depth + 1
        test = self.prefix[depth]
        complete = self.guard if depth == self.k else None
        if test is not None or complete is not None or not self.deferred_at[depth].empty():
            keys = self._path(parent, True, key)
            if test is not None and not test(keys) or complete is not None and not complete(keys):
                return NONE
            if not self._deferred_hold(keys):
                return NONE
        return self._new(parent, key, t)

    cdef void _remove(self, int slot):
        """Removes the node with its subtree (retracting its matches)."""
        cdef Run* node = &self.pool[slot]
        if node.prev_sibling != NONE:
            self.pool[node.prev_sibling].next_sibling = node.next_sibling
        else:
            self.pool[node.parent].first_child = node.next_sibling
        if node.next_sibling != NONE:
            self.pool[node.next_sibling].prev_sibling = node.prev_sibling
        self._free(slot)

    cdef void _free(self, int slot):
        cdef Run* node = &self.pool[slot]
        cdef int child = node.first_child, following
        while child != NONE:
            following = self.pool[child].next_sibling
            self._free(child)
            child = following
        if node.counted:
            self._change(slot, -1)
        cdef vector[int]* nodes = &self.all_nodes[node.depth]
        cdef int moved = nodes.back()
        nodes[0][node.all_pos] = moved
        self.pool[moved].all_pos = node.all_pos
        nodes.pop_back()
        self._set_live(slot, False)
        node.alive = False
        self.free_slots.push_back(slot)

    cdef void _set_live(self, int slot, bint live):
        cdef Run* node = &self.pool[slot]
        cdef vector[int]* nodes = &self.live[node.depth]
        cdef int moved
        if live and node.live_pos == NONE:
            node.live_pos = nodes.size()
            nodes.push_back(slot)
        elif not live and node.live_pos != NONE:
            moved = nodes.back()
            nodes[0][node.live_pos] = moved
            self.pool[moved].live_pos = node.live_pos
            nodes.pop_back()
            node.live_pos = NONE

    cdef void _keys(self, int slot):
        """The keys of the node's prefix, in order, into keys_buffer."""
        self.keys_buffer.clear()
        while self.pool[slot].parent != NONE:
            self.keys_buffer.push_back(self.pool[slot].key)
            slot = self.pool[slot].parent
        reverse(self.keys_buffer.begin(), self.keys_buffer.end())

    cdef tuple _path(self, int slot, bint extended=False, int64_t key=0):
        """The keys of the node's prefix as a tuple, followed by ``key`` when ``extended``."""
        self._keys(slot)
        if extended:
            self.keys_buffer.push_back(key)
        return tuple(self.keys_buffer)

    cdef inline int64_t _time(self, int64_t key):
        return self.info[key].first

    cdef void _recount(self, int slot):
        cdef Run* node = &self.pool[slot]
        if node.depth != self.k:
            return
        cdef bint counted = node.state != DEAD and self.accept[self.k][node.state]
        if counted != node.counted:
            node.counted = counted
            self._change(slot, 1 if counted else -1)

    cdef void _change(self, int slot, int sign):
        self.count += sign
        self._keys(slot)
        cdef int64_t net = self.delta[self.keys_buffer] + sign  # operator[] starts at 0
        if net:
            self.delta[self.keys_buffer] = net
        else:
            self.delta.erase(self.keys_buffer)

    # -- the gap states --------------------------------------------------------------------------

    cdef bint _relevant(self, tuple keys, int step, int64_t key) except -1:
        """Whether the gap entry ``key`` of ``step`` counts for a match whose bound keys start with ``keys``."""
        cdef int level = self.level[step]
        return not level or bool(self.tests[step](keys[:level], key))

    cdef bint _relevant_to(self, int slot, int step, int64_t key) except -1:
        """``_relevant`` for the node's prefix, its keys made only for a step with a gap guard."""
        return not self.level[step] or self._relevant(self._path(slot), step, key)

    cdef bint _deferred_hold(self, tuple keys) except -1:
        """Whether the gaps deferred to the depth of ``keys`` hold, each replayed over its relevant entries."""
        cdef int gap, state, step
        cdef int64_t before
        cdef OrderIter it, end
        for gap in self.deferred_at[len(keys)]:
            end = self.gap_order[gap].end()
            it = self.gap_order[gap].begin()
            if gap:
                it = self.gap_order[gap].upper_bound(TimeKey(self._time(keys[gap - 1]), INT64_MAX))
            before = self._time(keys[gap])
            state = 0
            while it != end and deref(it).first.first < before:
                step = deref(it).second
                if self._relevant(keys, step, deref(it).first.second):
                    state = self.trans[gap][state * self.width[gap] + self.step_symbol[step]]
                    if state == DEAD:
                        return False
                inc(it)
            if not self.accept[gap][state]:
                return False
        return True

    cdef void _step(self, int slot, int symbol, int64_t t):
        """Feeds the node's open gap one entry of ``symbol`` at ``t`` (>= every time fed before)."""
        cdef Run* node = &self.pool[slot]
        if t > node.last_t:
            node.prev, node.last_t = node.state, t
        if node.state != DEAD:
            node.state = self.trans[node.depth][node.state * self.width[node.depth] + symbol]
            self._recount(slot)

    cdef inline int _before(self, Run* node, int64_t t):
        """The state of the node's open gap over its entries before ``t`` (>= every time fed)."""
        return node.state if t > node.last_t else node.prev

    cdef int _advance_live(self, int gap, int step, int64_t key, int64_t t) except -1:
        cdef vector[int]* nodes = &self.live[gap]
        cdef int i, slot, symbol = self.step_symbol[step]
        cdef Run* node
        for i in range(<int>nodes.size() - 1, -1, -1):  # backwards: a removal moves a visited node
            slot = nodes[0][i]
            node = &self.pool[slot]
            if node.depth and node.t >= t:
                continue
            if node.state == DEAD:
                if t > node.last_t:
                    self._set_live(slot, False)
                continue
            if self._relevant_to(slot, step, key):
                self._step(slot, symbol, t)
        return 0

    cdef int _extend_live(self, int bound, int64_t key, int64_t t) except -1:
        cdef vector[int]* nodes = &self.live[bound]
        cdef int i, slot, state
        cdef Run* node
        for i in range(<int>nodes.size() - 1, -1, -1):
            slot = nodes[0][i]
            node = &self.pool[slot]
            if node.depth and node.t >= t:
                continue
            state = self._before(node, t)
            if node.state == DEAD and t > node.last_t:
                self._set_live(slot, False)
            elif state != DEAD and self.open_accept[bound][state]:
                self._extend(slot, key, t)
        return 0

    cdef OrderIter _after(self, Run* node):
        """The first present entry after the node's time."""
        if node.depth == 0:
            return self.order.begin()
        return self.order.upper_bound(TimeKey(node.t, INT64_MAX))

    cdef int _replay_state(self, int slot, int64_t before) except -2:
        """The state of the node's open gap over the present entries in ``(node.t, before)``."""
        cdef Run* node = &self.pool[slot]
        cdef int gap = node.depth, state = 0, step
        cdef OrderIter it = self._after(node)
        cdef tuple path = None  # the node's keys, made once if a gap guard asks for them
        while it != self.order.end() and deref(it).first.first < before and state != DEAD:
            step = deref(it).second
            if self.open_gap[step] == gap:
                if self.level[step] and path is None:
                    path = self._path(slot)
                if not self.level[step] or self._relevant(path, step, deref(it).first.second):
                    state = self.trans[gap][state * self.width[gap] + self.step_symbol[step]]
            inc(it)
        return state

    cdef int _insert_late_bound(self, int bound, int64_t key, int64_t t) except -1:
        cdef vector[int] parents = self.all_nodes[bound]  # a copy, for clarity: growing adds deeper nodes only
        cdef int slot, state, child
        for slot in parents:
            if self.pool[slot].depth == 0 or self.pool[slot].t < t:
                state = self._replay_state(slot, t)
                if state != DEAD and self.open_accept[bound][state]:
                    child = self._extend(slot, key, t)
                    if child != NONE:
                        self._rescan(child, t)
        return 0

    cdef int _gap_changed(self, int gap, int step, int64_t key, int64_t t) except -1:
        """The gap entry ``key`` of ``step`` at ``t`` left, or came out of order: the runs it is relevant to."""
        cdef int depth = self.deferred[gap]
        cdef vector[int] nodes  # a copy, for clarity: rescans change deeper levels only
        cdef int slot
        cdef tuple keys
        if not depth:
            nodes = self.all_nodes[gap]
            for slot in nodes:
                if (self.pool[slot].depth == 0 or self.pool[slot].t < t) and self._relevant_to(slot, step, key):
                    self._rescan(slot, t)
            return 0
        # The parents of the nodes checking the gap, where the gap spans t (when the gap precedes
        # the parent's last step; else their children newer than t).
        nodes = self.all_nodes[depth - 1]
        for slot in nodes:
            keys = self._path(slot)
            if (gap == 0 or self._time(keys[gap - 1]) < t) and (depth - 1 == gap or t < self._time(keys[gap])):
                self._rescan(slot, t, True, step, key)
        return 0

    cdef int _rescan(self, int slot, int64_t after, bint changed=False, int changed_step=0, int64_t changed_key=0) except -1:
        """Replays the node's open gap over the present entries and reconciles its children newer
        than ``after`` (a new node: all of them, grown recursively); when ``changed``, the gap entry
        ``changed_key`` of ``changed_step``, in a gap deferred to the children's depth, changed: only
        the children it is relevant to."""
        cdef Run* node = &self.pool[slot]
        cdef int gap = node.depth, step, state, child
        cdef int64_t t, key
        cdef unordered_map[int64_t, int] children
        cdef unordered_map[int64_t, int].iterator found
        cdef tuple keys, path = None  # the node's keys, made once if a gap guard asks for them
        child = node.first_child
        while child != NONE:
            children[self.pool[child].key] = child
            child = self.pool[child].next_sibling
        node.state = node.prev = 0
        node.last_t = node.t
        cdef OrderIter it = self._after(node)
        while it != self.order.end():
            t, key, step = deref(it).first.first, deref(it).first.second, deref(it).second
            inc(it)
            if self.open_gap[step] == gap:
                if self.level[step] and path is None:
                    path = self._path(slot)
                if not self.level[step] or self._relevant(path, step, key):
                    self._step(slot, self.step_symbol[step], t)
            elif self.step_bound[step] == gap and t > after:
                state = self._before(node, t)
                found = children.find(key)
                if state != DEAD and self.open_accept[gap][state]:
                    if found == children.end():
                        if not changed or self._relevant(self._path(slot, True, key), changed_step, changed_key):
                            child = self._extend(slot, key, t)
                            if child != NONE:
                                self._rescan(child, t)
                    elif changed:
                        keys = self._path(slot, True, key)
                        if self._relevant(keys, changed_step, changed_key) and not self._deferred_hold(keys):
                            self._remove(deref(found).second)
                elif found != children.end():
                    self._remove(deref(found).second)
        self._recount(slot)
        self._set_live(slot, node.state != DEAD or node.prev != DEAD)
        return 0
