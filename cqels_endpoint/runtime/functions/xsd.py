"""The XSD datatypes SPARQL expressions interpret, at the level of lexical forms.

Their IRIs; numbers (the integer types, decimal, float, double), booleans and dateTimes read from
their lexical forms as Python values, and computed values written back with the lexical forms
pyoxigraph produces (so the continuous engine and its pyoxigraph oracle emit identical terms).
Nothing here looks at a term: ``values`` reads terms with these.

Errors are the spec's expression errors: ``ExpressionError`` is raised bare (no message, no
formatting) because FILTER turns most of them into ``false`` on the hot path.
"""

from __future__ import annotations

import math
import re
import struct
from decimal import ROUND_HALF_UP, Context, Decimal
from typing import NamedTuple

from pyoxigraph import Literal, NamedNode

from cqels_endpoint.terms import RDF_LANG_STRING, XSD, XSD_BOOLEAN, XSD_DECIMAL, XSD_DOUBLE, XSD_INTEGER, XSD_STRING


class ExpressionError(Exception):
    """An expression error of spec §17.3 (unbound variable, type error, …): FILTER false, BIND unbound."""

    __slots__ = ()


XSD_FLOAT = XSD + "float"
XSD_DATETIME = XSD + "dateTime"
XSD_DATE = XSD + "date"
XSD_DAYTIME_DURATION = XSD + "dayTimeDuration"

STRING = NamedNode(XSD_STRING)
INTEGER = NamedNode(XSD_INTEGER)
DECIMAL = NamedNode(XSD_DECIMAL)
FLOAT = NamedNode(XSD_FLOAT)
DOUBLE = NamedNode(XSD_DOUBLE)
BOOLEAN = NamedNode(XSD_BOOLEAN)
DATETIME = NamedNode(XSD_DATETIME)
DAYTIME_DURATION = NamedNode(XSD_DAYTIME_DURATION)
LANG_STRING = NamedNode(RDF_LANG_STRING)

TRUE = Literal("true", datatype=BOOLEAN)
FALSE = Literal("false", datatype=BOOLEAN)
EMPTY_STRING = Literal("")


# --------------------------------------------------------------------------- numbers

# Numeric ranks, in promotion order (spec §17.3, XPath type promotion).
RANK_INTEGER, RANK_DECIMAL, RANK_FLOAT, RANK_DOUBLE = 0, 1, 2, 3

# The XSD integer types with their value ranges (None: unbounded). A value outside its type's range
# makes the literal ill-typed, like a bad lexical form.
_INTEGER_TYPES: dict[str, tuple[int | None, int | None]] = {
    "integer": (None, None),
    "nonPositiveInteger": (None, 0),
    "negativeInteger": (None, -1),
    "long": (-(2**63), 2**63 - 1),
    "int": (-(2**31), 2**31 - 1),
    "short": (-(2**15), 2**15 - 1),
    "byte": (-(2**7), 2**7 - 1),
    "nonNegativeInteger": (0, None),
    "unsignedLong": (0, 2**64 - 1),
    "unsignedInt": (0, 2**32 - 1),
    "unsignedShort": (0, 2**16 - 1),
    "unsignedByte": (0, 2**8 - 1),
    "positiveInteger": (1, None),
}
INTEGER_RANGES = {XSD + name: bounds for name, bounds in _INTEGER_TYPES.items()}
NUMERIC_RANK: dict[str, int] = {iri: RANK_INTEGER for iri in INTEGER_RANGES}
NUMERIC_RANK.update({XSD_DECIMAL: RANK_DECIMAL, XSD_FLOAT: RANK_FLOAT, XSD_DOUBLE: RANK_DOUBLE})


INTEGER_RE = re.compile(r"[+-]?[0-9]+")
DECIMAL_RE = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)")
_DOUBLE_RE = re.compile(r"(?:[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|[+-]?INF|NaN)")

# Exact decimal arithmetic for + - * (the spec leaves the precision to the implementation; we never
# lose digits); division is done on integers, see ``numerics``.
EXACT = Context(prec=10_000, Emax=10**9, Emin=-(10**9))
DECIMAL_DIVISION_DIGITS = 18  # pyoxigraph's xsd:decimal has 18 fractional digits; division truncates there
_INF = math.inf


def to_f32(value: float) -> float:
    """``value`` rounded to the nearest single-precision float (xsd:float), ±INF beyond its range."""
    try:
        return struct.unpack("f", struct.pack("f", value))[0]
    except OverflowError:
        return math.copysign(_INF, value)


def parse_double(lexical: str) -> float:
    if _DOUBLE_RE.fullmatch(lexical) is None:
        raise ExpressionError
    return float(lexical)  # Python reads INF, -INF, +INF and NaN exactly as XSD spells them


