"""The date range a page, an answer or a download covers: ``from`` and ``to`` (ISO days), default the
last 12 weeks; at most ``MAX_WEEKS`` weeks."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date
from typing import Any

from django.utils import timezone

from activity.domain.weeks import MAX_WEEKS, span, weeks

__all__ = ["BadRange", "date_range"]


class BadRange(ValueError):
    """The range asked for is not two ISO days in order, or is too long."""


def date_range(query: Mapping[str, Any]) -> tuple[date, date]:
    default_start, default_end = span(timezone.now().date())
    start = _day(query.get("from"), default_start, "from")
    end = _day(query.get("to"), default_end, "to")
    if end < start:
        raise BadRange("The range ends before it starts.")
    if len(weeks(start, end)) > MAX_WEEKS:
        raise BadRange(f"The range covers more than {MAX_WEEKS} weeks.")
    return start, end


def _day(value: Any, default: date, name: str) -> date:
    if value in (None, ""):
        return default
    try:
        return date.fromisoformat(str(value)[:10])
    except ValueError:
        raise BadRange(f"'{name}' must be a day, as 2026-03-02.") from None
