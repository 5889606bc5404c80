"""HTML pages. The session page is a shell: its panels load from the REST API and follow the socket."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db.models import Exists, OuterRef, Q, QuerySet
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import NoReverseMatch, reverse

from .domain.operations import FORK_MODES
from .models import ChatSession, Entry

PAGE_SIZE = 50
SORTS = {
    "recent": ("-updated_at", "-pk"),
    "oldest": ("updated_at", "pk"),
    "name": ("name", "pk"),
    "entries": ("-entry_count", "-pk"),
    "created": ("-created_at", "-pk"),
}
SCOPES = ("all", "mine", "shared")
DEFAULT_CONTEXT_WINDOW = 200_000


def search_sessions(user: Any, *, text: str, scope: str, sort: str) -> QuerySet[ChatSession]:
    """Return the sessions ``user`` can read whose name, cwd or message text contains ``text``."""
    query = ChatSession.objects.visible_to(user).select_related("owner")
    if scope == "mine":
        query = query.filter(owner=user)
    elif scope == "shared":
        query = query.exclude(owner=user)
    if text:
        # Only message lines are searched, and the raw JSON stands in for their text: escaped
        # characters may miss, but the scan stays one indexed pass per session.
        messages = Entry.objects.filter(session=OuterRef("pk"), type="message", raw__icontains=text)
        query = query.filter(Q(name__icontains=text) | Q(cwd__icontains=text) | Exists(messages))
    return query.order_by(*SORTS.get(sort, SORTS["recent"]))


def runs_url(pk: int) -> str | None:
    """Return the endpoint that starts an agent run on a session, if this server has one."""
    try:
        return reverse("agent_api:session-runs", args=[pk])
    except NoReverseMatch:
        return None


@login_required
def session_list(request: HttpRequest) -> HttpResponse:
    """List the sessions I can read, with search, sort and paging."""
    text = request.GET.get("q", "").strip()[:200]
    scope = request.GET.get("scope", "all")
    scope = scope if scope in SCOPES else "all"
    sort = request.GET.get("sort", "recent")
    sort = sort if sort in SORTS else "recent"
    query = search_sessions(request.user, text=text, scope=scope, sort=sort)
    page = Paginator(query, PAGE_SIZE).get_page(request.GET.get("page"))
    return render(
        request,
        "sessions_app/session_list.html",
        {"page": page, "q": text, "scope": scope, "sort": sort, "sorts": list(SORTS), "scopes": SCOPES},
    )


@login_required
def import_page(request: HttpRequest) -> HttpResponse:
    """Show the drag-and-drop importer (the upload itself goes to the API)."""
    return render(
        request,
        "sessions_app/import.html",
        {"max_bytes": getattr(settings, "PIWEB_MAX_IMPORT_BYTES", 0)},
    )


@login_required
def session_detail(request: HttpRequest, pk: int) -> HttpResponse:
    """Show one session's tree, branch and context panels."""
    session = ChatSession.objects.visible_to(request.user).select_related("owner").filter(pk=pk).first()
    if session is None:
        raise Http404("Session not found")
    can_edit = ChatSession.objects.editable_by(request.user).filter(pk=pk).exists()
    config = {
        "session": session.pk,
        "canEdit": can_edit,
        "entryCount": session.entry_count,
        "contextWindow": getattr(settings, "PIWEB_DEFAULT_CONTEXT_WINDOW", None) or DEFAULT_CONTEXT_WINDOW,
        "forkModes": list(FORK_MODES),
        "runsUrl": runs_url(session.pk),
    }
    return render(
        request,
        "sessions_app/session_detail.html",
        {"session": session, "can_edit": can_edit, "config": config},
    )
