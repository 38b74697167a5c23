# distutils: language = c++
# cython: cdivision=True
"""Compiled numeric expressions: the arithmetic, comparison and logical core of SPARQL expressions
evaluated on machine numbers, reading a row's term ids directly.

``compile_numeric(expr, fallback)`` returns a :class:`NumericExpression` for an expression built
only from variables, numeric and boolean constants, ``+ - * /``, unary ``- +``, ``= != < > <= >=``,
``&& || !``, ``ROUND``/``FLOOR``/``CEIL``/``ABS``, ``BOUND``, ``IF`` and ``COALESCE``, and the tests
of a variable's term read from its id's type bits: ``isIRI``/``isURI``, ``isBlank``, ``isLiteral``,
``isNumeric``, ``DATATYPE(?v) = <iri>`` and ``STR(?v) = "text"`` (with ``!=`` and ``sameTerm``)
(None for any other expression). Called on a row (a ``runtime.decoding.DecodedRow`` or a ``{name: term}``
mapping) it gives the same term, or raises the same ``ExpressionError``, as ``fallback`` — the
interpreted closure of ``runtime.expressions`` for the same expression, which is its twin and its
oracle (tests/runtime/test_compiled_expressions.py).

Values are C structs: xsd:integer as int64, xsd:decimal as an unscaled int64 with a scale,
xsd:float/xsd:double as a C double (a float rounded to single precision after each operation, as
``runtime.functions`` does), booleans, and an error. Inline ids (``runtime.encoding``) are read
without the dictionary; a dictionary id is read once and its value cached by id (serial numbers
are never reused): an xsd:double or xsd:float from the form the compiled dictionary stores, any
other term decoded. Whenever a value or an operation leaves what machine arithmetic does exactly —
a string, a date, an ill-typed literal, an integer overflow, a decimal division, a decimal too wide
for a double — the evaluation stops and the whole expression is handed to ``fallback`` for that row:
the result never depends on which path ran. A value passed through unchanged (``?x``,
``IF(…, ?x, …)``, ``COALESCE(?x, …)``) is returned as the original term, not a rewritten one.
Computed results become terms through ``runtime.functions.numeric_literal``, memoised by value.

The row evaluators at the end (``RowFilter``, ``RowTerms``, ``RowOrderKey``) run FILTERs, GROUP BY
keys and aggregate arguments, and ORDER BY keys on a compiled operator's rows of ids; their twins
are the same expressions on the rows' ``DecodedRow`` (tests/runtime/test_compiled_expressions.py).
"""

from cpython.ref cimport Py_INCREF, Py_XDECREF, PyObject
from cpython.tuple cimport PyTuple_New, PyTuple_SET_ITEM
from cython.operator cimport dereference as deref
from libc.math cimport floor, ceil, fabs, copysign, isnan, isinf, NAN, INFINITY
from libc.stdint cimport int64_t, uint64_t, INT64_MAX, INT64_MIN
from libc.stdlib cimport strtod
from cpython.unicode cimport PyUnicode_AsUTF8AndSize
from libc.string cimport memchr, memcmp, memcpy, strlen
from libcpp.unordered_map cimport unordered_map

from cqels_endpoint.runtime._dictionary cimport Entry, TermDictionary

from decimal import Decimal

from pyoxigraph import BlankNode, Literal, NamedNode

from cqels_endpoint.query import ast
from cqels_endpoint.runtime.decoding import DecodedRow
from cqels_endpoint.runtime.encoding import decode_inline, inline_datatype
from cqels_endpoint.runtime.functions import (
    FALSE,
    TRUE,
    ExpressionError,
    effective_boolean_value,
    literal_value,
    numeric_literal,
)
from cqels_endpoint.runtime.functions.values import ILL_TYPED, KIND_BOOLEAN, KIND_NUMERIC
from cqels_endpoint.runtime.functions.xsd import XSD_FLOAT
from cqels_endpoint.terms import XSD_DOUBLE
from cqels_endpoint.runtime.canonical import canonical_literal
from cqels_endpoint.oxigraph.terms import constant_term
from cqels_endpoint.terms import IRI, XSD_STRING
from cqels_endpoint.terms import Literal as AstLiteral
from cqels_endpoint.terms import Var

# Value kinds. OTHER: outside the compiled subset, the row goes to the fallback.
cdef enum:
    K_ERROR = 0
    K_BOOL = 1
    K_INT = 2
    K_DEC = 3
    K_FLT = 4
    K_DBL = 5
    K_DATETIME = 6
    K_OTHER = 7

# Numeric ranks follow runtime.functions (integer < decimal < float < double).
cdef int RANK_OF[8]
RANK_OF[:] = [-1, -1, 0, 1, 2, 3, -1, -1]
cdef int KIND_OF_RANK[4]
KIND_OF_RANK[:] = [K_INT, K_DEC, K_FLT, K_DBL]

# The inline id layout of runtime.encoding.
DEF TYPE_SHIFT = 58
DEF VALUE_MASK = (1 << 58) - 1
DEF INT_BIAS = 1 << 57
DEF DECIMAL_BIAS = 1 << 53
DEF INLINE_DECIMAL = 1
DEF INLINE_BOOLEAN = 2
DEF INLINE_DATETIME = 3
DEF MS_BIAS = 1 << 46
DEF TZ_BITS = 11
DEF EXACT_DOUBLE = 1 << 53  # integers up to this magnitude are exact doubles
DEF MAX_SCALE = 18
DEF CACHE_LIMIT = 1 << 16
# Dictionary id kinds (runtime.term_kinds.TermKind).
DEF ID_IRI = 0
DEF ID_BLANK_NODE = 1
DEF ID_LITERAL = 2

cdef int64_t NO_ID = INT64_MIN
# What NumericExpression.on_ids returns for an error.
cdef object FAILED = object()
cdef int64_t[19] POW10
POW10[0] = 1
for _i in range(1, 19):
    POW10[_i] = POW10[_i - 1] * 10


cdef struct Value:
    int kind
    int scale      # K_DEC: number of fraction digits; K_DATETIME: 1 with a timezone, 0 without
    int64_t i      # K_INT value, K_BOOL 0/1, K_DEC unscaled value, K_DATETIME ms since the epoch (UTC)
    double d       # K_FLT, K_DBL
    int64_t id     # a value read unchanged from the row: its id (NO_ID otherwise)
    PyObject* term  # a value read unchanged from a term (borrowed; NULL otherwise)


