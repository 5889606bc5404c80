"""What apps above ``sessions_app`` add to its pages without it importing them.

- **Badges** on the session list and the session page's bar (review status, tags, a pin): a source takes
  the sessions being shown and the viewer, and answers badges per session id, in one query per source.
- **Parts** of the session page (a review panel, a commits list): a template another app owns, rendered
  in the page's bar (``where="bar"``) or after the panels (``where="end"``), with the page's context and
  its own ``part`` values. A part whose ``when`` answers False for the viewer is left out (link
  visitors see only what a link may show).
- **List parts** of the session list (saved filters, a bulk bar): a template another app owns, rendered
  beside the search form (``where="filters"``) or after the table (``where="end"``), with the sessions
  shown. A part's ``script`` (a module, which may decorate the rows, each ``tr[data-session-id]``) and its
  ``config`` load after the page's own scripts, as page parts' do.

An app registers both in its ``AppConfig.ready()``. A source sees only sessions the viewer may read:
the list and the page found them through access first.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sessions_app.access import Access
    from sessions_app.models import ChatSession

__all__ = [
    "Badge",
    "ListPart",
    "PagePart",
    "attach_badges",
    "list_parts",
    "page_parts",
    "register_badges",
    "register_list_part",
    "register_page_part",
    "session_team_ids",
    "viewer_roles",
]


@dataclass(frozen=True)
class Badge:
    text: str
    kind: str = ""  # a CSS modifier: ``tag badge-<kind>``
    title: str = ""
    url: str = ""  # a link (e.g. the list filtered by this tag)


BadgeSource = Callable[[list["ChatSession"], Any], dict[int, list[Badge]]]


@dataclass(frozen=True)
class PagePart:
    name: str
    template: str
    where: str = "end"  # "bar" or "end"
    # (request, grant, session) -> extra context for the template, or None to leave the part out.
    context: Callable[[Any, Access, ChatSession], dict[str, Any] | None] | None = None
    order: int = 100
    # A module loaded after the page's own (outside <main>, which holds no script but the page's config);
    # the context's ``config``, if any, goes beside it as JSON in ``<name>-config``.
    script: str = ""


@dataclass(frozen=True)
class ListPart:
    name: str
    template: str
    where: str = "end"  # "filters" or "end"
    # (request, sessions shown) -> extra context for the template, or None to leave the part out.
    context: Callable[[Any, list[ChatSession]], dict[str, Any] | None] | None = None
    order: int = 100
    script: str = ""  # as a page part's


_BADGES: dict[str, BadgeSource] = {}
_PARTS: dict[str, PagePart] = {}
_LIST_PARTS: dict[str, ListPart] = {}


def register_badges(name: str, source: BadgeSource) -> None:
    _BADGES[name] = source


def register_page_part(part: PagePart) -> None:
    if part.where not in ("bar", "end"):
        raise ValueError(f"a page part goes in the bar or at the end, not {part.where!r}")
    _PARTS[part.name] = part


def register_list_part(part: ListPart) -> None:
    if part.where not in ("filters", "end"):
        raise ValueError(f"a list part goes beside the filters or at the end, not {part.where!r}")
    _LIST_PARTS[part.name] = part


def attach_badges(sessions: list[ChatSession], viewer: Any) -> None:
    """Give each session a ``badges`` list from every registered source, in name order."""
    for session in sessions:
        session.badges = []  # type: ignore[attr-defined]
    if not sessions:
        return
    for name in sorted(_BADGES):
        found = _BADGES[name](sessions, viewer)
        for session in sessions:
            session.badges.extend(found.get(session.pk, ()))  # type: ignore[attr-defined]


def viewer_roles(request: Any) -> dict[int, str]:
    """The viewer's teams and their role in each (none for a visitor), read once per request for every
    part and badge source that asks."""
    found: dict[int, str] | None = getattr(request, "_piweb_viewer_roles", None)
    if found is None:
        from teams.facade import TeamMembership

        user = getattr(request, "user", None)
        found = (
            dict(TeamMembership.objects.filter(user=user).values_list("team_id", "role"))
            if getattr(user, "is_authenticated", False)
            else {}
        )
        request._piweb_viewer_roles = found
    return found


def session_team_ids(request: Any, session: ChatSession) -> frozenset[int]:
    """The teams the session is shared with, read once per request."""
    memo: tuple[int, frozenset[int]] | None = getattr(request, "_piweb_session_teams", None)
    if memo is None or memo[0] != session.pk:
        from sessions_app.models import SessionShare

        teams = frozenset(SessionShare.objects.filter(session=session).values_list("team_id", flat=True))
        memo = (session.pk, teams)
        request._piweb_session_teams = memo
    return memo[1]


def page_parts(request: Any, grant: Access, session: ChatSession) -> dict[str, list[dict[str, Any]]]:
    """The parts to render, by place: ``{"bar": [...], "end": [...], "scripts": [...]}``, each place's
    ``{"template", "part"}`` and each script's ``{"script", "config", "id"}``."""
    placed: dict[str, list[dict[str, Any]]] = {"bar": [], "end": [], "scripts": []}
    for part in sorted(_PARTS.values(), key=lambda p: (p.order, p.name)):
        extra = part.context(request, grant, session) if part.context is not None else {}
        if extra is None:
            continue
        placed[part.where].append({"template": part.template, "part": extra})
        _add_script(placed, part.name, part.script, extra)
    return placed


def _add_script(
    placed: dict[str, list[dict[str, Any]]], name: str, script: str, extra: dict[str, Any]
) -> None:
    if script:
        placed["scripts"].append({"script": script, "config": extra.get("config"), "id": f"{name}-config"})


def list_parts(request: Any, sessions: list[ChatSession]) -> dict[str, list[dict[str, Any]]]:
    """The session list's parts, by place: ``{"filters": [...], "end": [...], "scripts": [...]}``."""
    placed: dict[str, list[dict[str, Any]]] = {"filters": [], "end": [], "scripts": []}
    for part in sorted(_LIST_PARTS.values(), key=lambda p: (p.order, p.name)):
        extra = part.context(request, sessions) if part.context is not None else {}
        if extra is None:
            continue
        placed[part.where].append({"template": part.template, "part": extra})
        _add_script(placed, part.name, part.script, extra)
    return placed
