# distutils: language = c++
"""Compiled incremental GROUP BY / aggregates (algebra ``Group``): one output per changed group per
tick, each aggregate kept up to date in O(1) or O(log n) per delta. The contract (emission,
lineages, dictionary references) is stated in ``shared.aggregate``, whose ``_evaluate`` (the twin's)
gives a row's key and arguments; here ``runtime._expressions.RowTerms`` computes the same on the
row's ids, without a ``DecodedRow``, and reads a plain ``COUNT(?v)``'s argument as a bound test. A
group encodes its key terms once, at its first emission, and holds a reference to each id, so that
its rows take references instead of encoding the keys again. The per-tick loop and the groups
are here, in :class:`_GroupCore`, behind a ``Node`` (``_base``): batches come in through C, each
row read as a tuple of ids. The twin
(``reference/aggregate.py``) recomputes each changed group from its members instead; the results
are those of ``runtime.aggregates`` on both sides.

Every aggregate of a group is a cdef class whose ``add(value)`` returns a handle that the row keeps
(by lineage) and gives back to ``remove`` when it leaves, so a retraction neither re-reads nor
re-hashes its value:

- ``COUNT``: a counter (:class:`_Count`), or the multiplicity of each value for DISTINCT.
- ``SUM``/``AVG`` (:class:`_Sum`, :class:`_Avg`): the exact totals of the values'
  ``runtime.aggregates.summand`` amounts — Python ints for the integers and for the floats and
  doubles (in units of 2⁻¹⁰⁷⁴), an exact Decimal for the decimals — plus the count of values per
  numeric rank and of NaN/±INF, so the result (``sum_literal``: rounded once) and its datatype
  follow every insert and retraction with no residue. O(1) per delta; with DISTINCT a value counts
  on its first copy only.
- ``MIN``, ``MAX``, ``SAMPLE``, ``MEDIAN``, ``GROUP_CONCAT`` (:class:`_Bag`): the distinct values
  as an ordered multiset in ``value_key`` order, each with its multiplicity: sorted buckets of 32
  to 256 entries, the last entry of each bucket (bisected to find a value's bucket) and a Fenwick
  tree over the buckets' weights (order statistics for MEDIAN). A number carries its value as a
  C double, which orders two numbers whenever their doubles differ; other comparisons use
  ``value_key``, computed when first needed. A new or vanishing value costs O(log n) comparisons
  and a move inside one bucket (a split or merge, once per ~100 such deltas at most, rebuilds the
  tree in O(n/128)); another copy of a present value only moves a count. MIN/MAX/SAMPLE read the
  first or last entry, MEDIAN walks the tree to the lower middle. GROUP_CONCAT caches each
  bucket's joined string: a tick rebuilds the strings of the buckets it changed and joins the
  bucket strings, so only that final join (and the result term) is linear in the group.
"""

from cpython.long cimport PyLong_AsLongLongAndOverflow
from cpython.ref cimport Py_DECREF, Py_INCREF, PyObject
from cpython.tuple cimport PyTuple_GET_ITEM, PyTuple_GET_SIZE
from libc.stdint cimport int64_t, uintptr_t

from cqels_endpoint.operators._rowrecords cimport RowRecord, RowRecords

from cqels_endpoint.operators._base cimport Batch, Node

from decimal import Decimal

from pyoxigraph import Literal

from cqels_endpoint.operators.base import Delta
from cqels_endpoint.operators.shared.aggregate import GroupAggregateBase
from cqels_endpoint.runtime.aggregates import (
    SLOT_BINARY,
    SLOT_DECIMAL,
    SLOT_INTEGER,
    average_literal,
    exact_sum_literal,
    exact_sum_state,
    is_numeric,
    merged_exact_sums,
    sum_literal,
    value_key,
)
from cqels_endpoint.runtime.aggregates import summand as summand_of
from cqels_endpoint.runtime.expressions import ExpressionError
from cqels_endpoint.runtime.functions import ILL_TYPED, KIND_NUMERIC, integer_literal, literal_value, string_value
from cqels_endpoint.runtime.functions.xsd import EXACT

