"""ISO weeks as the activity rollup keys them: each by its Monday (UTC)."""

from __future__ import annotations

from datetime import date, timedelta

__all__ = ["MAX_WEEKS", "label", "last_full_week", "monday", "span", "week_of_stamp", "weeks"]

MAX_WEEKS = 160  # the longest range one page or answer covers (about three years)


def monday(day: date) -> date:
    """Return the Monday of ``day``'s ISO week."""
    return day - timedelta(days=day.weekday())


def week_of_stamp(stamp: str | None, fallback: date) -> date:
    """Return the Monday of the week of an ISO timestamp ("2026-03-04T…"), else of ``fallback``."""
    if stamp and len(stamp) >= 10:
        try:
            return monday(date.fromisoformat(stamp[:10]))
        except ValueError:
            pass
    return monday(fallback)


def weeks(first: date, last: date) -> list[date]:
    """Return the Mondays from ``first``'s week to ``last``'s, in order."""
    start, end = monday(first), monday(last)
    count = (end - start).days // 7 + 1
    return [start + timedelta(weeks=i) for i in range(max(0, count))]


def span(today: date, count: int = 12) -> tuple[date, date]:
    """Return the default range: the ``count`` weeks ending with ``today``'s (first Monday, last Sunday)."""
    end = monday(today) + timedelta(days=6)
    return monday(today) - timedelta(weeks=count - 1), end


def last_full_week(today: date) -> date:
    """Return the Monday of the week before ``today``'s: the week a digest sent today speaks of."""
    return monday(today) - timedelta(weeks=1)


def label(week: date) -> str:
    """Return the ISO name of a week ("2026-W09")."""
    year, number, _ = week.isocalendar()
    return f"{year}-W{number:02d}"
