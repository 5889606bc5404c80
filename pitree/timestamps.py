"""ISO timestamps read as JavaScript's ``new Date(text).getTime()`` reads them."""

from __future__ import annotations

import calendar
import math
import re
from datetime import UTC, datetime
from typing import Any

__all__ = ["NAN", "js_date_ms", "now_iso", "now_ms"]

NAN = math.nan

_ISO = re.compile(
    r"^([+-]\d{6}|\d{4})(?:-(\d{2})(?:-(\d{2}))?)?"
    r"(?:T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d+))?)?(Z|[+-]\d{2}:\d{2})?)?$"
)


_MAX_TIME = 8.64e15


def js_date_ms(value: Any) -> float:
    """Return ``new Date(value).getTime()``: ISO strings parsed, numbers clipped, null → 0, else NaN.

    Pass ``UNDEFINED`` for an absent field: ``new Date(undefined)`` is NaN while ``new Date(null)`` is 0.
    """
    if value is None or isinstance(value, bool):
        return float(bool(value))
    if isinstance(value, int | float):
        number = float(value)
        if number != number or abs(number) > _MAX_TIME:
            return NAN
        return float(math.trunc(number)) + 0.0  # TimeClip: toward zero, never -0
    if not isinstance(value, str):
        return NAN
    m = _ISO.match(value)
    if not m:
        return NAN
    year_s, month_s, day_s, hh, mi, ss, frac, zone = m.groups()
    year = int(year_s)
    month = int(month_s or 1)
    day = int(day_s or 1)
    hour = int(hh or 0)
    minute = int(mi or 0)
    second = int(ss or 0)
    if not (1 <= month <= 12 and 1 <= day <= 31 and hour <= 24 and minute < 60 and second < 60):
        return NAN
    if hour == 24 and (minute or second or (frac and int(frac))):
        return NAN
    if year_s.startswith("-000000"):
        return NAN
    days_in_month = calendar.monthrange(year, month)[1] if 1 <= year <= 9999 else 31
    if day > days_in_month:
        return NAN
    millis = int((frac or "0")[:3].ljust(3, "0"))
    try:
        base = calendar.timegm((year, month, day, 0, 0, 0))
    except (OverflowError, ValueError):
        return NAN
    total = (base + hour * 3600 + minute * 60 + second) * 1000 + millis
    if zone and zone != "Z":
        sign = 1 if zone[0] == "+" else -1
        total -= sign * (int(zone[1:3]) * 60 + int(zone[4:6])) * 60_000
    # Date-time without an offset is local time in JavaScript; the server runs in UTC.
    return float(total)


def now_ms() -> int:
    """Return the current time in epoch milliseconds."""
    return int(datetime.now(UTC).timestamp() * 1000)


def now_iso() -> str:
    """Return the current time as JavaScript's ``toISOString`` spells it."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