cdef inline Value make(int kind) noexcept:
    cdef Value v
    v.kind = kind
    v.scale = 0
    v.i = 0
    v.d = 0.0
    v.id = NO_ID
    v.term = NULL
    return v


cdef inline Value make_bool(bint b) noexcept:
    cdef Value v = make(K_BOOL)
    v.i = b
    return v


cdef inline Value make_double(int kind, double d) noexcept:
    cdef Value v = make(kind)
    v.d = <double>(<float>d) if kind == K_FLT else d
    return v


cdef inline Value make_int(int64_t i) noexcept:
    cdef Value v = make(K_INT)
    v.i = i
    return v


cdef inline Value make_dec(int64_t unscaled, int scale) noexcept:
    cdef Value v = make(K_DEC)
    v.i = unscaled
    v.scale = scale
    return v


cdef extern from *:
    """
    static inline int __builtin_add_overflow_i64(int64_t a, int64_t b, int64_t* out) { return __builtin_add_overflow(a, b, out); }
    static inline int __builtin_sub_overflow_i64(int64_t a, int64_t b, int64_t* out) { return __builtin_sub_overflow(a, b, out); }
    static inline int __builtin_mul_overflow_i64(int64_t a, int64_t b, int64_t* out) { return __builtin_mul_overflow(a, b, out); }
    """
    bint __builtin_add_overflow_i64(int64_t a, int64_t b, int64_t* out) nogil
    bint __builtin_sub_overflow_i64(int64_t a, int64_t b, int64_t* out) nogil
    bint __builtin_mul_overflow_i64(int64_t a, int64_t b, int64_t* out) nogil


cdef bint rescale(int64_t unscaled, int scale, int to_scale, int64_t* out) noexcept:
    """``unscaled`` at ``scale`` fraction digits written with ``to_scale`` >= scale; False on overflow."""
    if to_scale - scale > MAX_SCALE:
        return False
    return not __builtin_mul_overflow_i64(unscaled, POW10[to_scale - scale], out)


cdef bint as_double(Value v, double* out) noexcept:
    """A numeric value promoted to double (to single precision for float), False when the
    promotion would not be correctly rounded by one C operation."""
    if v.kind == K_FLT or v.kind == K_DBL:
        out[0] = v.d
    elif v.kind == K_INT:
        out[0] = <double>v.i  # correctly rounded, as Python's float(int)
    elif v.kind == K_DEC:
        # Two exact doubles divided once: the correctly rounded quotient, as float(Decimal).
        if v.i > EXACT_DOUBLE or v.i < -EXACT_DOUBLE or v.scale > 15:
            return False
        out[0] = <double>v.i / <double>POW10[v.scale]
    else:
        return False
    return True


cdef bint promote(Value* a, Value* b, int* rank) noexcept:
    """Both numeric values at their common rank, in place; False if not exactly representable."""
    cdef int ra = RANK_OF[a.kind], rb = RANK_OF[b.kind]
    cdef int r = ra if ra > rb else rb
    cdef double d
    cdef int64_t scaled
    rank[0] = r
    if r >= 2:
        if not as_double(a[0], &d):
            return False
        a.d = <double>(<float>d) if r == 2 else d
        if not as_double(b[0], &d):
            return False
        b.d = <double>(<float>d) if r == 2 else d
    elif r == 1:
        if a.kind == K_INT:
            if not rescale(a.i, 0, b.scale, &scaled):
                return False
            a.i, a.scale = scaled, b.scale
        elif b.kind == K_INT:
            if not rescale(b.i, 0, a.scale, &scaled):
                return False
            b.i, b.scale = scaled, a.scale
        # Two decimals: bring both to the larger scale.
        if a.scale < b.scale:
            if not rescale(a.i, a.scale, b.scale, &scaled):
                return False
            a.i, a.scale = scaled, b.scale
        elif b.scale < a.scale:
            if not rescale(b.i, b.scale, a.scale, &scaled):
                return False
            b.i, b.scale = scaled, a.scale
    return True


cdef inline bint is_numeric(int kind) noexcept:
    return K_INT <= kind <= K_DBL


cdef int ebv(Value v) noexcept:
    """Effective boolean value: 1, 0, -1 for an error, -2 when outside the subset."""
    if v.kind == K_BOOL:
        return <int>v.i
    if v.kind == K_INT or v.kind == K_DEC:
        return v.i != 0
    if v.kind == K_FLT or v.kind == K_DBL:
        return not isnan(v.d) and v.d != 0
    if v.kind == K_ERROR:
        return -1
    return -2


cdef class _Frame:
    """One evaluation: the row being read and the caches of the expression."""
    cdef object row          # tuple of ids (DecodedRow) or None
    cdef object mapping      # the {name: term} mapping when not a DecodedRow
    cdef object decoder
    cdef NumericExpression expression

    cdef object id_at(self, int slot):
        """The id the row binds at a variable slot (None: unbound, or no column of the row)."""
        position = self.expression.positions[slot]
        if position is None:
            return None
        return (<tuple>self.row)[<Py_ssize_t>position]


cdef class _Node:
    cdef Value eval(self, _Frame frame):
        raise NotImplementedError


cdef class _Constant(_Node):
    cdef Value value
    cdef object term

    def __init__(self, term):
        self.term = term
        self.value = value_of_term(term)
        self.value.term = <PyObject*>term

    cdef Value eval(self, _Frame frame):
        return self.value


cdef class _Variable(_Node):
    cdef int slot
    cdef object name

    def __init__(self, name, int slot):
        self.name = name
        self.slot = slot

    cdef Value eval(self, _Frame frame):
        cdef int64_t term_id
        cdef Value v
        if frame.row is not None:
            item = frame.id_at(self.slot)
            if item is None:
                return make(K_ERROR)
            term_id = item
            v = frame.expression.value_of_id(term_id, frame.decoder)
            v.id = term_id
            return v
        term = frame.mapping.get(self.name)
        if term is None:
            return make(K_ERROR)
        v = value_of_term(term)
        v.term = <PyObject*>term
        return v


