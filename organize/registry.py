"""What organize adds to the session list and page: its filters, tag badges, and its list and page parts."""

from __future__ import annotations

from typing import Any

from django.db.models import Exists, OuterRef, QuerySet
from django.urls import reverse
from django.utils.http import urlencode

from organize import queries
from organize.models import Archived, Pin, SessionTag, Tag
from organize.queries import TEAM_EDITORS
from organize.services import tag_refusal
from sessions_app.facade import (
    Badge,
    ChatSession,
    FilterError,
    ListPart,
    PagePart,
    SessionFilter,
    register_badges,
    register_leading_order,
    register_list_part,
    register_page_part,
    register_session_filter,
    session_team_ids,
    viewer_roles,
)
from teams.facade import Team

ARCHIVED_VALUES = ("only", "include")
YES = ("1", "true", "yes", "on")


def _tag_filter(sessions: QuerySet[ChatSession], values: list[str], viewer: Any) -> QuerySet[ChatSession]:
    """Sessions carrying every given tag; a tag of a team the viewer is not in matches nothing."""
    try:
        wanted = {int(v) for v in values}
    except ValueError:
        raise FilterError("tag: give tag ids (numbers)") from None
    known = set(
        Tag.objects.filter(pk__in=wanted, team_id__in=queries.member_team_ids(viewer)).values_list(
            "pk", flat=True
        )
    )
    if known != wanted:
        return sessions.none()
    for tag_id in sorted(wanted):
        sessions = sessions.filter(pk__in=SessionTag.objects.filter(tag_id=tag_id).values("session_id"))
    return sessions


def _tag_choices(viewer: Any) -> list[tuple[str, str]]:
    return [
        (str(t.pk), f"{t.team.name}: {t.name}") for t in queries.tags_named(queries.member_team_ids(viewer))
    ]


def _archived_filter(
    sessions: QuerySet[ChatSession], values: list[str], viewer: Any
) -> QuerySet[ChatSession]:
    unknown = [v for v in values if v not in ARCHIVED_VALUES]
    if unknown or len(values) > 1:
        raise FilterError("archived: one of only, include")
    if values[0] == "only":
        return sessions.filter(pk__in=Archived.objects.values("session_id"))
    return sessions


def _hide_archived(sessions: QuerySet[ChatSession], viewer: Any) -> QuerySet[ChatSession]:
    return sessions.exclude(pk__in=Archived.objects.values("session_id"))


def _pinned_filter(sessions: QuerySet[ChatSession], values: list[str], viewer: Any) -> QuerySet[ChatSession]:
    if len(values) > 1 or values[0].lower() not in (*YES, "0", "false", "no", "off"):
        raise FilterError("pinned: 1 (only my pinned sessions) or 0")
    if values[0].lower() not in YES:
        return sessions
    if not getattr(viewer, "is_authenticated", False):
        return sessions.none()
    return sessions.filter(pk__in=Pin.objects.filter(user=viewer).values("session_id"))


def _archived_choices(viewer: Any) -> list[tuple[str, str]]:
    return [("only", "Archived only"), ("include", "Archived too")]


def _pinned_choices(viewer: Any) -> list[tuple[str, str]]:
    return [("1", "Pinned by me")]


def _pinned_first(viewer: Any) -> Any:
    """The default list shows the viewer's pinned sessions first (one index probe per listed row)."""
    return Exists(Pin.objects.filter(user=viewer, session=OuterRef("pk"))).desc()


def _list_url(**params: Any) -> str:
    return f"{reverse('sessions:list')}?{urlencode(params)}"


def _badges(sessions: list[ChatSession], viewer: Any) -> dict[int, list[Badge]]:
    ids = [s.pk for s in sessions]
    found: dict[int, list[Badge]] = {}
    for session_id, tags in queries.tags_on(ids, viewer).items():
        found[session_id] = [
            Badge(text=t.name, kind=f"tag-{t.colour}", title=f"{t.team.name} tag", url=_list_url(tag=t.pk))
            for t in tags
        ]
    for session_id in queries.archived_ids(ids):
        found.setdefault(session_id, []).append(
            Badge(
                text="archived",
                kind="archived",
                title="Hidden from the default list",
                url=_list_url(archived="only"),
            )
        )
    return found


