# distutils: language = c++
# cython: cdivision=False
"""Compiled inline-id codec: the same ids and lexical forms as the pure-Python functions of
runtime/encoding.py (the layout is documented there), without regexes or datetime objects.

cdivision stays off so ``//`` and ``%`` floor like Python's on the negative millisecond counts of
dates before 1970.
"""

from cpython.unicode cimport PyUnicode_AsUTF8AndSize
from libc.stdint cimport int64_t, uint64_t
from libc.stdio cimport snprintf
from libc.string cimport memcmp

import pyoxigraph as ox

cdef extern from *:
    """
    // Typed, so that arithmetic on them stays in C (a DEF this large would be a Python int).
    #define CQELS_VALUE_MASK ((int64_t)((1ULL << 58) - 1))
    #define CQELS_INT_BIAS ((int64_t)(1LL << 57))
    #define CQELS_DECIMAL_BIAS ((int64_t)(1LL << 53))
    #define CQELS_MS_BIAS ((int64_t)(1LL << 46))
    """
    const int64_t VALUE_MASK "CQELS_VALUE_MASK"
    const int64_t INT_BIAS "CQELS_INT_BIAS"
    const int64_t DECIMAL_BIAS "CQELS_DECIMAL_BIAS"
    const int64_t MS_BIAS "CQELS_MS_BIAS"

include "_inline_layout.pxi"

DEF MS_PER_DAY = 86400000

cdef str XSD = "http://www.w3.org/2001/XMLSchema#"
cdef object _Literal = ox.Literal

# The local name (after XSD) of the datatype of each type bits value, as encoding.InlineType
# numbers them.
_NAMES = (
    "integer", "decimal", "boolean", "dateTime", "long", "int", "short", "byte",
    "nonNegativeInteger", "positiveInteger", "nonPositiveInteger", "negativeInteger",
    "unsignedLong", "unsignedInt", "unsignedShort", "unsignedByte",
)
cdef bytes _ENCODED_NAMES = b"".join(name.encode("ascii") for name in _NAMES)
cdef const char* _LOCAL_NAMES[16]
cdef Py_ssize_t[16] _LOCAL_LENGTHS
cdef Py_ssize_t _offset = 0
for _code, _name in enumerate(_NAMES):
    _LOCAL_NAMES[_code] = <const char*>_ENCODED_NAMES + _offset
    _LOCAL_LENGTHS[_code] = len(_name)
    _offset += len(_name)
# Datatype IRI → type bits, and type bits → the datatype NamedNode decode puts in the literal.
cdef dict _CODES = {XSD + name: code for code, name in enumerate(_NAMES)}
cdef dict _DATATYPES = {code: ox.NamedNode(XSD + name) for code, name in enumerate(_NAMES)}
cdef int[12] _DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]


cdef inline int64_t _inline(int64_t code, int64_t field) noexcept nogil:
    return <int64_t>((<uint64_t>1 << 63) | (<uint64_t>code << TYPE_SHIFT) | <uint64_t>field)


cdef inline int _digit(unsigned char c) noexcept nogil:
    # ASCII digits only (a UTF-8 byte of a non-ASCII digit is never one): other digits would not
    # survive the round trip.
    return c - 48 if 48 <= c <= 57 else -1


# Bounds of each integer type by its type bits, clipped to the 58-bit range (DECIMAL, BOOLEAN and
# DATETIME have none).
cdef int64_t[16] _LOW
cdef int64_t[16] _HIGH
for _code, (_low, _high) in enumerate((
    (None, None), (0, 0), (0, 0), (0, 0), (None, None), (-(1 << 31), (1 << 31) - 1), (-(1 << 15), (1 << 15) - 1),
    (-128, 127), (0, None), (1, None), (None, 0), (None, -1), (0, None), (0, (1 << 32) - 1), (0, 65535), (0, 255),
)):
    _LOW[_code] = -(1 << 57) if _low is None else _low
    _HIGH[_code] = (1 << 57) - 1 if _high is None else _high


cdef int64_t _inline_integer(const unsigned char* s, Py_ssize_t n, int code) noexcept nogil:
    cdef Py_ssize_t start = 0, i
    cdef int64_t value = 0
    cdef int d
    if n and s[0] == c'-':
        start = 1
    if n == start or n - start > 18:  # 18 digits always fit int64; the range check does the rest
        return 0
    if s[start] == c'0' and (n - start > 1 or start == 1):  # leading zero, or "-0"
        return 0
    for i in range(start, n):
        d = _digit(s[i])
        if d < 0:
            return 0
        value = value * 10 + d
    if start:
        value = -value
    if value < _LOW[code] or value > _HIGH[code]:
        return 0
    return _inline(code, value + INT_BIAS)