cdef class _Bound(_Node):
    cdef int slot
    cdef object name

    def __init__(self, name, int slot):
        self.name = name
        self.slot = slot

    cdef Value eval(self, _Frame frame):
        if frame.row is not None:
            return make_bool(frame.id_at(self.slot) is not None)
        return make_bool(frame.mapping.get(self.name) is not None)


cdef class _TermTest(_Node):
    """A test of one variable's term: isIRI, isBlank, isLiteral, isNumeric (``test`` 0-3), or
    ``DATATYPE(?v) = <text>`` / ``STR(?v) = "text"`` (4, 5; ``negate`` for ``!=``). The kind comes
    from the id's type bits; an inline id's datatype and lexical form from its type bits and value,
    kept by id; a dictionary literal is decoded once (``TermDecoder``)."""
    cdef int slot, test
    cdef bint negate
    cdef object name, text
    cdef dict answers  # id -> the answer (True/False), for tests 4 and 5

    def __init__(self, name, int slot, int test, object text=None, bint negate=False):
        self.name = name
        self.slot = slot
        self.test = test
        self.text = text
        self.negate = negate
        self.answers = {}

    cdef Value eval(self, _Frame frame):
        cdef int64_t term_id
        cdef int kind
        if frame.row is None:
            term = frame.mapping.get(self.name)
            if term is None:
                return make(K_ERROR)
            return self.of_term(term)
        item = frame.id_at(self.slot)
        if item is None:
            return make(K_ERROR)
        term_id = item
        if self.test >= 4:
            answer = self.answers.get(term_id)
            if answer is None:
                answer = self.answer_of_id(term_id, frame.decoder)
                if answer is None:
                    return make(K_ERROR)
                if len(self.answers) >= CACHE_LIMIT:
                    self.answers.clear()
                self.answers[term_id] = answer
            return make_bool(answer)
        if term_id < 0:  # an inline literal: numeric unless boolean or dateTime
            kind = (term_id >> TYPE_SHIFT) & 0x1F
            return make_bool(self.test == 2 or (self.test == 3 and kind != INLINE_BOOLEAN and kind != INLINE_DATETIME))
        kind = (term_id >> TYPE_SHIFT) & 0x1F
        if self.test == 0:
            return make_bool(kind == ID_IRI)
        if self.test == 1:
            return make_bool(kind == ID_BLANK_NODE)
        if self.test == 2:
            return make_bool(kind == ID_LITERAL)
        if kind != ID_LITERAL:
            return make_bool(False)
        return self.numeric(frame.expression.value_of_id(term_id, frame.decoder))

    cdef Value numeric(self, Value v):
        if is_numeric(v.kind):
            return make_bool(True)
        if v.kind == K_BOOL:
            return make_bool(False)
        return make(K_OTHER)  # ill-typed or another datatype: the interpreter decides

    cdef Value of_term(self, term):
        cdef type cls = type(term)
        if self.test == 0:
            return make_bool(cls is NamedNode)
        if self.test == 1:
            return make_bool(cls is BlankNode)
        if self.test == 2:
            return make_bool(cls is Literal)
        if self.test == 3:
            return self.numeric(value_of_term(term)) if cls is Literal else make_bool(False)
        answer = self.answer_of_term(term)
        return make(K_ERROR) if answer is None else make_bool(answer)

    cdef object answer_of_id(self, int64_t term_id, decoder):
        cdef int kind = (term_id >> TYPE_SHIFT) & 0x1F
        if term_id < 0:
            if self.test == 4:
                return (inline_datatype(kind).value == self.text) != self.negate
            return (decode_inline(term_id).value == self.text) != self.negate
        if kind != ID_LITERAL and not (self.test == 5 and kind == ID_IRI):
            return None
        return self.answer_of_term(decoder.decode(term_id))

    cdef object answer_of_term(self, term):
        """True/False, or None for an error (DATATYPE of a non-literal, STR of a blank node)."""
        cdef type cls = type(term)
        if self.test == 4:
            return None if cls is not Literal else (term.datatype.value == self.text) != self.negate
        if cls is not Literal and cls is not NamedNode:
            return None
        return (term.value == self.text) != self.negate


cdef class _Arithmetic(_Node):
    cdef _Node left, right
    cdef Py_UCS4 op

    def __init__(self, str op, _Node left, _Node right):
        self.op = op[0]
        self.left = left
        self.right = right

    cdef Value eval(self, _Frame frame):
        cdef Value a = self.left.eval(frame)
        if a.kind == K_OTHER:
            return a
        cdef Value b = self.right.eval(frame)
        if b.kind == K_OTHER:
            return b
        if a.kind == K_DATETIME or b.kind == K_DATETIME:
            return make(K_OTHER)
        if a.kind == K_ERROR or b.kind == K_ERROR or not is_numeric(a.kind) or not is_numeric(b.kind):
            # A non-numeric operand (a boolean) is a type error, as runtime.functions.numeric says.
            return make(K_ERROR)
        cdef int rank
        cdef int64_t result
        cdef double x, y
        if self.op == u'/' and a.kind == K_INT and b.kind == K_INT:
            return make(K_OTHER)  # integer division yields an 18-digit truncated decimal
        if not promote(&a, &b, &rank):
            return make(K_OTHER)
        if rank == 0 or rank == 1:
            if self.op == u'+':
                if __builtin_add_overflow_i64(a.i, b.i, &result):
                    return make(K_OTHER)
            elif self.op == u'-':
                if __builtin_sub_overflow_i64(a.i, b.i, &result):
                    return make(K_OTHER)
            elif self.op == u'*':
                if __builtin_mul_overflow_i64(a.i, b.i, &result):
                    return make(K_OTHER)
                if rank == 1:
                    if a.scale + b.scale > MAX_SCALE:
                        return make(K_OTHER)
                    return make_dec(result, a.scale + b.scale)
            else:
                return make(K_OTHER)  # decimal division truncates at 18 digits: the interpreter does it
            return make_int(result) if rank == 0 else make_dec(result, a.scale)
        x, y = a.d, b.d
        if self.op == u'+':
            return make_double(KIND_OF_RANK[rank], x + y)
        if self.op == u'-':
            return make_double(KIND_OF_RANK[rank], x - y)
        if self.op == u'*':
            return make_double(KIND_OF_RANK[rank], x * y)
        if y == 0:
            if isnan(x) or x == 0:
                return make_double(KIND_OF_RANK[rank], NAN)
            return make_double(KIND_OF_RANK[rank], copysign(INFINITY, x) * copysign(1.0, y))
        return make_double(KIND_OF_RANK[rank], x / y)


