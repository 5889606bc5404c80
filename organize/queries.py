"""Scoped reads: every answer is limited to sessions the viewer may read and teams they belong to."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from django.db import connection
from django.db.models import Count, Q

from organize.models import Archived, Pin, SavedFilter, SessionTag, Tag
from sessions_app.facade import ChatSession, SessionShare
from teams.facade import Team, TeamMembership

TEAM_EDITORS = (TeamMembership.Role.OWNER, TeamMembership.Role.EDITOR)


def member_team_ids(user: Any) -> list[int]:
    if not getattr(user, "is_authenticated", False):
        return []
    return list(TeamMembership.objects.filter(user=user).values_list("team_id", flat=True))


def editor_team_ids(user: Any) -> list[int]:
    if not getattr(user, "is_authenticated", False):
        return []
    return list(
        TeamMembership.objects.filter(user=user, role__in=TEAM_EDITORS).values_list("team_id", flat=True)
    )


def tags_of_teams(user: Any) -> list[Tag]:
    """The tags of every team the user belongs to, with how many sessions the user may read carry each."""
    readable = ChatSession.objects.visible_to(user).values("pk")
    return list(
        Tag.objects.filter(team_id__in=member_team_ids(user))
        .select_related("team")
        .annotate(count=Count("applied", filter=Q(applied__session_id__in=readable)))
        .order_by("team__name", "name")
    )


def visible_tag(user: Any, tag_id: int) -> Tag | None:
    """The tag if it belongs to one of the user's teams, else None (others' tags are not known)."""
    return Tag.objects.select_related("team").filter(pk=tag_id, team_id__in=member_team_ids(user)).first()


def visible_team(user: Any, team_id: int) -> Team | None:
    found = TeamMembership.objects.select_related("team").filter(team_id=team_id, user=user).first()
    return found.team if found is not None else None


def tags_named(team_ids: list[int]) -> list[Tag]:
    """The tags of these teams with their team, without counts: what a menu of tags needs."""
    if not team_ids:
        return []
    return list(
        Tag.objects.filter(team_id__in=team_ids).select_related("team").order_by("team__name", "name")
    )


def tags_on(
    session_ids: Iterable[int], user: Any, *, team_ids: list[int] | None = None
) -> dict[int, list[Tag]]:
    """The tags of the user's teams (``team_ids`` when the caller read them) on each session (callers
    pass only sessions the user may read)."""
    found: dict[int, list[Tag]] = defaultdict(list)
    teams = member_team_ids(user) if team_ids is None else team_ids
    rows = (
        SessionTag.objects.filter(session_id__in=list(session_ids), tag__team_id__in=teams)
        .select_related("tag", "tag__team")
        .order_by("tag__name")
    )
    for row in rows:
        found[row.session_id].append(row.tag)
    return found


def tags_for_session(session: ChatSession, user: Any) -> list[Tag]:
    """Tags the user may put on this session: those of the user's teams the session is shared with."""
    shared = SessionShare.objects.filter(session=session).values("team_id")
    return list(
        Tag.objects.filter(team_id__in=member_team_ids(user))
        .filter(team_id__in=shared)
        .select_related("team")
        .order_by("team__name", "name")
    )


def page_state(session_id: int, user_id: int, team_ids: list[int]) -> tuple[bool, bool, bool]:
    """Whether the user pinned the session, whether it is archived, and whether any of the user's teams
    has a tag at all: one plain statement, since every session page asks."""
    pin, archived, tag = Pin._meta.db_table, Archived._meta.db_table, Tag._meta.db_table
    teams = ", ".join(["%s"] * len(team_ids))
    tagged = f"EXISTS (SELECT 1 FROM {tag} WHERE team_id IN ({teams}))" if team_ids else "false"
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT EXISTS (SELECT 1 FROM {pin} WHERE session_id = %s AND user_id = %s), "
            f"EXISTS (SELECT 1 FROM {archived} WHERE session_id = %s), {tagged}",
            [session_id, user_id, session_id, *team_ids],
        )
        row = cursor.fetchone()
    return bool(row[0]), bool(row[1]), bool(row[2])


def pinned_ids(user: Any, session_ids: Iterable[int]) -> set[int]:
    if not getattr(user, "is_authenticated", False):
        return set()
    return set(
        Pin.objects.filter(user=user, session_id__in=list(session_ids)).values_list("session_id", flat=True)
    )


def archived_ids(session_ids: Iterable[int]) -> set[int]:
    return set(Archived.objects.filter(session_id__in=list(session_ids)).values_list("session_id", flat=True))


def saved_filters(user: Any, *, team_ids: list[int] | None = None) -> list[SavedFilter]:
    """The user's own filters, then their teams' (``team_ids`` when the caller read them; by team, then
    name)."""
    if not getattr(user, "is_authenticated", False):
        return []
    teams = member_team_ids(user) if team_ids is None else team_ids
    return list(
        SavedFilter.objects.filter(Q(user=user) | Q(team_id__in=teams))
        .select_related("team")
        .order_by("team__name", "name", "pk")
    )


def visible_filter(user: Any, filter_id: int) -> SavedFilter | None:
    return next((f for f in saved_filters(user) if f.pk == filter_id), None)