def parse_numeric(lexical: str, datatype: str, rank: int) -> int | Decimal | float:
    """The value of a numeric literal of rank ``rank``; ExpressionError when it is ill-typed."""
    if rank == RANK_INTEGER:
        if INTEGER_RE.fullmatch(lexical) is None:
            raise ExpressionError
        value = int(lexical)
        low, high = INTEGER_RANGES[datatype]
        if (low is not None and value < low) or (high is not None and value > high):
            raise ExpressionError
        return value
    if rank == RANK_DECIMAL:
        if DECIMAL_RE.fullmatch(lexical) is None:
            raise ExpressionError
        return Decimal(lexical)
    if rank == RANK_DOUBLE:
        return parse_double(lexical)
    return to_f32(parse_double(lexical))


def promote(value: int | Decimal | float, rank: int, to_rank: int) -> int | Decimal | float:
    """Numeric type promotion (integer → decimal → float → double)."""
    if rank == to_rank:
        return value
    if to_rank == RANK_DECIMAL:
        return Decimal(value)
    try:
        as_float = float(value)
    except OverflowError:
        as_float = math.copysign(_INF, value)
    return to_f32(as_float) if to_rank == RANK_FLOAT else as_float


def format_double(value: float) -> str:
    """pyoxigraph's lexical form of a computed double: plain decimal notation, shortest round-trip digits."""
    if value != value:
        return "NaN"
    if value == _INF:
        return "INF"
    if value == -_INF:
        return "-INF"
    if value == 0:
        return "-0" if math.copysign(1.0, value) < 0 else "0"
    shortest = Decimal(repr(value))
    # repr gives the fewest digits that round-trip, breaking an exact tie to even; pyoxigraph's writer
    # breaks it away from zero (1e20 / 711948.075 = …994.625 is written …994.63, repr says …994.62).
    digits = len(shortest.as_tuple().digits)
    rounded = Context(prec=digits, rounding=ROUND_HALF_UP).plus(Decimal(value))
    plain = format(rounded if float(rounded) == value else shortest, "f")
    if "." in plain:
        plain = plain.rstrip("0").rstrip(".")
    return plain


def format_float(value: float) -> str:
    """Like ``format_double`` with the shortest digits that round-trip through single precision."""
    if value != value or value in (_INF, -_INF) or value == 0:
        return format_double(value)
    exact = Decimal(value)
    for digits in range(1, 10):
        # Halves round away from zero, as pyoxigraph's shortest-digits writer does for f32 ties
        # (131072.125 is written 131072.13, where Python's %g would give 131072.12).
        rounded = Context(prec=digits, rounding=ROUND_HALF_UP).plus(exact)
        if to_f32(float(rounded)) == value:
            break
    plain = format(rounded, "f")
    if "." in plain:
        plain = plain.rstrip("0").rstrip(".")
    return plain


def format_decimal(value: Decimal) -> str:
    """pyoxigraph's lexical form of a computed decimal: no exponent, no trailing zeros, ``2`` not ``2.0``."""
    if value == 0:
        return "0"
    text = format(value, "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text


# --------------------------------------------------------------------------- dateTime


class DateTime(NamedTuple):
    """An xsd:dateTime value as written (24:00:00 already moved to the next day); tz in minutes or None."""

    year: int
    month: int
    day: int
    hour: int
    minute: int
    second: Decimal
    tz: int | None


_DATETIME_RE = re.compile(r"(-?[0-9]{4,})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2}(?:\.[0-9]+)?)(Z|[+-][0-9]{2}:[0-9]{2})?")
_MAX_TZ = 14 * 60


def _is_leap(year: int) -> bool:
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)


def _days_in_month(year: int, month: int) -> int:
    if month == 2:
        return 29 if _is_leap(year) else 28
    return 30 if month in (4, 6, 9, 11) else 31


def days_from_civil(year: int, month: int, day: int) -> int:
    """Days since 1970-01-01 in the proleptic Gregorian calendar (any year; H. Hinnant's algorithm)."""
    year -= month <= 2
    era = year // 400
    year_of_era = year - era * 400
    day_of_year = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    day_of_era = year_of_era * 365 + year_of_era // 4 - year_of_era // 100 + day_of_year
    return era * 146097 + day_of_era - 719468