cdef class _Compare(_Node):
    cdef _Node left, right
    cdef int op  # 0 =, 1 !=, 2 <, 3 >, 4 <=, 5 >=

    def __init__(self, int op, _Node left, _Node right):
        self.op = op
        self.left = left
        self.right = right

    cdef Value eval(self, _Frame frame):
        cdef Value a = self.left.eval(frame)
        if a.kind == K_OTHER:
            return a
        cdef Value b = self.right.eval(frame)
        if b.kind == K_OTHER:
            return b
        if a.kind == K_ERROR or b.kind == K_ERROR:
            return make(K_ERROR)
        cdef int rank = 0, order
        if a.kind == K_DATETIME and b.kind == K_DATETIME and a.scale == b.scale:
            # Both with a timezone or both without: instants compare (XSD §3.2.7.4); otherwise the
            # order may be indeterminate, which the interpreter decides.
            order = (a.i > b.i) - (a.i < b.i)
        elif not is_numeric(a.kind) or not is_numeric(b.kind):
            return make(K_OTHER)  # booleans and mixed kinds: RDFterm-equal and friends stay interpreted
        elif not promote(&a, &b, &rank):
            return make(K_OTHER)
        elif rank >= 2:
            if isnan(a.d) or isnan(b.d):
                return make_bool(self.op == 1)  # NaN is unordered and unequal to everything
            order = (a.d > b.d) - (a.d < b.d)
        else:
            order = (a.i > b.i) - (a.i < b.i)
        if self.op == 0:
            return make_bool(order == 0)
        if self.op == 1:
            return make_bool(order != 0)
        if self.op == 2:
            return make_bool(order < 0)
        if self.op == 3:
            return make_bool(order > 0)
        if self.op == 4:
            return make_bool(order <= 0)
        return make_bool(order >= 0)


cdef class _Connective(_Node):
    """``&&`` and ``||`` with the error truth table of §17.2: the decisive value (false for ``&&``,
    true for ``||``) wins over an error on the other side."""
    cdef _Node left, right
    cdef int decisive

    def __init__(self, bint decisive, _Node left, _Node right):
        self.decisive = decisive
        self.left = left
        self.right = right

    cdef Value eval(self, _Frame frame):
        cdef int l = ebv(self.left.eval(frame))
        if l == -2:
            return make(K_OTHER)
        if l == self.decisive:
            return make_bool(self.decisive)
        cdef int r = ebv(self.right.eval(frame))
        if r == -2:
            return make(K_OTHER)
        if r == -1:
            return make(K_ERROR)
        if r == self.decisive:
            return make_bool(self.decisive)
        return make(K_ERROR) if l == -1 else make_bool(not self.decisive)


cdef class _Not(_Node):
    cdef _Node operand

    def __init__(self, _Node operand):
        self.operand = operand

    cdef Value eval(self, _Frame frame):
        cdef int value = ebv(self.operand.eval(frame))
        if value == -2:
            return make(K_OTHER)
        if value == -1:
            return make(K_ERROR)
        return make_bool(not value)


cdef class _Unary(_Node):
    """Unary ``-``/``+`` and ROUND, FLOOR, CEIL, ABS: a numeric value of the operand's rank."""
    cdef _Node operand
    cdef int op  # 0 -, 1 +, 2 ROUND, 3 FLOOR, 4 CEIL, 5 ABS

    def __init__(self, int op, _Node operand):
        self.op = op
        self.operand = operand

    cdef Value eval(self, _Frame frame):
        cdef Value v = self.operand.eval(frame)
        if v.kind == K_OTHER or v.kind == K_ERROR:
            return v
        if v.kind == K_DATETIME:
            return make(K_OTHER)
        if not is_numeric(v.kind):
            return make(K_ERROR)
        cdef int kind = v.kind
        if kind == K_INT:
            if self.op == 0 or (self.op == 5 and v.i < 0):
                if v.i == INT64_MIN:
                    return make(K_OTHER)
                return make_int(-v.i)
            return make_int(v.i)
        if kind == K_DEC:
            return self._decimal(v)
        return make_double(kind, self._double(v.d))

    cdef double _double(self, double x):
        cdef double f
        if self.op == 0:
            return -x
        if self.op == 1:
            return x
        if self.op == 5:
            return fabs(x)
        if isnan(x) or isinf(x):
            return x
        if self.op == 2:
            # fn:round: halves toward positive infinity; round(-0.4) is -0.
            f = floor(x)
            f = f + 1 if x - f >= 0.5 else f
            return copysign(f, x) if f == 0 else f
        if self.op == 3:
            return copysign(floor(x), x)
        return copysign(ceil(x), x)

    cdef Value _decimal(self, Value v):
        cdef int64_t unit, whole, rest
        if self.op == 0:
            return make_dec(-v.i, v.scale)
        if self.op == 1:
            return make_dec(v.i, v.scale)
        if self.op == 5:
            return make_dec(-v.i if v.i < 0 else v.i, v.scale)
        unit = POW10[v.scale]
        whole = v.i // unit  # C division truncates toward zero: step down to the floor below
        rest = v.i - whole * unit
        if rest < 0:
            whole -= 1
            rest += unit
        # whole = floor(value), rest = (value - floor) * unit, 0 <= rest < unit
        if self.op == 2:
            if 2 * rest >= unit:
                whole += 1
        elif self.op == 4:
            if rest != 0:
                whole += 1
        return make_dec(whole, 0)


cdef class _If(_Node):
    cdef _Node condition, then, otherwise

    def __init__(self, _Node condition, _Node then, _Node otherwise):
        self.condition = condition
        self.then = then
        self.otherwise = otherwise

    cdef Value eval(self, _Frame frame):
        cdef int test = ebv(self.condition.eval(frame))
        if test == -2:
            return make(K_OTHER)
        if test == -1:
            return make(K_ERROR)
        return self.then.eval(frame) if test else self.otherwise.eval(frame)


cdef class _Coalesce(_Node):
    cdef list args

    def __init__(self, list args):
        self.args = args

    cdef Value eval(self, _Frame frame):
        cdef Value v
        for arg in self.args:
            v = (<_Node>arg).eval(frame)
            if v.kind != K_ERROR:
                return v
        return make(K_ERROR)


