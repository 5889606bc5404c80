"""The session list's own structured filters: team, owner, tool, label, last activity, and the
``state`` parameter with its ``compacted`` value. Other apps register theirs (costs: model, provider and
cost; agent, discussion and governance: states).

Each narrows with an ``EXISTS`` on an index that starts with the session (shares, tool uses, entries by
type), so a filtered page reads only the rows of the sessions it lists.
"""

from __future__ import annotations

import json
from datetime import date, datetime, time, timedelta
from typing import Any

from django.db.models import Exists, OuterRef, Q, QuerySet
from django.utils import timezone

from sessions_app.list_filters import (
    FilterError,
    SessionFilter,
    SessionState,
    apply_states,
    register_session_filter,
    register_state,
    state_choices,
)
from sessions_app.models import ChatSession, Entry, SessionShare, ToolUse
from teams.facade import Team

__all__ = ["parse_day", "register"]

PI_TOOLS = ("read", "bash", "edit", "write", "grep", "find", "ls")


def _viewer_teams(viewer: Any) -> QuerySet[Team]:
    if not getattr(viewer, "is_authenticated", False):
        return Team.objects.none()
    return Team.objects.filter(memberships__user=viewer).order_by("name")


def _teams(query: QuerySet[ChatSession], values: list[str], viewer: Any) -> QuerySet[ChatSession]:
    """Shared with any of these teams, among the viewer's own (another team answers as no team)."""
    try:
        asked = {int(v) for v in values}
    except ValueError:
        raise FilterError("team: give a team's number") from None
    mine = set(_viewer_teams(viewer).filter(pk__in=asked).values_list("pk", flat=True))
    if asked - mine:
        raise FilterError("team: not one of your teams")
    return query.filter(Exists(SessionShare.objects.filter(session=OuterRef("pk"), team_id__in=mine)))


def _team_choices(viewer: Any) -> list[tuple[str, str]]:
    return [(str(pk), name) for pk, name in _viewer_teams(viewer).values_list("pk", "name")]


def _owners(query: QuerySet[ChatSession], values: list[str], viewer: Any) -> QuerySet[ChatSession]:
    """Owned by any of these people (``me`` is the viewer)."""
    names = {v for v in values if v != "me"}
    cond = Q(owner__username__in=names)
    if "me" in values and getattr(viewer, "is_authenticated", False):
        cond |= Q(owner=viewer)
    return query.filter(cond)


def _tools(query: QuerySet[ChatSession], values: list[str], _viewer: Any) -> QuerySet[ChatSession]:
    """Every one of these tools was called in the session (on any branch)."""
    for tool in values:
        query = query.filter(Exists(ToolUse.objects.filter(session=OuterRef("pk"), tool=tool)))
    return query


def _labels(query: QuerySet[ChatSession], values: list[str], _viewer: Any) -> QuerySet[ChatSession]:
    """Some entry was given each of these labels (a label cleared later still counts: it was used)."""
    for label in values:
        # Pi writes the label as JSON.stringify does: compact, the text escaped as json.dumps escapes it.
        needle = f'"label":{json.dumps(label, ensure_ascii=False)}'
        labelled = Entry.objects.filter(session=OuterRef("pk"), type="label", raw__contains=needle)
        query = query.filter(Exists(labelled))
    return query


def parse_day(name: str, value: str) -> date:
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise FilterError(f"{name}: {value!r} is not a day (YYYY-MM-DD)") from None


def _start_of(day: date) -> datetime:
    return timezone.make_aware(datetime.combine(day, time.min), timezone.get_current_timezone())


def _after(query: QuerySet[ChatSession], values: list[str], _viewer: Any) -> QuerySet[ChatSession]:
    """Active on or after this day (the latest of the days given)."""
    day = max(parse_day("after", v) for v in values)
    return query.filter(updated_at__gte=_start_of(day))


def _before(query: QuerySet[ChatSession], values: list[str], _viewer: Any) -> QuerySet[ChatSession]:
    """Last active on or before this day (the earliest of the days given)."""
    day = min(parse_day("before", v) for v in values)
    return query.filter(updated_at__lt=_start_of(day + timedelta(days=1)))


def _compacted(query: QuerySet[ChatSession]) -> QuerySet[ChatSession]:
    return query.filter(Exists(Entry.objects.filter(session=OuterRef("pk"), type="compaction")))


def register() -> None:
    """Register the filters above (``SessionsAppConfig.ready``)."""
    for spec in (
        SessionFilter("team", "Team", _teams, choices=_team_choices, kind="choice", order=10),
        SessionFilter("owner", "Owner", _owners, order=20, help="a username, or me"),
        SessionFilter(
            "tool",
            "Tool used",
            _tools,
            choices=lambda _viewer: [(t, t) for t in PI_TOOLS],
            kind="choice",
            order=40,
        ),
        SessionFilter("label", "Label", _labels, order=60, help="a label put on an entry"),
        SessionFilter("after", "Active from", _after, kind="date", order=70),
        SessionFilter("before", "Active until", _before, kind="date", order=71),
        SessionFilter("state", "State", apply_states, choices=state_choices, kind="choice", order=90),
    ):
        register_session_filter(spec)
    register_state(SessionState("compacted", "compacted", _compacted))