_ZERO = integer_literal(0)
_new_tuple = tuple.__new__  # builds a Delta without the namedtuple's Python-level __new__

# Aggregate kinds, by name.
cdef enum:
    _COUNT, _SUM, _AVG, _MIN, _MAX, _SAMPLE, _MEDIAN, _GROUP_CONCAT, _EXACT_SUM, _SUM_OF_EXACT, _AVG_OF_EXACT

_KINDS = {
    "COUNT": _COUNT, "SUM": _SUM, "AVG": _AVG, "MIN": _MIN, "MAX": _MAX, "SAMPLE": _SAMPLE,
    "MEDIAN": _MEDIAN, "GROUP_CONCAT": _GROUP_CONCAT,
    "EXACT_SUM": _EXACT_SUM, "SUM_OF_EXACT": _SUM_OF_EXACT, "AVG_OF_EXACT": _AVG_OF_EXACT,
}

# Bucket sizes of the ordered bags: a bucket over _MAX_BUCKET entries is split in two halves, one
# under _MIN_BUCKET is merged into a neighbour (and the result split again if too long).
cdef Py_ssize_t _MAX_BUCKET = 256
# The most COUNT totals whose inline ids a group core keeps.
cdef Py_ssize_t _COUNT_IDS = 1 << 16
cdef Py_ssize_t _MIN_BUCKET = 32


cdef class _Aggregate:
    cdef object add(self, object value):
        raise NotImplementedError

    cdef int remove(self, object handle) except -1:
        raise NotImplementedError

    cdef object result(self):
        raise NotImplementedError


cdef class _Count(_Aggregate):
    cdef object add(self, object value):
        # The handle says only whether the value counted (not the value: COUNT(*)'s is the row).
        if value is not None:
            self.total += 1
            return True
        return None

    cdef int remove(self, object handle) except -1:
        if handle is not None:
            self.total -= 1
        return 0

    cdef object result(self):
        return integer_literal(self.total)


cdef class _CountDistinct(_Aggregate):
    def __cinit__(self):
        self.counts = {}

    cdef object add(self, object value):
        if value is not None:
            self.counts[value] = <int64_t>self.counts.get(value, 0) + 1
        return value

    cdef int remove(self, object handle) except -1:
        cdef int64_t seen
        if handle is not None:
            seen = self.counts[handle]
            if seen == 1:
                del self.counts[handle]
            else:
                self.counts[handle] = seen - 1
        return 0

    cdef object result(self):
        return integer_literal(len(self.counts))


cdef class _Summand:
    pass


cdef _Summand _new_summand(object value):
    cdef _Summand summand = _Summand.__new__(_Summand)
    summand.value = value
    try:
        summand.rank, summand.slot, summand.amount = summand_of(value)
    except ExpressionError:
        summand.slot = -1
    return summand


cdef class _Sum(_Aggregate):
    def __cinit__(self, bint distinct):
        self.counts = {} if distinct else None
        self.integers = 0
        self.decimals = Decimal(0)
        self.binary = 0

    cdef object add(self, object value):
        cdef _Summand summand
        if value is None:
            self.errors += 1
            return None
        if self.counts is None:
            summand = _new_summand(value)
        else:
            summand = self.counts.get(value)
            if summand is not None:
                summand.count += 1
                return summand
            summand = self.counts[value] = _new_summand(value)
            summand.count = 1
        self._apply(summand, 1)
        return summand

    cdef int remove(self, object handle) except -1:
        cdef _Summand summand
        if handle is None:
            self.errors -= 1
            return 0
        summand = <_Summand>handle
        if self.counts is not None:
            summand.count -= 1
            if summand.count:
                return 0
            del self.counts[summand.value]
        return self._apply(summand, -1)

    cdef int _apply(self, _Summand summand, int sign) except -1:
        if summand.slot < 0:
            self.invalid += sign
            return 0
        self.ranks[summand.rank] += sign
        self.slots[summand.slot] += sign
        if summand.slot == SLOT_INTEGER:
            self.integers = self.integers + summand.amount if sign > 0 else self.integers - summand.amount
        elif summand.slot == SLOT_DECIMAL:
            if sign > 0:
                self.decimals = EXACT.add(self.decimals, summand.amount)
            else:
                self.decimals = EXACT.subtract(self.decimals, summand.amount)
        elif summand.slot == SLOT_BINARY:
            self.binary = self.binary + summand.amount if sign > 0 else self.binary - summand.amount
        return 0

    cdef int _rank(self):
        cdef int rank = 3
        while rank > 0 and self.ranks[rank] == 0:
            rank -= 1
        return rank

    cdef object _total(self):
        return sum_literal(
            self._rank(), self.integers, self.decimals, self.binary, self.slots[3], self.slots[4], self.slots[5]
        )

    cdef object result(self):
        if self.errors or self.invalid:
            return None
        return self._total()