cdef bint read_double(str lexical, double* out):
    """An xsd:double lexical form (runtime.functions.xsd.parse_double's grammar) read by strtod,
    which rounds correctly as Python's float() does; False when the form is not in the grammar
    (which is ASCII)."""
    cdef Py_ssize_t n
    if not lexical.isascii():
        return False
    cdef const char* chars = PyUnicode_AsUTF8AndSize(lexical, &n)
    return read_double_chars(chars, n, out)


cdef bint read_double_chars(const char* s, Py_ssize_t n, double* out) noexcept:
    """``read_double`` on the form's UTF-8 bytes (a byte outside ASCII is outside the grammar)."""
    cdef Py_ssize_t i = 0, digits = 0
    cdef char buffer[65]
    if (n == 3 and memcmp(s, b"INF", 3) == 0) or (n == 4 and memcmp(s, b"+INF", 4) == 0):
        out[0] = INFINITY
        return True
    if n == 4 and memcmp(s, b"-INF", 4) == 0:
        out[0] = -INFINITY
        return True
    if n == 3 and memcmp(s, b"NaN", 3) == 0:
        out[0] = NAN
        return True
    if n == 0 or n > 64:
        return False
    if s[0] == c'+' or s[0] == c'-':
        i = 1
    while i < n and c'0' <= s[i] <= c'9':
        i += 1
        digits += 1
    if i < n and s[i] == c'.':
        i += 1
        while i < n and c'0' <= s[i] <= c'9':
            i += 1
            digits += 1
    if digits == 0:
        return False
    if i < n and (s[i] == c'e' or s[i] == c'E'):
        i += 1
        if i < n and (s[i] == c'+' or s[i] == c'-'):
            i += 1
        if i == n:
            return False
        while i < n and c'0' <= s[i] <= c'9':
            i += 1
    if i != n:
        return False
    memcpy(buffer, s, n)
    buffer[n] = 0
    out[0] = strtod(buffer, NULL)
    return True


cdef const char* DOUBLE_SUFFIX = b'"^^<http://www.w3.org/2001/XMLSchema#double>'
cdef const char* FLOAT_SUFFIX = b'"^^<http://www.w3.org/2001/XMLSchema#float>'


cdef bint binary_of_form(TermDictionary dictionary, int64_t term_id, Value* out) except -1:
    """The value ``value_of_term`` gives a dictionary xsd:double or xsd:float literal, read from
    its stored form (``"lexical"^^<datatype>``) without building the term; False for any other
    term (or a lexical form with an escape), which is then decoded."""
    cdef Entry* entry = dictionary._entry(term_id)
    cdef const char* form
    cdef Py_ssize_t n, end, suffix
    cdef int kind
    cdef double d
    if entry == NULL:
        return False
    form = (<const char*>entry) + sizeof(Entry)
    n = entry.length
    if n < 2 or form[0] != c'"':
        return False
    suffix = strlen(DOUBLE_SUFFIX)
    if n > suffix and memcmp(form + n - suffix, DOUBLE_SUFFIX, suffix) == 0:
        kind = K_DBL
    else:
        suffix = strlen(FLOAT_SUFFIX)
        if n > suffix and memcmp(form + n - suffix, FLOAT_SUFFIX, suffix) == 0:
            kind = K_FLT
        else:
            return False
    end = n - suffix
    if memchr(form + 1, c'\\', end - 1) != NULL:
        return False
    if not read_double_chars(form + 1, end - 1, &d):
        out[0] = make(K_OTHER)
    else:
        out[0] = make_double(kind, d)
    return True


cdef Value value_of_term(term):
    """The value of a term as read by runtime.functions (K_OTHER outside the subset)."""
    cdef Value v
    cdef double d
    if type(term) is not Literal:
        return make(K_OTHER)
    datatype = term.datatype.value
    if datatype == XSD_DOUBLE or datatype == XSD_FLOAT:
        # The common stream literal, read without the regex and the cache of literal_value.
        if not read_double(term.value, &d):
            return make(K_OTHER)
        return make_double(K_DBL if datatype == XSD_DOUBLE else K_FLT, d)
    kind, rank, value = literal_value(term)
    if value is ILL_TYPED or value is None:
        return make(K_OTHER)
    if kind == KIND_BOOLEAN:
        return make_bool(value is True)
    if kind != KIND_NUMERIC:
        return make(K_OTHER)
    if rank == 0:
        if not INT64_MIN < value <= INT64_MAX:
            return make(K_OTHER)
        return make_int(value)
    if rank == 1:
        return decimal_value(value)
    v = make(KIND_OF_RANK[rank])
    v.d = value
    return v


cdef Value decimal_value(value):
    sign, digits, exponent = value.as_tuple()
    if not isinstance(exponent, int) or len(digits) > 18:
        return make(K_OTHER)
    cdef int64_t unscaled = 0
    for digit in digits:
        unscaled = unscaled * 10 + <int>digit
    cdef int scale
    if exponent > 0:
        if exponent + len(digits) > 18:
            return make(K_OTHER)
        unscaled *= POW10[exponent]
        scale = 0
    else:
        scale = -exponent
        if scale > MAX_SCALE:
            return make(K_OTHER)
    return make_dec(-unscaled if sign else unscaled, scale)


ctypedef unordered_map[uint64_t, PyObject*] TermMemo


cdef void _forget_terms(TermMemo* memo) noexcept:
    """Empties a memo of terms, releasing its references."""
    for item in memo[0]:
        Py_XDECREF(item.second)
    memo.clear()