def list_context(request: Any, sessions: list[ChatSession]) -> dict[str, Any] | None:
    """The list's saved filters, and the bulk bar's and pin stars' configuration."""
    user = request.user
    if not getattr(user, "is_authenticated", False):
        return None
    roles = viewer_roles(request)
    member_teams = Team.objects.filter(pk__in=list(roles)).order_by("name") if roles else []
    return {
        "config": {
            "pinned": sorted(queries.pinned_ids(user, [s.pk for s in sessions])),
            # The bulk bar's menu needs the names; the tags page counts their sessions.
            "tags": [
                {"id": t.pk, "name": t.name, "colour": t.colour, "team": t.team_id, "teamName": t.team.name}
                for t in queries.tags_named(list(roles))
            ],
            "teams": [
                {"id": t.pk, "name": t.name, "editor": roles.get(t.pk) in TEAM_EDITORS} for t in member_teams
            ],
            "query": request.GET.urlencode(),
        },
    }


def filters_context(request: Any, sessions: list[ChatSession]) -> dict[str, Any] | None:
    """The saved filters menu beside the search form."""
    user = request.user
    if not getattr(user, "is_authenticated", False):
        return None
    roles = viewer_roles(request)
    editor_teams = [team for team, role in roles.items() if role in TEAM_EDITORS]
    return {
        "filters": queries.saved_filters(user, team_ids=list(roles)),
        "teams": Team.objects.filter(pk__in=editor_teams).order_by("name") if editor_teams else [],
        "query": request.GET.urlencode(),
    }


def page_context(request: Any, grant: Any, session: ChatSession) -> dict[str, Any] | None:
    """The bar's pin, archive and tags: from the viewer's teams and the session's shares the page read
    once, and one query for the pin and the archive."""
    user = request.user
    if grant.via_link or not getattr(user, "is_authenticated", False):
        return None
    roles = viewer_roles(request)
    pinned, archived, tagged = queries.page_state(session.pk, user.pk, list(roles))
    on: list[Tag] = []
    offered: list[Tag] = []
    if tagged:
        on = queries.tags_on([session.pk], user, team_ids=list(roles)).get(session.pk, [])
        shared = [t for t in roles if t in session_team_ids(request, session)]
        if shared:
            tags = Tag.objects.filter(team_id__in=shared).select_related("team")
            tags = tags.order_by("team__name", "name")
            offered = [
                t
                for t in tags
                if not tag_refusal(roles.get(t.team_id), shared=True, can_write=grant.can_write, tag=t)
            ]
    return {
        "config": {
            "session": session.pk,
            "pinned": pinned,
            "archived": archived,
            "canArchive": grant.can_write,
            "tags": [{"id": t.pk, "name": t.name, "colour": t.colour, "teamName": t.team.name} for t in on],
            "offered": [
                {"id": t.pk, "name": t.name, "colour": t.colour, "teamName": t.team.name} for t in offered
            ],
        },
    }


def register() -> None:
    register_session_filter(
        SessionFilter(
            name="tag",
            label="Tag",
            apply=_tag_filter,
            choices=_tag_choices,
            kind="choice",
            order=40,
            help="Sessions carrying every given tag (tag ids; the tag badges link here).",
        )
    )
    register_session_filter(
        SessionFilter(
            name="archived",
            label="Archived",
            apply=_archived_filter,
            default=_hide_archived,
            choices=_archived_choices,
            kind="choice",
            order=50,
            help="Archived sessions are hidden unless this asks for them: only, include.",
        )
    )
    register_session_filter(
        SessionFilter(
            name="pinned",
            label="Pinned",
            apply=_pinned_filter,
            choices=_pinned_choices,
            kind="choice",
            order=30,
            help="1: only the sessions I pinned.",
        )
    )
    register_leading_order("organize-pins", _pinned_first)
    register_badges("organize", _badges)
    register_list_part(
        ListPart("organize-filters", "organize/saved_filters.html", where="filters", context=filters_context)
    )
    register_list_part(
        ListPart(
            "organize",
            "organize/list_part.html",
            where="end",
            context=list_context,
            script="organize/list.js",
        )
    )
    register_page_part(
        PagePart(
            "organize",
            "organize/session_part.html",
            where="bar",
            context=page_context,
            script="organize/session_part.js",
        )
    )
