"""HTML pages. The session page is a shell: its panels load from the REST API and follow the socket."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db import connection
from django.db.models import BooleanField, QuerySet
from django.db.models.expressions import RawSQL
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils import timezone
from django.utils.http import urlencode

from pitree.operations import FORK_MODES
from pitree.searchable import marked, query_terms
from pitree.work_query import WorkQuery, WorkQueryError, parse_work_query
from providers.facade import available_models
from sessions_app import access, link_scope, list_filters, page_parts, signals, text_search, work_search
from sessions_app.models import ChatSession, ShareLink, first_prompt
from teams.facade import Team

PAGE_SIZE = 50
SNIPPETS_PER_SESSION = 3  # newest hits shown under each session of a search; the rest are stepped through
SORTS = {
    "recent": ("-updated_at", "-pk"),
    "oldest": ("updated_at", "pk"),
    "name": ("name", "pk"),
    "entries": ("-entry_count", "-pk"),
    "created": ("-created_at", "-pk"),
}
SCOPES = ("all", "mine", "shared")


def search_sessions(
    user: Any, *, text: str, scope: str, sort: str, params: Mapping[str, Any] | None = None
) -> QuerySet[ChatSession]:
    """Return the sessions ``user`` can read whose name, cwd or message text contains ``text``, or whose
    tool uses match its ``path:``, ``tool:`` and ``cmd:`` terms (raises WorkQueryError for a bad one),
    narrowed by the structured filters in ``params`` (raises FilterError for a bad one)."""
    query = ChatSession.objects.visible_to(user).select_related("owner").annotate(first_prompt=first_prompt())
    # Filters may take terms of the text itself (a pasted commit SHA or pull-request URL).
    text, named = list_filters.read_search_text(text, params or {})
    query = list_filters.apply_filters(query, named, user)
    if scope == "mine":
        query = query.filter(owner=user)
    elif scope == "shared":
        query = query.exclude(owner=user)
    work = parse_work_query(text)
    if work.has_work:
        # The index of work among the readable sessions; words beside the terms match message text.
        readable = list(query.values_list("pk", flat=True))
        touched = work_search.matching_sessions(readable, work)
        if work.text:
            touched = set(text_search.matching_sessions([pk for pk in readable if pk in touched], work.text))
        query = _only([pk for pk in readable if pk in touched])
    elif text:
        # Message text through the search index (full-text on PostgreSQL), among the readable sessions,
        # and the name or folder holding the words (as SQL's case-insensitive LIKE compares them).
        rows = list(query.values_list("pk", "name", "cwd"))
        matched = set(text_search.matching_sessions([pk for pk, _, _ in rows], text))
        needle = text.upper()
        query = _only(
            [
                pk
                for pk, name, cwd in rows
                if pk in matched or needle in (name or "").upper() or needle in cwd.upper()
            ]
        )
    if sort not in SORTS or sort == "recent":
        return query.order_by(*list_filters.leading_order(user), *SORTS["recent"])
    return query.order_by(*SORTS[sort])


def _only(pks: list[int]) -> QuerySet[ChatSession]:
    """The list's rows for sessions already found readable and matching: counting and paging them then
    reads these rows by key instead of evaluating access and every filter again."""
    base = ChatSession.objects.select_related("owner").annotate(first_prompt=first_prompt())
    if connection.vendor == "postgresql":
        # One array parameter: thousands of ids in an IN list cost more to build than to run.
        table = ChatSession._meta.db_table
        return base.filter(RawSQL(f'"{table}"."id" = ANY(%s::bigint[])', (pks,), output_field=BooleanField()))
    return base.filter(pk__in=pks)


@login_required
def session_list(request: HttpRequest) -> HttpResponse:
    """List the sessions I can read, with search, sort and paging."""
    text = request.GET.get("q", "").strip()[:200]
    scope = request.GET.get("scope", "all")
    scope = scope if scope in SCOPES else "all"
    sort = request.GET.get("sort", "recent")
    sort = sort if sort in SORTS else "recent"
    error = ""
    try:
        query = search_sessions(request.user, text=text, scope=scope, sort=sort, params=request.GET)
    except (WorkQueryError, list_filters.FilterError) as exc:
        error, query = str(exc), ChatSession.objects.none()
    page = Paginator(query, PAGE_SIZE).get_page(request.GET.get("page"))
    shown = list(page.object_list)
    page_parts.attach_badges(shown, request.user)
    # The pager keeps every parameter (filters included) but the page itself.
    bar, chips, kept = _filter_bar(request)
    if text and not error:
        work = parse_work_query(text)
        if work.has_work:
            _attach_work_hits(list(page.object_list), work, text)
        else:
            _attach_hits(list(page.object_list), text)
    return render(
        request,
        "sessions_app/session_list.html",
        {
            "page": page,
            "q": text,
            "error": error,
            "scope": scope,
            "sort": sort,
            "sorts": list(SORTS),
            "scopes": SCOPES,
            "kept": kept,
            "list_parts": page_parts.list_parts(request, shown),
            "filter_bar": bar,
            "filter_chips": chips,
        },
    )


def _filter_bar(request: HttpRequest) -> tuple[list[dict[str, Any]], list[dict[str, str]], str]:
    """The filter bar's fields (every registered filter, its choices only what the viewer may know of),
    the active values as chips each linking to the list without it, and the query string pages keep."""
    params = [(k, one) for k, many in request.GET.lists() for one in many if k != "page" and one.strip()]
    try:
        active = list_filters.active_filters(request.GET)
    except list_filters.FilterError:
        active = {}
    bar: list[dict[str, Any]] = []
    chips: list[dict[str, str]] = []
    for spec in list_filters.registered_filters():
        values = active.get(spec.name, [])
        choices = spec.choices(request.user) if spec.choices is not None else None
        names = dict(choices or [])
        bar.append(
            {"name": spec.name, "label": spec.label, "kind": spec.kind, "help": spec.help,
             "choices": choices, "value": values[0] if values else ""}
        )  # fmt: skip
        for value in values:
            rest = [(k, one) for k, one in params if not (k == spec.name and one.strip() == value)]
            chips.append(
                {"name": spec.name, "label": spec.label, "value": names.get(value, value),
                 "remove": "?" + urlencode(rest)}
            )  # fmt: skip
    return bar, chips, urlencode(params)


def _attach_work_hits(sessions: list[ChatSession], work: WorkQuery, text: str) -> None:
    """Give each listed session its newest matching tool uses, each opening the tree at its result with
    the search active there (the page's search box steps through the session's matching uses)."""
    found = work_search.hits_of([s.pk for s in sessions], work, SNIPPETS_PER_SESSION)
    for session in sessions:
        hits = found.get(session.pk, [])
        base = f"{reverse('sessions:detail', args=[session.pk])}?{urlencode({'q': text})}"
        session.search_url = base  # type: ignore[attr-defined]
        session.search_hits = [  # type: ignore[attr-defined]
            {
                "url": f"{base}#{urlencode({'entry': h.entry_id})}",
                "pieces": [(h.snippet, False)],
                "role": h.role,
            }
            for h in hits[:SNIPPETS_PER_SESSION]
            if h.entry_id is not None
        ]
        session.more_hits = "more in this session" if len(hits) > SNIPPETS_PER_SESSION else ""  # type: ignore[attr-defined]


def _attach_hits(sessions: list[ChatSession], text: str) -> None:
    """Give each listed session its newest hits (``search_hits``: snippet pieces and where each opens)
    and what is left to step through in the session itself (``more_hits``: a label, or "")."""
    found = text_search.search_entries([s.pk for s in sessions], text, per_session=SNIPPETS_PER_SESSION)
    terms = query_terms(text)
    for session in sessions:
        hits = found.hits.get(session.pk, [])
        base = f"{reverse('sessions:detail', args=[session.pk])}?{urlencode({'q': text})}"
        session.search_url = base  # type: ignore[attr-defined]
        session.search_hits = [  # type: ignore[attr-defined]
            {
                "url": f"{base}#{urlencode({'entry': h.entry_id})}",
                "pieces": marked(h.snippet, terms),
                "role": h.role,
            }
            for h in hits
            if h.entry_id is not None
        ]
        more = ""
        if session.pk in found.more:
            count = found.counts.get(session.pk)
            if count is None:
                more = "more in this session"
            elif session.pk in found.capped:
                more = f"over {count - len(hits)} more in this session"
            else:
                more = f"{count - len(hits)} more in this session"
        session.more_hits = more  # type: ignore[attr-defined]


@login_required
def import_page(request: HttpRequest) -> HttpResponse:
    """Show the drag-and-drop importer (the upload itself goes to the API)."""
    return render(
        request,
        "sessions_app/import.html",
        {"max_bytes": settings.PIWEB_MAX_IMPORT_BYTES},
    )


def render_session(
    request: HttpRequest, grant: access.Access, *, share_token: str | None = None
) -> HttpResponse:
    """Render the session page for this viewer: read-only without write access, no actions via a link."""
    # A frozen link shows the session as it was when it was frozen (name, counters, last activity).
    session = link_scope.session_as_seen(grant)
    is_owner = request.user.is_authenticated and session.owner_id == request.user.pk
    config = {
        "session": session.pk,
        "canEdit": grant.can_write,
        "readOnly": share_token is not None,
        "shareToken": share_token,
        "isOwner": is_owner,
        # Whose entries the tree's "Mine" filter shows (none through a link).
        "userId": request.user.pk if request.user.is_authenticated and share_token is None else None,
        "entryCount": session.entry_count if not grant.restricted else 0,
        # Where the socket's catch-up starts; a link's page asks its scope's instead.
        "lastSeq": (session.next_seq - 1 if session.next_seq else None) if share_token is None else None,
        "contextWindow": settings.PIWEB_DEFAULT_CONTEXT_WINDOW,
        "forkModes": list(FORK_MODES),
        "runsUrl": reverse("agent_api:session-runs", args=[session.pk]) if grant.can_write else None,
        "name": session.name or "",
        "leafId": grant.leaf_id(),
        "models": available_models() if share_token is None else [],
        "isStaff": bool(getattr(request.user, "is_staff", False)),
        # The compact dialog says before the click when a path is too small to compact.
        "compactKeepRecentTokens": settings.PIWEB_COMPACTION_KEEP_RECENT_TOKENS,
        # The composer checks attached pictures before sending (the server checks them again).
        "maxImageBytes": settings.PIWEB_MAX_IMAGE_BYTES,
        "maxImages": settings.PIWEB_MAX_IMAGES,
    }
    teams = Team.objects.filter(memberships__user=request.user).order_by("name") if is_owner else []  # type: ignore[misc]  # signed in: never the anonymous user here
    # The source of a fork or clone is named only to someone who may read it.
    source = None
    if session.forked_from_id and share_token is None and request.user.is_authenticated:
        origin = access.resolve_access(request.user, session.forked_from_id)
        if origin is not None:
            source = origin.session
    return render(
        request,
        "sessions_app/session_detail.html",
        {
            "session": session,
            "can_edit": grant.can_write,
            "read_only": share_token is not None,
            "share_token": share_token,
            "is_owner": is_owner,
            "teams": teams,
            "link": grant.link,
            "config": config,
            "source": source,
            "parts": page_parts.page_parts(request, grant, session),
        },
    )


@login_required
def session_detail(request: HttpRequest, pk: int) -> HttpResponse:
    """Show one session's tree, branch and context panels."""
    grant = access.resolve_access(request.user, pk)
    if grant is None:
        raise Http404("Session not found")
    return render_session(request, grant)