cdef class NumericExpression:
    """A compiled expression (see the module docstring): ``expression(row) -> term``."""
    cdef _Node root
    cdef list names               # variable name of each slot
    cdef readonly object fallback
    cdef object positions_of      # the positions dict the slots were resolved for
    cdef list positions           # slot -> column position or None
    cdef unordered_map[int64_t, Value] values  # dictionary id -> value (no term pointers)
    # The terms of computed results, by value (each map holds a reference to its terms).
    cdef TermMemo integer_terms   # int64 value -> term
    cdef TermMemo float_terms     # bits of the double -> term
    cdef TermMemo double_terms
    cdef dict decimal_terms       # (unscaled, scale) -> term
    cdef _Frame ids_frame         # the frame of every run_ids

    def __init__(self, fallback):
        self.fallback = fallback
        self.ids_frame = _Frame.__new__(_Frame)
        self.ids_frame.expression = self
        self.names = []
        self.positions_of = None
        self.positions = []
        self.decimal_terms = {}

    def __dealloc__(self):
        _forget_terms(&self.integer_terms)
        _forget_terms(&self.float_terms)
        _forget_terms(&self.double_terms)

    cdef int slot(self, name):
        if name in self.names:
            return self.names.index(name)
        self.names.append(name)
        return len(self.names) - 1

    cdef Value value_of_id(self, int64_t term_id, decoder):
        cdef int code
        cdef int64_t field
        cdef Value v
        if term_id < 0:
            code = (term_id >> TYPE_SHIFT) & 0x1F
            field = term_id & VALUE_MASK
            if code == INLINE_DECIMAL:
                return make_dec((field >> 4) - DECIMAL_BIAS, <int>(field & 0xF))
            if code == INLINE_BOOLEAN:
                return make_bool(field != 0)
            if code == INLINE_DATETIME:
                v = make(K_DATETIME)
                v.i = (field >> TZ_BITS) - MS_BIAS
                v.scale = (field & ((1 << TZ_BITS) - 1)) != 0
                return v
            return make_int(field - INT_BIAS)  # every other inline type is an xsd integer type
        cdef unordered_map[int64_t, Value].iterator found = self.values.find(term_id)
        if found != self.values.end():
            return deref(found).second
        dictionary = decoder.dictionary
        if type(dictionary) is not TermDictionary or not binary_of_form(<TermDictionary>dictionary, term_id, &v):
            v = value_of_term(decoder.decode(term_id))
        if self.values.size() >= CACHE_LIMIT:
            self.values.clear()
        self.values[term_id] = v
        return v

    cdef Value run(self, row):
        cdef _Frame frame = _Frame.__new__(_Frame)
        frame.expression = self
        if type(row) is DecodedRow:
            positions = row._positions
            if positions is not self.positions_of:
                self.positions = [positions.get(name) for name in self.names]
                self.positions_of = positions
            frame.row = row._row
            frame.decoder = row._decoder
        else:
            frame.row = None
            frame.mapping = row
        return self.root.eval(frame)

    def __call__(self, row):
        cdef Value v = self.run(row)
        if v.kind == K_OTHER:
            return self.fallback(row)
        if v.kind == K_ERROR:
            raise ExpressionError
        return self.term(v, row._decoder if v.id != NO_ID else None)

    cdef Value run_ids(self, RowView view):
        """``run`` on the view's row of ids, without its DecodedRow. One frame serves every such
        evaluation: an evaluation never re-enters its own expression."""
        cdef _Frame frame = self.ids_frame
        cdef Value v
        if view.positions is not self.positions_of:
            self.positions = [view.positions.get(name) for name in self.names]
            self.positions_of = view.positions
        frame.row = view.row
        frame.decoder = view.decoder
        v = self.root.eval(frame)
        frame.row = frame.decoder = None
        return v

    cdef object on_ids(self, RowView view):
        """The term ``self(view.mapping())`` gives, or ``FAILED`` where it raises
        ``ExpressionError``; the view's DecodedRow is built only when the fallback runs."""
        cdef Value v = self.run_ids(view)
        if v.kind == K_OTHER:
            try:
                return self.fallback(view.mapping())
            except ExpressionError:
                return FAILED
        if v.kind == K_ERROR:
            return FAILED
        return self.term(v, view.decoder)

    cdef bint test_ids(self, RowView view) except -1:
        """``test`` (FILTER semantics) on the view's row; its DecodedRow built only when the fallback runs."""
        cdef Value v = self.run_ids(view)
        cdef int value
        if v.kind != K_OTHER:
            value = ebv(v)
            if value != -2:
                return value == 1
        try:
            return effective_boolean_value(self.fallback(view.mapping()))
        except ExpressionError:
            return False

    def passes(self, row):
        """FILTER semantics on the result: its effective boolean value, an error being false."""
        return self.test(row)

    cdef bint test(self, row) except -1:
        cdef Value v = self.run(row)
        cdef int value
        if v.kind != K_OTHER:
            value = ebv(v)
            if value != -2:
                return value == 1
        try:
            return effective_boolean_value(self.fallback(row))
        except ExpressionError:
            return False

    cdef object term(self, Value v, decoder):
        """The term of a value; ``decoder`` decodes a value read unchanged from a row of ids."""
        if v.term != NULL:
            return <object>v.term
        if v.id != NO_ID:
            return decoder.decode(v.id)
        if v.kind == K_BOOL:
            return TRUE if v.i else FALSE
        cdef uint64_t bits
        cdef TermMemo* memo
        cdef TermMemo.iterator found
        if v.kind == K_DEC:
            key = (v.i, v.scale)
            term = self.decimal_terms.get(key)
            if term is None:
                term = numeric_literal(1, Decimal(v.i).scaleb(-v.scale))
                if len(self.decimal_terms) >= CACHE_LIMIT:
                    self.decimal_terms.clear()
                self.decimal_terms[key] = term
            return term
        # Integers, floats and doubles: C++ maps from the value's 64 bits (a float is a rounded double).
        if v.kind == K_INT:
            memo = &self.integer_terms
            bits = <uint64_t>v.i
        else:
            memo = &self.float_terms if v.kind == K_FLT else &self.double_terms
            memcpy(&bits, &v.d, sizeof(double))
        found = memo.find(bits)
        if found != memo.end():
            return <object>deref(found).second
        term = numeric_literal(0, v.i) if v.kind == K_INT else numeric_literal(RANK_OF[v.kind], v.d)
        if memo.size() >= CACHE_LIMIT:
            _forget_terms(memo)
        Py_INCREF(term)
        memo[0][bits] = <PyObject*>term
        return term


_COMPARISONS = {"=": 0, "!=": 1, "<": 2, ">": 3, "<=": 4, ">=": 5}
_UNARY_BUILTINS = {"ROUND": 2, "FLOOR": 3, "CEIL": 4, "ABS": 5}
_TERM_TESTS = {"ISIRI": 0, "ISURI": 0, "ISBLANK": 1, "ISLITERAL": 2, "ISNUMERIC": 3}


