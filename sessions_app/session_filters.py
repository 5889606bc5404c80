"""The session list's filters that look at sessions_app's own data, and the ``state`` parameter.

Each answers from an index kept as entries are written, whatever way they arrive (import, sync, append,
runs, forks): ``ToolUse`` (tool), the entries' ``(session, type)`` index (labels, compactions), the
sessions' own columns (owner, dates) and the shares (team). Every filter narrows sessions the viewer can
already read.
"""

from __future__ import annotations

import datetime
from typing import Any

from django.contrib.auth import get_user_model
from django.db.models import Exists, JSONField, OuterRef, QuerySet
from django.db.models.fields.json import KeyTextTransform
from django.db.models.functions import Cast

from sessions_app.list_filters import (
    FilterError,
    SessionFilter,
    apply_states,
    register_session_filter,
    register_state,
    state_choices,
)
from sessions_app.models import ChatSession, Entry, EntryAuthor, SessionShare, ToolUse

Sessions = QuerySet[ChatSession]


def _viewer_teams(viewer: Any) -> list[tuple[str, str]]:
    from teams.facade import Team

    if not getattr(viewer, "is_authenticated", False):
        return []
    names = Team.objects.filter(memberships__user=viewer).order_by("name").values_list("name", flat=True)
    return [(name, name) for name in names]


def _team(query: Sessions, values: list[str], viewer: Any) -> Sessions:
    # Only the viewer's teams: naming another answers the same error as a team that does not exist.
    mine = {name for name, _ in _viewer_teams(viewer)}
    for value in values:
        if value not in mine:
            raise FilterError(f"team: {value!r} is not one of your teams")
        query = query.filter(pk__in=SessionShare.objects.filter(team__name=value).values("session_id"))
    return query


def _owner(query: Sessions, values: list[str], viewer: Any) -> Sessions:
    # Any of the owners (a session has one). "me" is the viewer.
    ids: list[int] = []
    users = get_user_model().objects
    for value in values:
        if value == "me":
            ids.append(viewer.pk)
            continue
        user = users.filter(username=value).only("pk").first()
        if user is None:
            raise FilterError(f"owner: no user named {value!r}")
        ids.append(user.pk)
    return query.filter(owner_id__in=ids)


def _author(query: Sessions, values: list[str], viewer: Any) -> Sessions:
    # All of the authors: each wrote entries of the session (typed, or asked a run for them), through
    # entry_author_idx. "me" is the viewer.
    users = get_user_model().objects
    for value in values:
        user_id = (
            viewer.pk if value == "me" else users.filter(username=value).values_list("pk", flat=True).first()
        )
        if user_id is None:
            raise FilterError(f"author: no user named {value!r}")
        authors = EntryAuthor.objects.filter(user_id=user_id).values("pk")
        query = query.filter(Exists(Entry.objects.filter(session=OuterRef("pk"), author__in=authors)))
    return query


def _tool(query: Sessions, values: list[str], viewer: Any) -> Sessions:
    # All of the tools: each one was used somewhere in the session (any branch).
    for value in values:
        query = query.filter(pk__in=ToolUse.objects.filter(tool=value).values("session_id"))
    return query


def _label(query: Sessions, values: list[str], viewer: Any) -> Sessions:
    # All of the labels, each on some entry of the session (exact text, any case). Label entries are few
    # and found through the entries' (session, type) index.
    for value in values:
        labelled = (
            Entry.objects.filter(session=OuterRef("pk"), type="label")
            .annotate(text=KeyTextTransform("label", Cast("raw", JSONField())))
            .filter(text__iexact=value)
        )
        query = query.filter(Exists(labelled))
    return query


def _date(name: str, value: str) -> datetime.date:
    try:
        return datetime.date.fromisoformat(value)
    except ValueError:
        raise FilterError(f"{name}: {value!r} is not a date (YYYY-MM-DD)") from None


def _date_filter(name: str, column: str, after: bool) -> Any:
    def apply(query: Sessions, values: list[str], viewer: Any) -> Sessions:
        if len(values) > 1:
            raise FilterError(f"{name}: one date only")
        day = _date(name, values[0])
        # Dates are whole UTC days, both ends included.
        if after:
            return query.filter(**{f"{column}__date__gte": day})
        return query.filter(**{f"{column}__date__lte": day})

    return apply


def _compacted(query: Sessions, viewer: Any) -> Sessions:
    return query.filter(Exists(Entry.objects.filter(session=OuterRef("pk"), type="compaction")))


def register() -> None:
    """Register sessions_app's filters and states (from ``AppConfig.ready()``)."""
    register_session_filter(
        SessionFilter(
            name="team", label="Team", apply=_team, choices=_viewer_teams, kind="choice", order=10,
            help="Shared with this team (one of yours)",
        )
    )  # fmt: skip
    register_session_filter(
        SessionFilter(
            name="owner", label="Owner", apply=_owner, kind="text", order=20, help="A username, or me"
        )
    )
    register_session_filter(
        SessionFilter(
            name="author", label="Author", apply=_author, kind="text", order=21,
            help="Wrote entries: a username, or me",
        )
    )  # fmt: skip
    register_session_filter(
        SessionFilter(
            name="tool", label="Tool used", apply=_tool, kind="text", order=50, help="e.g. bash, edit"
        )
    )
    register_session_filter(
        SessionFilter(
            name="label", label="Label", apply=_label, kind="text", order=60, help="Any entry labelled so"
        )
    )
    for name, label, column, after, order in (
        ("created_after", "Created from", "created_at", True, 80),
        ("created_before", "Created until", "created_at", False, 81),
        ("updated_after", "Active from", "updated_at", True, 82),
        ("updated_before", "Active until", "updated_at", False, 83),
    ):
        register_session_filter(
            SessionFilter(
                name=name, label=label, apply=_date_filter(name, column, after), kind="date", order=order,
                help="YYYY-MM-DD, UTC, included",
            )
        )  # fmt: skip
    register_session_filter(
        SessionFilter(
            name="state", label="State", apply=apply_states, choices=state_choices, kind="choice", order=90,
            help="Several states: sessions in all of them",
        )
    )  # fmt: skip
    register_state("compacted", "Compacted", _compacted, order=30)