cdef class _Avg(_Sum):
    cdef object result(self):
        cdef int64_t counted = self.ranks[0] + self.ranks[1] + self.ranks[2] + self.ranks[3] + self.invalid
        if counted == 0:  # no argument evaluated, errors or not: Avg(M) = 0 where Count(M) = 0
            return _ZERO
        if self.errors or self.invalid:
            return None
        try:
            return average_literal(self._total(), counted)
        except ExpressionError:
            return None


cdef class _ExactSum(_Sum):
    cdef object result(self):
        if self.invalid:
            return None
        count = self.ranks[0] + self.ranks[1] + self.ranks[2] + self.ranks[3]
        # The errors go into the state: the merge applies SUM's or AVG's rule to them.
        return exact_sum_literal(
            count, self._rank(), self.integers, self.decimals, self.binary, self.slots[3], self.slots[4], self.slots[5],
            self.errors,
        )


cdef class _MergedSums(_Aggregate):
    """SUM_OF_EXACT / AVG_OF_EXACT: the partitions' exact states (``_ExactSum``) of one group,
    added up; few per group (one per partition), so the total is recomputed from them."""

    def __cinit__(self, bint average):
        self.average = average
        self.states = {}

    cdef object add(self, object value):
        if value is None:
            self.errors += 1
            return None
        try:
            state = exact_sum_state(value)
        except ExpressionError:
            self.invalid += 1
            return False
        self.states[state] = self.states.get(state, 0) + 1
        return state

    cdef int remove(self, object handle) except -1:
        if handle is None:
            self.errors -= 1
        elif handle is False:
            self.invalid -= 1
        elif self.states[handle] == 1:
            del self.states[handle]
        else:
            self.states[handle] -= 1
        return 0

    cdef object result(self):
        if self.errors or self.invalid:
            return None
        try:
            return merged_exact_sums([state for state, count in self.states.items() for _ in range(count)], self.average)
        except ExpressionError:
            return None


cdef class _Entry:
    pass


cdef _Entry _new_entry(object term):
    cdef _Entry entry = _Entry.__new__(_Entry)
    entry.term = term
    if type(term) is Literal:
        kind, _rank, value = literal_value(term)
        if kind == KIND_NUMERIC and value is not ILL_TYPED and value == value:
            try:
                entry.approx = float(value)  # correctly rounded, hence monotone
                entry.numeric = True
            except OverflowError:  # an integer beyond the doubles: its key orders it
                pass
    return entry


cdef inline object _key(_Entry entry):
    if entry.key is None:
        entry.key = value_key(entry.term)
    return entry.key


cdef inline bint _before(_Entry first, _Entry second) except -1:
    """Whether ``first`` comes before ``second`` in value_key order. Two numbers whose doubles
    differ are in the order of their doubles (rounding is monotone), read from the entries without
    a Python comparison; anything else compares value_keys."""
    if first.numeric and second.numeric and first.approx != second.approx:
        return first.approx < second.approx
    return _key(first) < _key(second)


cdef inline _Entry _last(list bucket):
    return <_Entry>bucket[len(bucket) - 1]


cdef inline Py_ssize_t _position(list bucket, _Entry entry) except -1:
    """The index of the first entry of ``bucket`` not before ``entry``."""
    cdef Py_ssize_t low = 0, high = len(bucket), middle
    while low < high:
        middle = (low + high) >> 1
        if _before(<_Entry>bucket[middle], entry):
            low = middle + 1
        else:
            high = middle
    return low