cdef int64_t _inline_decimal(const unsigned char* s, Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t i = 0, whole_start, digits = 0, scale = 0
    cdef int64_t unscaled = 0
    cdef int d
    cdef bint negative = False, point = False
    if n and s[0] == c'-':
        negative = True
        i = 1
    whole_start = i
    while i < n and _digit(s[i]) >= 0:
        i += 1
    if i == whole_start or (s[whole_start] == c'0' and i - whole_start > 1):
        return 0
    digits = i - whole_start
    if i < n:
        if s[i] != c'.':
            return 0
        point = True
        i += 1
        scale = n - i
        if scale < 1 or scale > 15:
            return 0
    if digits + scale > 17:
        return 0
    for i in range(whole_start, n):
        if point and i == whole_start + digits:
            continue
        d = _digit(s[i])
        if d < 0:
            return 0
        unscaled = unscaled * 10 + d
    if negative:
        if unscaled == 0:
            return 0
        unscaled = -unscaled
    if unscaled < -DECIMAL_BIAS or unscaled >= DECIMAL_BIAS:
        return 0
    return _inline(INLINE_DECIMAL, ((unscaled + DECIMAL_BIAS) << 4) | scale)


cdef inline int _two(const unsigned char* s, Py_ssize_t at) noexcept nogil:
    cdef int a = _digit(s[at]), b = _digit(s[at + 1])
    return -1 if a < 0 or b < 0 else a * 10 + b


cdef inline int64_t _days_from_civil(int64_t y, int64_t m, int64_t d) noexcept nogil:
    # Howard Hinnant's algorithm; all terms are non-negative for years >= 1.
    y -= m <= 2
    cdef int64_t era = y // 400
    cdef int64_t yoe = y - era * 400
    cdef int64_t doy = (153 * (m - 3 if m > 2 else m + 9) + 2) // 5 + d - 1
    cdef int64_t doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


cdef int64_t _inline_datetime(const unsigned char* s, Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t i = 19, fraction_digits = 0
    if n < 19 or s[4] != c'-' or s[7] != c'-' or s[10] != c'T' or s[13] != c':' or s[16] != c':':
        return 0
    cdef int y1 = _two(s, 0), y2 = _two(s, 2)
    cdef int month = _two(s, 5), day = _two(s, 8)
    cdef int hour = _two(s, 11), minute = _two(s, 14), second = _two(s, 17)
    if y1 < 0 or y2 < 0 or month < 0 or day < 0 or hour < 0 or minute < 0 or second < 0:
        return 0
    cdef int year = y1 * 100 + y2
    if year < 1 or month < 1 or month > 12 or day < 1 or hour > 23 or minute > 59 or second > 59:
        return 0
    cdef int days_in_month = _DAYS_IN_MONTH[month - 1]
    if month == 2 and year % 4 == 0 and (year % 100 != 0 or year % 400 == 0):
        days_in_month = 29
    if day > days_in_month:
        return 0
    cdef int64_t millis = 0
    if i < n and s[i] == c'.':
        i += 1
        while i < n and fraction_digits < 4 and _digit(s[i]) >= 0:
            millis = millis * 10 + _digit(s[i])
            fraction_digits += 1
            i += 1
        if fraction_digits == 0 or fraction_digits > 3 or s[i - 1] == c'0':  # canonical: no trailing 0
            return 0
        while fraction_digits < 3:
            millis *= 10
            fraction_digits += 1
    cdef int64_t local = (
        _days_from_civil(year, month, day) * MS_PER_DAY
        + ((hour * 60 + minute) * 60 + second) * 1000
        + millis
    )
    cdef int64_t tz_code, instant, offset
    cdef int zone_hours, zone_minutes
    if i == n:
        tz_code, instant = TZ_NONE, local
    elif i == n - 1 and s[i] == c'Z':
        tz_code, instant = TZ_UTC, local
    elif i == n - 6 and (s[i] == c'+' or s[i] == c'-') and s[i + 3] == c':':
        zone_hours, zone_minutes = _two(s, i + 1), _two(s, i + 4)
        if zone_hours < 0 or zone_minutes < 0 or zone_minutes > 59:
            return 0
        offset = zone_hours * 60 + zone_minutes
        if offset > MAX_OFFSET_MINUTES or (offset == 0 and s[i] == c'-'):  # "-00:00" is not canonical
            return 0
        if s[i] == c'-':
            offset = -offset
        tz_code, instant = TZ_OFFSET + MAX_OFFSET_MINUTES + offset, local - offset * 60000
    else:
        return 0
    if instant < -MS_BIAS or instant >= MS_BIAS:
        return 0
    return _inline(INLINE_DATETIME, ((instant + MS_BIAS) << TZ_BITS) | tz_code)


cdef int64_t inline_lexical(int code, const char* lexical, Py_ssize_t n) noexcept nogil:
    cdef const unsigned char* s = <const unsigned char*>lexical
    if code == INLINE_BOOLEAN:
        if n == 4 and memcmp(s, b"true", 4) == 0:
            return _inline(INLINE_BOOLEAN, 1)
        if n == 5 and memcmp(s, b"false", 5) == 0:
            return _inline(INLINE_BOOLEAN, 0)
        return 0
    if code == INLINE_DECIMAL:
        return _inline_decimal(s, n)
    if code == INLINE_DATETIME:
        return _inline_datetime(s, n)
    if 0 <= code < 16:
        return _inline_integer(s, n, code)
    return 0


cdef int datatype_code(const char* iri, Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t prefix = 33  # len("http://www.w3.org/2001/XMLSchema#")
    if n <= prefix or memcmp(iri, b"http://www.w3.org/2001/XMLSchema#", prefix) != 0:
        return -1
    cdef const char* local = iri + prefix
    cdef Py_ssize_t length = n - prefix
    cdef int code
    for code in range(16):
        if length == _LOCAL_LENGTHS[code] and memcmp(local, _LOCAL_NAMES[code], length) == 0:
            return code
    return -1


cpdef object inline_id(object literal):
    """The inline id of a literal, or None (see encoding.inline_id)."""
    code = _CODES.get(literal.datatype.value)
    if code is None:
        return None
    cdef Py_ssize_t n
    cdef str value = literal.value  # alive while ``lexical`` points into it
    cdef const char* lexical = PyUnicode_AsUTF8AndSize(value, &n)
    cdef int64_t found = inline_lexical(code, lexical, n)
    return None if found == 0 else found


cdef str _format_datetime(int64_t field):
    cdef int64_t tz_code = field & ((1 << TZ_BITS) - 1)
    cdef int64_t instant = (field >> TZ_BITS) - MS_BIAS
    cdef int64_t local = instant, offset = 0
    if tz_code >= TZ_OFFSET:
        offset = tz_code - TZ_OFFSET - MAX_OFFSET_MINUTES
        local = instant + offset * 60000
    cdef int64_t days = local // MS_PER_DAY
    cdef int64_t in_day = local % MS_PER_DAY
    # civil_from_days (Hinnant)
    cdef int64_t z = days + 719468
    cdef int64_t era = z // 146097
    cdef int64_t doe = z - era * 146097
    cdef int64_t yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    cdef int64_t doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    cdef int64_t mp = (5 * doy + 2) // 153
    cdef int64_t day = doy - (153 * mp + 2) // 5 + 1
    cdef int64_t month = mp + 3 if mp < 10 else mp - 9
    cdef int64_t year = yoe + era * 400 + (month <= 2)
    cdef int64_t millis = in_day % 1000, seconds = in_day // 1000
    cdef char[48] buffer
    cdef int length = snprintf(
        buffer, 48, "%04d-%02d-%02dT%02d:%02d:%02d", <int>year, <int>month, <int>day,
        <int>(seconds // 3600), <int>(seconds // 60 % 60), <int>(seconds % 60),
    )
    if millis:
        if millis % 100 == 0:
            length += snprintf(buffer + length, 8, ".%d", <int>(millis // 100))
        elif millis % 10 == 0:
            length += snprintf(buffer + length, 8, ".%02d", <int>(millis // 10))
        else:
            length += snprintf(buffer + length, 8, ".%03d", <int>millis)
    if tz_code == TZ_UTC:
        length += snprintf(buffer + length, 4, "Z")
    elif tz_code >= TZ_OFFSET:
        length += snprintf(
            buffer + length, 8, "%c%02d:%02d", b"-"[0] if offset < 0 else b"+"[0],
            <int>(abs(offset) // 60), <int>(abs(offset) % 60),
        )
    return buffer[:length].decode("ascii")


cdef str _format_decimal(int64_t field):
    cdef int64_t scale = field & 0xF
    cdef int64_t unscaled = (field >> 4) - DECIMAL_BIAS
    if scale == 0:
        return str(unscaled)
    digits = str(abs(unscaled)).rjust(scale + 1, "0")
    return ("-" if unscaled < 0 else "") + digits[:-scale] + "." + digits[-scale:]


cpdef object decode_inline(object term_id):
    """The literal an inline id stands for (see encoding.decode_inline)."""
    cdef int64_t value = term_id
    if value >= 0:
        raise ValueError(
            f"term id {term_id} is a dictionary id, not an inline one; decode it with its TermDictionary"
        )
    cdef int64_t code = (value >> TYPE_SHIFT) & 0x1F
    cdef int64_t field = value & VALUE_MASK
    datatype = _DATATYPES.get(code)
    if datatype is None:
        raise ValueError(f"term id {term_id} has inline type bits {code}, which no inline type uses")
    if code == INLINE_BOOLEAN:
        lexical = "true" if field else "false"
    elif code == INLINE_DATETIME:
        lexical = _format_datetime(field)
    elif code == INLINE_DECIMAL:
        lexical = _format_decimal(field)
    else:
        lexical = str(field - INT_BIAS)
    return _Literal(lexical, datatype=datatype)