cdef class _Builder:
    cdef NumericExpression expression
    cdef bint has_variable

    def __init__(self, NumericExpression expression):
        self.expression = expression
        self.has_variable = False

    cdef _Node build(self, expr):
        """The node of ``expr``, or None when it is outside the compiled subset."""
        cdef _Node left, right
        if isinstance(expr, Var):
            self.has_variable = True
            return _Variable(expr.name, self.expression.slot(expr.name))
        if isinstance(expr, AstLiteral):
            term = canonical_literal(constant_term(expr))  # the Store's form, as runtime.expressions.to_term
            if value_of_term(term).kind == K_OTHER:
                return None
            return _Constant(term)
        if isinstance(expr, ast.BinaryOp):
            if expr.op in ("=", "!="):
                test = self.term_test(expr.left, expr.right, expr.op == "!=")
                if test is not None:
                    return test
            left = self.build(expr.left)
            right = self.build(expr.right) if left is not None else None
            if right is None:
                return None
            if expr.op in ("+", "-", "*", "/"):
                return _Arithmetic(expr.op, left, right)
            if expr.op in _COMPARISONS:
                return _Compare(_COMPARISONS[expr.op], left, right)
            if expr.op == "&&":
                return _Connective(False, left, right)
            if expr.op == "||":
                return _Connective(True, left, right)
            return None
        if isinstance(expr, ast.UnaryOp):
            left = self.build(expr.operand)
            if left is None:
                return None
            if expr.op == "!":
                return _Not(left)
            if expr.op in ("-", "+"):
                return _Unary(0 if expr.op == "-" else 1, left)
            return None
        if isinstance(expr, ast.BuiltinCall):
            return self.builtin(expr.name.upper(), expr.args)
        return None

    cdef _Node term_test(self, a, b, bint negate):
        """``DATATYPE(?v) = <iri>`` or ``STR(?v) = "text"`` (either side first), else None."""
        if not isinstance(a, ast.BuiltinCall):
            a, b = b, a
        if not isinstance(a, ast.BuiltinCall) or len(a.args) != 1 or not isinstance(a.args[0], Var):
            return None
        function = a.name.upper()
        if function == "DATATYPE" and isinstance(b, IRI):
            test, text = 4, b.value
        elif function == "STR" and isinstance(b, AstLiteral) and b.language is None and b.datatype in (None, XSD_STRING):
            test, text = 5, b.value
        else:
            return None
        self.has_variable = True
        name = a.args[0].name
        return _TermTest(name, self.expression.slot(name), test, text, negate)

    cdef _Node builtin(self, str name, args):
        cdef list nodes
        if name in _TERM_TESTS:
            if len(args) != 1 or not isinstance(args[0], Var):
                return None
            self.has_variable = True
            return _TermTest(args[0].name, self.expression.slot(args[0].name), _TERM_TESTS[name])
        if name == "SAMETERM" and len(args) == 2:
            return self.term_test(args[0], args[1], False)
        if name == "BOUND":
            if len(args) != 1 or not isinstance(args[0], Var):
                return None
            self.has_variable = True
            return _Bound(args[0].name, self.expression.slot(args[0].name))
        nodes = []
        for arg in args:
            node = self.build(arg)
            if node is None:
                return None
            nodes.append(node)
        if name in _UNARY_BUILTINS and len(nodes) == 1:
            return _Unary(_UNARY_BUILTINS[name], nodes[0])
        if name == "IF" and len(nodes) == 3:
            return _If(nodes[0], nodes[1], nodes[2])
        if name == "COALESCE" and nodes:
            return _Coalesce(nodes)
        return None


def compile_numeric(expr, fallback):
    """A :class:`NumericExpression` for ``expr`` (with ``fallback``, its interpreted closure), or
    None when ``expr`` is outside the compiled subset or reads no variable (constants are folded by
    the interpreter already)."""
    cdef NumericExpression expression = NumericExpression(fallback)
    cdef _Builder builder = _Builder(expression)
    root = builder.build(expr)
    if root is None or not builder.has_variable:
        return None
    expression.root = root
    return expression


cdef class Descending:
    """Inverts the order of an ORDER BY key (``DESC(…)`` inside one tuple key): the compiled twin
    of ``runtime.expressions.DescendingPython``, compared in C when rows are sorted or bisected."""
    cdef readonly tuple key

    def __init__(self, tuple key):
        self.key = key

    def __richcmp__(self, other, int op):
        if not isinstance(other, Descending):
            return NotImplemented
        cdef tuple mine = self.key, theirs = (<Descending>other).key
        if op == 0:  # <
            return theirs < mine
        if op == 1:  # <=
            return theirs <= mine
        if op == 2:  # ==
            return mine == theirs
        if op == 3:  # !=
            return mine != theirs
        if op == 4:  # >
            return theirs > mine
        return theirs >= mine

    def __hash__(self):
        return hash(self.key)


cdef class Conjunction:
    """A FILTER of several numeric expressions (``compile_filter``): a row passes when every one
    passes, each with the FILTER semantics of :meth:`NumericExpression.passes`, tested in order."""
    cdef list expressions

    def __init__(self, list expressions):
        self.expressions = expressions

    def passes(self, row):
        for expression in self.expressions:
            if not (<NumericExpression>expression).test(row):
                return False
        return True

# RowTerms item modes.
cdef enum:
    _TERM = 0   # an expression's term (None for an error)
    _BOUND = 1  # True when a column is bound, else None: a plain variable whose term nobody reads
    _ROW = 2    # the row itself


cdef class RowView:
    """The row of ids an evaluator reads (one view per evaluator, set for each row), and its
    DecodedRow, built on first demand for the closures and fallbacks that read a mapping."""

    def __init__(self, dict positions, decoder):
        self.positions = positions
        self.decoder = decoder

    cdef void start(self, tuple row) noexcept:
        self.row = row
        self.decoded = None

    cdef void finish(self) noexcept:
        self.row = None
        self.decoded = None

    cdef object mapping(self):
        if self.decoded is None:
            self.decoded = DecodedRow(self.positions, self.row, self.decoder)
        return self.decoded


cdef object _term_on_ids(object expression, RowView view):
    """``expression`` (compiled or an interpreted closure) on the view's row, ``FAILED`` for an error."""
    if type(expression) is NumericExpression:
        return (<NumericExpression>expression).on_ids(view)
    try:
        return expression(view.mapping())
    except ExpressionError:
        return FAILED