def civil_from_days(days: int) -> tuple[int, int, int]:
    days += 719468
    era = days // 146097
    day_of_era = days - era * 146097
    year_of_era = (day_of_era - day_of_era // 1460 + day_of_era // 36524 - day_of_era // 146096) // 365
    day_of_year = day_of_era - (365 * year_of_era + year_of_era // 4 - year_of_era // 100)
    month_index = (5 * day_of_year + 2) // 153
    day = day_of_year - (153 * month_index + 2) // 5 + 1
    month = month_index + (3 if month_index < 10 else -9)
    return year_of_era + era * 400 + (month <= 2), month, day


def parse_datetime(lexical: str) -> DateTime:
    match = _DATETIME_RE.fullmatch(lexical)
    if match is None:
        raise ExpressionError
    year_text, month, day, hour, minute, second_text, tz_text = match.groups()
    if len(year_text.lstrip("-")) > 4 and year_text.lstrip("-")[0] == "0":
        raise ExpressionError  # years of more than four digits have no leading zero
    year, month, day, hour, minute = int(year_text), int(month), int(day), int(hour), int(minute)
    second = Decimal(second_text)
    if not (1 <= month <= 12 and 1 <= day <= _days_in_month(year, month) and minute < 60 and second < 60):
        raise ExpressionError
    if hour == 24:
        if minute or second:
            raise ExpressionError
        year, month, day = civil_from_days(days_from_civil(year, month, day) + 1)
        hour = 0
    elif hour > 23:
        raise ExpressionError
    tz = None
    if tz_text is not None:
        if tz_text == "Z":
            tz = 0
        else:
            tz_hours, tz_minutes = int(tz_text[1:3]), int(tz_text[4:6])
            tz = tz_hours * 60 + tz_minutes
            if tz_minutes > 59 or tz > _MAX_TZ:
                raise ExpressionError
            if tz_text[0] == "-":
                tz = -tz
    return DateTime(year, month, day, hour, minute, second, tz)


_DATE_RE = re.compile(r"(-?[0-9]{4,}-[0-9]{2}-[0-9]{2})(Z|[+-][0-9]{2}:[0-9]{2})?")


def parse_date(lexical: str) -> DateTime:
    """An xsd:date as the dateTime of its first instant (for comparisons, an extension pyoxigraph shares)."""
    match = _DATE_RE.fullmatch(lexical)
    if match is None:
        raise ExpressionError
    return parse_datetime(f"{match.group(1)}T00:00:00{match.group(2) or ''}")


def local_seconds(value: DateTime) -> Decimal:
    """Seconds since 1970-01-01T00:00:00 of the wall-clock time, ignoring the timezone."""
    days = days_from_civil(value.year, value.month, value.day)
    return EXACT.add(Decimal((days * 24 + value.hour) * 3600 + value.minute * 60), value.second)


def utc_seconds(value: DateTime, assumed_tz: int = 0) -> Decimal:
    tz = assumed_tz if value.tz is None else value.tz
    return EXACT.subtract(local_seconds(value), tz * 60)


def compare_datetimes(left: DateTime, right: DateTime) -> int | None:
    """-1, 0 or 1; None when indeterminate (one side without timezone and closer than 14 hours, XSD §3.2.7.4)."""
    if (left.tz is None) == (right.tz is None):
        a, b = utc_seconds(left), utc_seconds(right)
        return (a > b) - (a < b)
    # Compare against the extreme timezones the one without a timezone could have.
    low_left, high_left = utc_seconds(left, _MAX_TZ), utc_seconds(left, -_MAX_TZ)
    low_right, high_right = utc_seconds(right, _MAX_TZ), utc_seconds(right, -_MAX_TZ)
    if high_left < low_right:
        return -1
    if low_left > high_right:
        return 1
    return None


def _two(number: int) -> str:
    return f"{number:02d}"


def format_datetime(value: DateTime) -> str:
    """The canonical lexical form pyoxigraph writes (fraction without trailing zeros, ``Z`` for UTC)."""
    year = f"-{-value.year:04d}" if value.year < 0 else f"{value.year:04d}"
    whole = int(value.second)
    fraction = format_decimal(value.second - whole)
    seconds = _two(whole) + (fraction[1:] if fraction != "0" else "")
    text = f"{year}-{_two(value.month)}-{_two(value.day)}T{_two(value.hour)}:{_two(value.minute)}:{seconds}"
    if value.tz is None:
        return text
    return text + format_tz(value.tz)


def format_tz(tz: int) -> str:
    if tz == 0:
        return "Z"
    sign = "-" if tz < 0 else "+"
    hours, minutes = divmod(abs(tz), 60)
    return f"{sign}{_two(hours)}:{_two(minutes)}"


# --------------------------------------------------------------------------- booleans


def boolean_value(lexical: str) -> bool:
    if lexical in ("true", "1"):
        return True
    if lexical in ("false", "0"):
        return False
    raise ExpressionError
