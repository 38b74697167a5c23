"""The functions on dates and times of §17.4.5: YEAR, MONTH, DAY, HOURS, MINUTES, SECONDS,
TIMEZONE, TZ; and the dateTime literal NOW() gives (``datetime_from_ms``), NOW itself reading the
evaluation time from the context (``expressions``)."""

from __future__ import annotations

from decimal import Decimal

from pyoxigraph import Literal

from cqels_endpoint.runtime.functions.values import Builtin, datetime_value, integer_literal
from cqels_endpoint.runtime.functions.xsd import (
    DATETIME,
    DAYTIME_DURATION,
    DECIMAL,
    DateTime,
    ExpressionError,
    civil_from_days,
    format_datetime,
    format_decimal,
    format_tz,
)


def datetime_from_ms(ms: int) -> Literal:
    """The xsd:dateTime literal (UTC) of a time in milliseconds since the epoch."""
    days, rest = divmod(ms, 86_400_000)
    year, month, day = civil_from_days(days)
    hour, rest = divmod(rest, 3_600_000)
    minute, rest = divmod(rest, 60_000)
    second = Decimal(rest).scaleb(-3)
    return Literal(format_datetime(DateTime(year, month, day, hour, minute, second, 0)), datatype=DATETIME)


def _day_time_duration(minutes: int) -> str:
    if minutes == 0:
        return "PT0S"
    hours, rest = divmod(abs(minutes), 60)
    text = ("-PT" if minutes < 0 else "PT") + (f"{hours}H" if hours else "") + (f"{rest}M" if rest else "")
    return text


def fn_year(term) -> Literal:
    return integer_literal(datetime_value(term).year)


def fn_month(term) -> Literal:
    return integer_literal(datetime_value(term).month)


def fn_day(term) -> Literal:
    return integer_literal(datetime_value(term).day)


def fn_hours(term) -> Literal:
    return integer_literal(datetime_value(term).hour)


def fn_minutes(term) -> Literal:
    return integer_literal(datetime_value(term).minute)


def fn_seconds(term) -> Literal:
    return Literal(format_decimal(datetime_value(term).second), datatype=DECIMAL)


def fn_timezone(term) -> Literal:
    tz = datetime_value(term).tz
    if tz is None:
        raise ExpressionError
    return Literal(_day_time_duration(tz), datatype=DAYTIME_DURATION)


def fn_tz(term) -> Literal:
    tz = datetime_value(term).tz
    return Literal("" if tz is None else format_tz(tz))


BUILTINS = {
    "YEAR": Builtin(fn_year, 1, 1),
    "MONTH": Builtin(fn_month, 1, 1),
    "DAY": Builtin(fn_day, 1, 1),
    "HOURS": Builtin(fn_hours, 1, 1),
    "MINUTES": Builtin(fn_minutes, 1, 1),
    "SECONDS": Builtin(fn_seconds, 1, 1),
    "TIMEZONE": Builtin(fn_timezone, 1, 1),
    "TZ": Builtin(fn_tz, 1, 1),
}