cdef class RowFilter:
    """A FILTER's conjunction on rows of ids: what ``compile_filter``'s function (its twin) says of
    ``DecodedRow(positions, row, decoder)``. The expressions are tested in order, each with the
    FILTER semantics (an error is false), the first false one deciding; a compiled one reads the
    ids, and the DecodedRow is built only for a closure or a fallback."""

    def __init__(self, list expressions, dict positions, decoder):
        self.expressions = expressions
        self.view = RowView(positions, decoder)

    cdef bint passes(self, tuple row) except -1:
        cdef RowView view = self.view
        view.start(row)
        try:
            for expression in self.expressions:
                if type(expression) is NumericExpression:
                    if not (<NumericExpression>expression).test_ids(view):
                        return False
                    continue
                try:
                    if not effective_boolean_value(expression(view.mapping())):
                        return False
                except ExpressionError:
                    return False
            return True
        finally:
            view.finish()

    def __call__(self, row):
        return self.passes(row if type(row) is tuple else tuple(row))


cdef class RowTerms:
    """``row of ids -> tuple``: per item, the term of an expression on the row (``None`` for an
    error or an unbound result), whether a column is bound (``True``/``None``), or the row itself.
    GROUP BY keys and aggregate arguments, as ``shared.aggregate._evaluate`` computes them on a
    ``DecodedRow`` (its twin), without building one unless an interpreted closure runs."""

    def __init__(self, list items, dict positions, decoder):
        """``items``: ``("term", compiled expression)``, ``("bound", variable name)`` or ``("row", None)``."""
        self.modes = []
        self.items = []
        for mode, item in items:
            if mode == "term":
                self.modes.append(_TERM)
                self.items.append(item)
            elif mode == "bound":
                self.modes.append(_BOUND)
                column = positions.get(item)
                self.items.append(-1 if column is None else column)
            elif mode == "row":
                self.modes.append(_ROW)
                self.items.append(None)
            else:
                raise ValueError(f"unknown row item mode {mode!r}")
        self.view = RowView(positions, decoder)

    cdef tuple of(self, tuple row, int64_t* errors):
        """The items on ``row``; ``errors`` counts those that were an error (or unbound)."""
        self.view.start(row)
        try:
            return self._of(row, errors)
        finally:
            self.view.finish()

    cdef tuple _of(self, tuple row, int64_t* errors):
        cdef Py_ssize_t i, count = len(self.modes), column
        cdef int mode
        cdef tuple out = PyTuple_New(count)
        for i in range(count):
            mode = <int>self.modes[i]
            if mode == _TERM:
                value = _term_on_ids(self.items[i], self.view)
                if value is FAILED:
                    value = None
            elif mode == _BOUND:
                column = <Py_ssize_t>self.items[i]
                value = None if column < 0 or row[column] is None else True
            else:
                value = row
            if value is None:
                errors[0] += 1
            Py_INCREF(value)
            PyTuple_SET_ITEM(out, i, value)
        return out

    def __call__(self, tuple row):
        cdef int64_t errors = 0
        return self.of(row, &errors)


cdef class RowOrderKey:
    """``row of ids -> key`` for ORDER BY conditions: the tuple ``compile_order_key``'s closure
    gives on ``DecodedRow(positions, row, decoder)`` (its twin), equal part for part. A condition
    that is a plain variable reads its column's id, and the key part of an id is computed once
    (``order_key`` of its term, wrapped in ``Descending`` for DESC) and kept by id: dictionary
    serial numbers are never reused and inline ids are their values, so a kept part stays right.
    Other conditions evaluate their expression on the row and take ``order_key`` of the result."""

    def __init__(self, list conditions, dict positions, decoder, order_key):
        """``conditions``: ``(compiled expression, variable name or None, descending)`` each; a
        variable name makes the condition a plain variable (the expression is then unused)."""
        cdef list unbound = []
        self.columns = []
        self.expressions = []
        self.descending = []
        self.caches = []
        for expression, variable, descending in conditions:
            if variable is not None:
                column = positions.get(variable)
                self.columns.append(-1 if column is None else column)
                self.expressions.append(None)
                self.caches.append({})
            else:
                self.columns.append(None)
                self.expressions.append(expression)
                self.caches.append(None)
            self.descending.append(bool(descending))
            unbound.append(Descending(order_key(None)) if descending else order_key(None))
        self.unbound = tuple(unbound)
        self.view = RowView(positions, decoder)
        self.order_key = order_key

    cdef object part(self, Py_ssize_t index, tuple row):
        cdef object cached = self.caches[index]
        cdef dict cache
        cdef Py_ssize_t column
        if cached is not None:
            cache = <dict>cached
            column = <Py_ssize_t>self.columns[index]
            if column < 0:
                return self.unbound[index]
            item = row[column]
            if item is None:
                return self.unbound[index]
            part = cache.get(item)
            if part is not None:
                return part
            try:
                part = self.order_key(self.view.decoder.decode(item))
            except ExpressionError:
                return self.unbound[index]
            if self.descending[index]:
                part = Descending(part)
            if len(cache) >= CACHE_LIMIT:
                cache.clear()
            cache[item] = part
            return part
        term = _term_on_ids(self.expressions[index], self.view)
        if term is FAILED:
            return self.unbound[index]
        try:
            part = self.order_key(term)
        except ExpressionError:
            return self.unbound[index]
        return Descending(part) if self.descending[index] else part

    cdef tuple key_of(self, tuple row, object lineage, bint with_lineage):
        """The key of ``row``, with ``lineage`` appended when ``with_lineage`` (the top-k's key)."""
        cdef Py_ssize_t i, count = len(self.caches)
        cdef tuple out = PyTuple_New(count + 1 if with_lineage else count)
        self.view.start(row)
        try:
            for i in range(count):
                part = self.part(i, row)
                Py_INCREF(part)
                PyTuple_SET_ITEM(out, i, part)
        finally:
            self.view.finish()
        if with_lineage:
            Py_INCREF(lineage)
            PyTuple_SET_ITEM(out, count, lineage)
        return out

    def __call__(self, row):
        return self.key_of(row if type(row) is tuple else tuple(row), None, False)