cdef class _Bag(_Aggregate):
    def __cinit__(self, int kind, bint distinct, object separator):
        self.kind = kind
        self.distinct = distinct
        self.separator = separator
        self.entries = {}
        self.buckets = []
        self.maxes = []
        self.texts = []

    # ------------------------------------------------------------------ values

    cdef object add(self, object value):
        cdef _Entry entry
        if value is None:
            self.errors += 1
            return None
        entry = self.entries.get(value)
        if entry is None:
            entry = self.entries[value] = _new_entry(value)
            entry.count = 1
            if self.kind == _GROUP_CONCAT:
                try:
                    entry.text = string_value(value)[0]
                except ExpressionError:
                    self.textless += 1
            self._insert(entry)
            return entry
        entry.count += 1
        if not self.distinct:
            self.size += 1
            self._reweigh(self._bucket(entry), 1)
        return entry

    cdef int remove(self, object handle) except -1:
        cdef _Entry entry
        if handle is None:
            self.errors -= 1
            return 0
        entry = <_Entry>handle
        entry.count -= 1
        if entry.count == 0:
            del self.entries[entry.term]
            if self.kind == _GROUP_CONCAT and entry.text is None:
                self.textless -= 1
            self._delete(entry)
        elif not self.distinct:
            self.size -= 1
            self._reweigh(self._bucket(entry), -1)
        return 0

    cdef object result(self):
        cdef list buckets = self.buckets
        if self.kind == _SAMPLE:  # errors are ignored
            return (<_Entry>buckets[0][0]).term if buckets else None
        if self.errors:
            return None
        if self.kind == _GROUP_CONCAT:
            return None if self.textless else Literal(self._concat())
        if not buckets:
            return None
        first = (<_Entry>buckets[0][0]).term
        last = _last(buckets[len(buckets) - 1]).term
        if self.kind == _MIN:
            return first
        if self.kind == _MAX:
            return last
        # MEDIAN: numerics sort before every other literal and after IRIs and blank nodes, so
        # checking both ends checks every value.
        if not (is_numeric(first) and is_numeric(last)):
            return None
        return self._select((self.size - 1) // 2).term

    # ------------------------------------------------------------------ buckets

    cdef Py_ssize_t _bucket(self, _Entry entry) except -1:
        """The first bucket whose last entry is not before ``entry`` (the last bucket if none)."""
        cdef Py_ssize_t low = 0, high = len(self.maxes) - 1, middle
        cdef bint before
        while low < high:
            middle = (low + high) >> 1
            # The doubles of the last entries sit in one C array: no entry is read when they decide.
            if entry.numeric and self.max_numeric[middle] and self.max_approx[middle] != entry.approx:
                before = self.max_approx[middle] < entry.approx
            else:
                before = _before(<_Entry>self.maxes[middle], entry)
            if before:
                low = middle + 1
            else:
                high = middle
        return low

    cdef int _set_max(self, Py_ssize_t index, _Entry entry, bint new) except -1:
        """Bucket ``index`` ends with ``entry``; ``new``: the bucket was just inserted at ``index``."""
        if new:
            self.maxes.insert(index, entry)
            self.max_approx.insert(self.max_approx.begin() + index, entry.approx)
            self.max_numeric.insert(self.max_numeric.begin() + index, entry.numeric)
        else:
            self.maxes[index] = entry
            self.max_approx[index] = entry.approx
            self.max_numeric[index] = entry.numeric
        return 0

    cdef int _drop_max(self, Py_ssize_t index) except -1:
        del self.maxes[index]
        self.max_approx.erase(self.max_approx.begin() + index)
        self.max_numeric.erase(self.max_numeric.begin() + index)
        return 0

    cdef int _insert(self, _Entry entry) except -1:
        cdef list bucket
        cdef Py_ssize_t index, position
        self.size += 1  # a new entry weighs 1, with or without DISTINCT
        if not self.buckets:
            self.buckets.append([entry])
            self._set_max(0, entry, True)
            self.texts.append(None)
            self.weights.push_back(1)
            return self._rebuild()
        index = self._bucket(entry)
        bucket = self.buckets[index]
        position = _position(bucket, entry)
        bucket.insert(position, entry)
        if position == len(bucket) - 1:
            self._set_max(index, entry, False)
        if len(bucket) > _MAX_BUCKET:
            self._split(index)
            return self._rebuild()
        return self._reweigh(index, 1)

    cdef int _delete(self, _Entry entry) except -1:
        cdef Py_ssize_t index = self._bucket(entry), neighbour
        cdef list bucket = self.buckets[index]
        cdef Py_ssize_t position = _position(bucket, entry)
        del bucket[position]
        self.size -= 1  # the last copy weighs 1, with or without DISTINCT
        if not bucket:
            del self.buckets[index]
            self._drop_max(index)
            del self.texts[index]
            self.weights.erase(self.weights.begin() + index)
            return self._rebuild()
        if position == len(bucket):
            self._set_max(index, _last(bucket), False)
        if len(bucket) < _MIN_BUCKET and len(self.buckets) > 1:
            neighbour = index - 1 if index + 1 == len(self.buckets) else index
            (<list>self.buckets[neighbour]).extend(self.buckets[neighbour + 1])
            del self.buckets[neighbour + 1]
            self._drop_max(neighbour)
            del self.texts[neighbour + 1]
            self.weights.erase(self.weights.begin() + neighbour + 1)
            self.weights[neighbour] = self._weight(self.buckets[neighbour])
            self.texts[neighbour] = None
            if len(self.buckets[neighbour]) > _MAX_BUCKET:
                self._split(neighbour)
            return self._rebuild()
        return self._reweigh(index, -1)

    cdef int _split(self, Py_ssize_t index) except -1:
        cdef list bucket = self.buckets[index]
        cdef Py_ssize_t half = len(bucket) // 2
        cdef list upper = bucket[half:]
        del bucket[half:]
        self.buckets.insert(index + 1, upper)
        self._set_max(index, _last(bucket), False)
        self._set_max(index + 1, _last(upper), True)
        self.texts[index] = None
        self.texts.insert(index + 1, None)
        self.weights[index] = self._weight(bucket)
        self.weights.insert(self.weights.begin() + index + 1, self._weight(upper))
        return 0

    cdef int64_t _weight(self, list bucket) except -1:
        cdef _Entry entry
        cdef int64_t total = 0
        if self.distinct:
            return len(bucket)
        for entry in bucket:
            total += entry.count
        return total

    cdef int _reweigh(self, Py_ssize_t index, int64_t delta) except -1:
        """Bucket ``index`` gained ``delta`` weight (its entries are already updated)."""
        cdef size_t node = index + 1
        self.texts[index] = None
        self.weights[index] += delta
        while node < self.tree.size():
            self.tree[node] += delta
            node += node & (~node + 1)
        return 0

    cdef int _rebuild(self) except -1:
        """The Fenwick tree from the buckets' weights, after buckets were split, merged or dropped."""
        cdef size_t count = self.weights.size(), node, parent
        self.tree.assign(count + 1, 0)
        for node in range(1, count + 1):
            self.tree[node] += self.weights[node - 1]
            parent = node + (node & (~node + 1))
            if parent <= count:
                self.tree[parent] += self.tree[node]
        return 0

    cdef _Entry _select(self, int64_t rank):
        """The entry holding the 0-based position ``rank`` of the values in order (counts included)."""
        cdef size_t count = self.weights.size(), node = 0, step = 1, following
        cdef _Entry entry
        cdef list bucket
        cdef int64_t weight
        while step * 2 <= count:
            step *= 2
        while step:
            following = node + step
            if following <= count and self.tree[following] <= rank:
                node = following
                rank -= self.tree[following]
            step >>= 1
        bucket = self.buckets[node]
        if self.weights[node] == len(bucket):  # every entry weighs 1: index it
            return <_Entry>bucket[rank]
        for entry in bucket:
            weight = 1 if self.distinct else entry.count
            if rank < weight:
                return entry
            rank -= weight
        raise AssertionError("the Fenwick tree disagrees with the buckets")

    cdef object _concat(self):
        cdef str separator = self.separator
        cdef list texts = self.texts, pieces
        cdef Py_ssize_t index
        cdef _Entry entry
        for index in range(len(texts)):
            if texts[index] is None:
                pieces = []
                for entry in self.buckets[index]:
                    if self.distinct or entry.count == 1:
                        pieces.append(entry.text)
                    else:
                        pieces.extend([entry.text] * entry.count)
                texts[index] = separator.join(pieces)
        return separator.join(texts)


cdef inline bint _one_leaf(object lineage, int64_t* leaf) except -1:
    """Whether ``lineage`` is one leaf id (a tuple of one int64), written to ``leaf``."""
    cdef int overflow = 0
    if type(lineage) is not tuple or PyTuple_GET_SIZE(lineage) != 1:
        return False
    item = <object>PyTuple_GET_ITEM(lineage, 0)
    if type(item) is not int:
        return False
    leaf[0] = PyLong_AsLongLongAndOverflow(item, &overflow)
    return overflow == 0


cdef class _Group:
    pass


cdef class _GroupCore:
    def __init__(self, owner):
        # Keys and arguments as owner._evaluate (the twin's) gives them. A plain COUNT's argument
        # only counts when bound: a plain variable's is read as a bound test, not decoded.
        self.keys_of = RowTerms([("term", compute) for compute in owner._keys], owner._positions, owner._decoder)
        arguments = []
        for spec in owner._specs:
            if spec.star:
                arguments.append(("row", None))
            elif spec.name == "COUNT" and not spec.distinct and spec.variable is not None:
                arguments.append(("bound", spec.variable))
            else:
                arguments.append(("term", spec.argument))
        self.arguments_of = RowTerms(arguments, owner._positions, owner._decoder)
        self.dictionary = owner._dictionary
        self.encode = self.dictionary.encode
        for spec in owner._specs:
            self.kinds.push_back(_KINDS[spec.name])
            self.distinct.push_back(spec.distinct)
        self.separators = [" " if spec.separator is None else spec.separator for spec in owner._specs]
        self.named = list(owner._named)
        self.groups = {}
        self.rows = {}
        self.count_ids = {}
        self.counting = self.kinds.size() <= 8 * sizeof(uintptr_t)
        for i in range(self.kinds.size()):
            if self.kinds[i] != _COUNT or self.distinct[i]:
                self.counting = False
        self.changed = []
        self.to_release = []
        self.releasing = []
        self.implicit = None
        if owner._implicit is not None:
            self.implicit = self._new_group(owner._implicit)
            self.groups[self.implicit.key] = self.implicit
            self.implicit.changed = True
            self.changed.append(self.implicit)

    def __cinit__(self):
        self.leaf_rows = new RowRecords()

    def __dealloc__(self):
        if self.leaf_rows != NULL:
            self._forget_leaf_rows()
            del self.leaf_rows

    cdef void _forget_leaf_rows(self) noexcept:
        """Releases the references the leaf records hold and empties them."""
        cdef size_t record
        cdef RowRecord* held
        for record in range(self.leaf_rows.size()):
            held = &self.leaf_rows.at(record)
            Py_DECREF(<object>held.group)
            if not self.counting:
                Py_DECREF(<object><PyObject*>held.handles)
        self.leaf_rows.clear()

    cdef _Group _new_group(self, tuple key):
        cdef _Group group = _Group.__new__(_Group)
        cdef size_t i
        cdef int kind
        cdef list aggregates = []
        for i in range(self.kinds.size()):
            kind = self.kinds[i]
            if kind == _COUNT:
                aggregates.append(_CountDistinct() if self.distinct[i] else _Count())
            elif kind == _SUM:
                aggregates.append(_Sum(self.distinct[i]))
            elif kind == _AVG:
                aggregates.append(_Avg(self.distinct[i]))
            elif kind == _EXACT_SUM:
                aggregates.append(_ExactSum(self.distinct[i]))
            elif kind == _SUM_OF_EXACT or kind == _AVG_OF_EXACT:
                aggregates.append(_MergedSums(kind == _AVG_OF_EXACT))
            else:
                aggregates.append(_Bag(kind, self.distinct[i], self.separators[i]))
        group.key = key
        group.aggregates = aggregates
        return group

    cdef int on_batch(self, list deltas) except -1:
        cdef tuple delta
        for item in deltas:
            delta = <tuple>item  # a Delta: a tuple subclass, read as a tuple
            self.add(<tuple>delta[0], <int64_t>delta[1], delta[2])
        return 0

    cdef int add(self, tuple row, int64_t sign, object lineage) except -1:
        cdef tuple arguments, entry
        cdef list handles
        cdef _Group group
        cdef Py_ssize_t i, count = self.kinds.size()
        cdef dict groups = self.groups
        cdef int64_t key_errors = 0
        if sign > 0:
            key = self.keys_of.of(row, &key_errors)  # an error makes a key component unbound, not an error
            arguments = self.arguments_of.of(row, &self.errors)
            group = groups.get(key)
            if group is None:
                group = groups[key] = self._new_group(key)
            handles = [(<_Aggregate>group.aggregates[i]).add(arguments[i]) for i in range(count)]
            self._keep(lineage, group, handles)
            group.rows += 1
        else:
            entry = self._take(lineage)
            group = <_Group>entry[0]
            handles = <list>entry[1]
            group.rows -= 1
            for i in range(count):
                (<_Aggregate>group.aggregates[i]).remove(handles[i])
        if not group.changed:
            group.changed = True
            self.changed.append(group)
        return 0

    cdef int _keep(self, object lineage, _Group group, list handles) except -1:
        """Remembers the group and handles of the row of ``lineage``: in ``leaf_rows`` when the
        lineage is one leaf (as bits when counting), else in ``rows``."""
        cdef int64_t leaf
        cdef RowRecord record
        cdef Py_ssize_t i
        if not _one_leaf(lineage, &leaf) or self.leaf_rows.full():
            self.rows[lineage] = (group, handles)
            return 0
        record.leaf = leaf
        record.group = <PyObject*>group
        if self.counting:
            record.handles = 0
            for i in range(len(handles)):
                if handles[i] is not None:
                    record.handles |= (<uintptr_t>1) << i
        else:
            record.handles = <uintptr_t><PyObject*>handles
        self.leaf_rows.add(record)
        Py_INCREF(group)
        if not self.counting:
            Py_INCREF(handles)
        return 0

    cdef tuple _take(self, object lineage):
        """Forgets the row of ``lineage``: its ``(group, handles)``."""
        cdef int64_t leaf
        cdef Py_ssize_t found, i
        cdef RowRecord record
        cdef object group, handles
        if _one_leaf(lineage, &leaf):
            found = self.leaf_rows.find(leaf)
            if found >= 0:
                record = self.leaf_rows.take(found)
                group = <object>record.group
                Py_DECREF(group)  # the record's reference: ``group`` holds its own
                if self.counting:
                    handles = [True if (record.handles >> i) & 1 else None for i in range(self.kinds.size())]
                else:
                    handles = <object><PyObject*>record.handles
                    Py_DECREF(handles)
                return (group, handles)
        return self.rows.pop(lineage)

    cdef list on_tick_end(self):
        cdef list out = [], terms
        cdef tuple row, results
        cdef _Group group
        cdef _Aggregate aggregate
        encode = self.encode
        incref = self.dictionary.incref
        # Release what left two ticks ago: the last tick's -1 rows may still be decoded.
        self.dictionary.decref_many(self.releasing)
        self.releasing = []
        for group in self.changed:
            group.changed = False
            if group.rows == 0 and group is not self.implicit:
                del self.groups[group.key]
                self._forget(group, out)
                continue
            if self.counting:
                # Plain COUNTs: the totals stand for their terms, and their ids are inline ones, kept.
                results = tuple([(<_Count>aggregate).total for aggregate in group.aggregates])
            else:
                terms = [aggregate.result() for aggregate in group.aggregates]
                results = tuple(terms)
            if group.row is not None and group.results == results:
                continue  # the same results, hence the same row: nothing to emit
            if group.key_ids is None:
                # Encoded once per group: its rows take a reference to each key id, not a new encoding.
                group.key_ids = tuple([None if term is None else encode(term) for term in
                                       [group.key[position] for position in self.named]])
            for term_id in group.key_ids:
                if term_id is not None:
                    incref(term_id)
            if self.counting:
                row = group.key_ids + tuple([self._count_id(total) for total in results])
            else:
                row = group.key_ids + tuple([None if term is None else encode(term) for term in terms])
            if group.row is None:
                self.serial += 1
                group.lineage = (self.serial,)
                self.emitted += 1
            else:
                out.append(_new_tuple(Delta, (group.row, -1, group.lineage)))
                self._release(group.row)
            group.row = row
            group.results = results
            out.append(_new_tuple(Delta, (row, 1, group.lineage)))
        self.changed = []
        self.releasing, self.to_release = self.to_release, []
        return out

    cdef object _count_id(self, int64_t total):
        """The id of the integer ``total`` (COUNT's result), encoded once while it is inline."""
        term_id = self.count_ids.get(total)
        if term_id is None:
            term_id = self.encode(integer_literal(total))
            if term_id >= 0:
                return term_id  # a dictionary id: each row holds its own reference
            if len(self.count_ids) >= _COUNT_IDS:
                self.count_ids.clear()
            self.count_ids[total] = term_id
        return term_id

    cdef int _release(self, tuple row) except -1:
        for term_id in row:
            if term_id is not None:
                self.to_release.append(term_id)
        return 0

    cdef int _forget(self, _Group group, list out) except -1:
        """A group whose last row left: its row retracted into ``out``, its ids (the row's and the
        group's key ids) released when the next tick punctuates."""
        if group.row is not None:
            out.append(_new_tuple(Delta, (group.row, -1, group.lineage)))
            self._release(group.row)
            group.row = None
            self.emitted -= 1
        if group.key_ids is not None:
            self._release(group.key_ids)
            group.key_ids = None
        return 0

    cdef int close(self) except -1:
        cdef _Group group
        self.dictionary.decref_many(self.releasing)
        self.dictionary.decref_many(self.to_release)
        for group in self.groups.values():
            if group.row is not None:
                self.dictionary.decref_many([term_id for term_id in group.row if term_id is not None])
                group.row = None
            if group.key_ids is not None:
                self.dictionary.decref_many([term_id for term_id in group.key_ids if term_id is not None])
                group.key_ids = None
        self.releasing, self.to_release, self.emitted = [], [], 0
        return 0

    def live_rows(self):
        return len(self.rows) + self.leaf_rows.size()


cdef class _GroupNode(Node):
    """The operator's C half: input batches go to the core row by row, its tick's output goes
    downstream as one batch."""

    cdef int push(self, int port, Batch batch) except -1:
        cdef Py_ssize_t i, count = batch.count()
        cdef _GroupCore core = self._core
        self.inputs_seen += count
        for i in range(count):
            core.add(batch.row_tuple(i), batch.signs[i], batch.lineage_tuple(i))
        return 0

    cdef int tick_end(self, int64_t tau) except -1:
        return self.emit_deltas(self._core.on_tick_end(), self.out)

    def on_batch(self, port, list deltas):
        self.inputs_seen += len(deltas)
        self._core.on_batch(deltas)


class GroupAggregate(_GroupNode, GroupAggregateBase):
    """The incremental aggregation operator (see the module docstring)."""

    def __init__(self, *args, **kwargs):
        GroupAggregateBase.__init__(self, *args, **kwargs)
        self._core = _GroupCore(self)
        self.out = Batch(len(self.schema))

    def close(self):
        (<_GroupCore>self._core).close()

    def _groups_emitted(self):
        return (<_GroupCore>self._core).emitted

    def counters(self):
        # The core evaluates the arguments (shared._evaluate is the twin's), so it counts their errors.
        core = <_GroupCore>self._core
        return {**GroupAggregateBase.counters(self), "errors": core.errors, "live_rows": core.live_rows()}
