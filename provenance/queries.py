"""Scoped reads of provenance: the sessions behind a commit or a pull request, a session's commits.

Every answer is cut to what the caller may read first: a session the caller cannot read is not in the
answer, and nothing says it exists (no count, no hint). Link visitors see only the commits whose entry
their link shows.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from django.db import connection
from django.db.models import Q, QuerySet
from django.urls import reverse

from provenance.domain.git_text import MAX_URL_CHARS, is_sha, normalize_pr_url
from provenance.models import Commit, PullRequest, WorkspaceState
from sessions_app.facade import Access, ChatSession, link_scope, path_rows

__all__ = [
    "BadQuery",
    "commit_match",
    "commits_of",
    "has_any",
    "pr_match",
    "pull_requests_of",
    "session_ids_for_commits",
    "session_ids_for_prs",
    "sessions_behind",
    "workspace_of",
]

MAX_SESSIONS = 100


class BadQuery(ValueError):
    """A commit that is not 7 to 40 hex digits, or an empty or too long URL."""


def commit_match(sha: str) -> Q:
    """Rows of this commit: the SHA or a longer one it abbreviates, or an abbreviation of it."""
    sha = sha.strip().lower()
    if not is_sha(sha):
        raise BadQuery("A commit is 7 to 40 hex digits")
    return Q(sha__startswith=sha) | Q(sha__in=[sha[:n] for n in range(7, len(sha))])


def pr_match(url: str) -> Q:
    url = url.strip()
    if not url or len(url) > MAX_URL_CHARS or not url.isprintable():
        raise BadQuery(f"A pull-request URL is 1 to {MAX_URL_CHARS} characters")
    return Q(url=normalize_pr_url(url) or url)


def session_ids_for_commits(shas: Iterable[str]) -> QuerySet[Commit, int]:
    match = Q()
    for sha in shas:
        match |= commit_match(sha)
    return Commit.objects.filter(match).values_list("session_id", flat=True)


def session_ids_for_prs(urls: Iterable[str]) -> QuerySet[PullRequest, int]:
    match = Q()
    for url in urls:
        match |= pr_match(url)
    return PullRequest.objects.filter(match).values_list("session_id", flat=True)


def sessions_behind(user: Any, *, commit: str = "", pr: str = "") -> list[dict[str, Any]]:
    """The sessions ``user`` may read that made ``commit`` or named ``pr``, with the entries that did."""
    model: type[Commit] | type[PullRequest] = Commit if commit else PullRequest
    match = commit_match(commit) if commit else pr_match(pr)
    readable = ChatSession.objects.visible_to(user).values("pk")
    rows = list(
        model.objects.filter(match, session_id__in=readable)  # type: ignore[attr-defined]
        .order_by("session_id", "seq")
        .values("session_id", "entry_id", "seq", *(("sha", "subject") if commit else ("url",)))[:1000]
    )
    by_session: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        by_session[row["session_id"]].append(row)
    sessions = ChatSession.objects.filter(pk__in=list(by_session)).order_by("-updated_at")[:MAX_SESSIONS]
    out = []
    for session in sessions:
        base = reverse("sessions:detail", args=[session.pk])
        entries = [
            {
                "entryId": r["entry_id"],
                "url": f"{base}#entry={r['entry_id']}" if r["entry_id"] else base,
                **({"sha": r["sha"], "subject": r["subject"]} if commit else {"pr": r["url"]}),
            }
            for r in by_session[session.pk]
        ]
        out.append({"id": session.pk, "title": session.name or "", "url": base, "entries": entries})
    return out


def commits_of(grant: Access, *, leaf: str | None = None, entry: str | None = None) -> list[Commit]:
    """The session's commits this viewer may see, oldest first; with ``leaf``, those on its path only;
    with ``entry``, that entry's (an entry this viewer may not see answers as the session's other reads
    do)."""
    return _scoped(grant, Commit.objects.filter(session=grant.session), leaf=leaf, entry=entry)


def pull_requests_of(
    grant: Access, *, leaf: str | None = None, entry: str | None = None
) -> list[PullRequest]:
    """The pull-request URLs the session's entries named, as ``commits_of`` scopes commits."""
    return _scoped(grant, PullRequest.objects.filter(session=grant.session), leaf=leaf, entry=entry)


def _scoped[Row: (Commit, PullRequest)](
    grant: Access, query: QuerySet[Row], *, leaf: str | None, entry: str | None
) -> list[Row]:
    session = grant.session
    if entry:
        query = query.filter(seq=grant.entry(entry).seq)
    rows = list(query.order_by("seq", "pk"))
    if leaf:
        on_path = {r[0] for r in path_rows(session, grant.entry(leaf), fields=("seq",))}
        rows = [r for r in rows if r.seq in on_path]
    if grant.link is not None:
        seen = set(
            link_scope.scoped_entries(grant)
            .filter(seq__in=[r.seq for r in rows if r.seq is not None])
            .values_list("seq", flat=True)
        )
        rows = [r for r in rows if r.seq in seen]
    return rows


def has_any(session_id: int) -> bool:
    """Whether the session has a commit, a pull request or a workspace at all: one plain probe, so the
    session page of the many sessions without any asks nothing more."""
    tables = (Commit._meta.db_table, PullRequest._meta.db_table, WorkspaceState._meta.db_table)
    probes = " OR ".join(f"EXISTS (SELECT 1 FROM {t} WHERE session_id = %s)" for t in tables)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {probes}", [session_id] * len(tables))
        row = cursor.fetchone()
    return bool(row[0])


def workspace_of(grant: Access) -> WorkspaceState | None:
    """The workspace last seen for the session (members only: a link shows entries, not the machine)."""
    if grant.link is not None:
        return None
    return WorkspaceState.objects.filter(session=grant.session).order_by("-seen_at", "-pk").first()