def shared_session(request: HttpRequest, token: str) -> HttpResponse:
    """Show a session through a share link, read-only; no sign-in needed."""
    grant = access.link_access(token)
    if grant is None:
        raise Http404("This link does not exist, has expired or was revoked.")
    signals.link_opened.send(ShareLink, link=grant.link, user=_viewer(request), via="page")
    return render_session(request, grant, share_token=token)


def _viewer(request: HttpRequest) -> Any:
    user = getattr(request, "user", None)
    return user if getattr(user, "is_authenticated", False) else None


@login_required
def links_page(request: HttpRequest) -> HttpResponse:
    """List the read-only links to my sessions, with their scope, state and a revoke button."""
    links = (
        ShareLink.objects.filter(session__owner=request.user, session__deleted_at__isnull=True)  # type: ignore[misc]  # signed in: never the anonymous user here
        .select_related("session")
        .order_by("revoked_at", "-created_at")[:500]
    )
    now = timezone.now()
    # Only a hash of each token is stored: the list names links by prefix, it cannot give their address.
    rows = [{"link": link, "state": link.state(now)} for link in links]
    return render(request, "sessions_app/links.html", {"rows": rows})


@login_required
def teams_page(request: HttpRequest) -> HttpResponse:
    """Teams I belong to: create one, invite people, change roles (the page works over the API)."""
    return render(request, "sessions_app/teams.html", {})


@login_required
def team_page(request: HttpRequest, team_id: int) -> HttpResponse:
    """One team: its sessions with search, its pending invitations and default sharing (over the API)."""
    try:
        team = access.team_of(request.user, team_id, owner=False)
    except access.NotVisible:
        raise Http404("Team not found") from None
    return render(
        request, "sessions_app/team.html", {"team": team, "role": access.team_role(request.user, team)}
    )


@login_required
def tokens_page(request: HttpRequest) -> HttpResponse:
    """My API tokens: create one (its text is shown once) for piweb-sync or a script, revoke any."""
    return render(request, "sessions_app/tokens.html", {})


@login_required
def compare_page(request: HttpRequest, pk: int) -> HttpResponse:
    """Two nodes' contexts side by side; the page reads both contexts from the API."""
    grant = access.resolve_access(request.user, pk)
    if grant is None:
        raise Http404("Session not found")
    config = {"session": pk, "a": request.GET.get("a", ""), "b": request.GET.get("b", "")}
    return render(request, "sessions_app/compare.html", {"session": grant.session, "config": config})
