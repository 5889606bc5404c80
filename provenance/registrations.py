"""What provenance adds to the session list and page: the ``commit`` and ``pr`` filters (also read from
the search box: ``commit:<sha>``, ``pr:<url>``, or a pasted 40-hex SHA or pull-request URL alone) and the
"Commits" part of the session page."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from django.db.models import Count
from django.urls import reverse
from django.utils.http import urlencode

from provenance import queries
from provenance.domain.git_text import normalize_pr_url
from provenance.models import Commit
from sessions_app.facade import (
    Badge,
    FilterError,
    PagePart,
    SessionFilter,
    register_badges,
    register_page_part,
    register_search_reader,
    register_session_filter,
)

if TYPE_CHECKING:
    from django.db.models import QuerySet

    from sessions_app.facade import Access, ChatSession

__all__ = ["read_terms", "register"]

_TERM = re.compile(r'(?:(?<=\s)|^)(commit|pr):(?:"([^"]*)"?|(\S*))', re.IGNORECASE)
_FULL_SHA = re.compile(r"[0-9a-fA-F]{40}")


def _by_commit(sessions: QuerySet[ChatSession], values: list[str], viewer: Any) -> QuerySet[ChatSession]:
    try:
        return sessions.filter(pk__in=queries.session_ids_for_commits(values))
    except queries.BadQuery as exc:
        raise FilterError(f"commit: {exc}") from None


def _by_pr(sessions: QuerySet[ChatSession], values: list[str], viewer: Any) -> QuerySet[ChatSession]:
    try:
        return sessions.filter(pk__in=queries.session_ids_for_prs(values))
    except queries.BadQuery as exc:
        raise FilterError(f"pr: {exc}") from None


def read_terms(text: str) -> tuple[str, dict[str, list[str]]]:
    """Take ``commit:``/``pr:`` terms out of a search; a search that is only a full SHA or a pull-request
    URL is that filter too."""
    found: dict[str, list[str]] = {}
    stripped = text.strip()
    if _FULL_SHA.fullmatch(stripped):
        return "", {"commit": [stripped.lower()]}
    if normalize_pr_url(stripped) is not None and " " not in stripped:
        return "", {"pr": [stripped]}

    def take(match: re.Match[str]) -> str:
        value = match.group(2) if match.group(2) is not None else match.group(3)
        if value:
            found.setdefault(match.group(1).lower(), []).append(value)
        return " "

    rest = _TERM.sub(take, text)
    return (rest.strip(), found) if found else (text, {})


def _commits_part(request: Any, grant: Access, session: ChatSession) -> dict[str, Any] | None:
    if not queries.has_any(session.pk):
        return None
    commits = queries.commits_of(grant)
    prs = queries.pull_requests_of(grant)
    workspace = queries.workspace_of(grant)
    if not commits and not prs and workspace is None:
        return None
    base = reverse("sessions:detail", args=[session.pk])
    return {
        "commits": [
            {
                "sha": c.sha,
                "short": c.sha[:12],
                "subject": c.subject,
                "branch": c.branch,
                "found": c.get_found_display(),
                # Another address than the page's, so the page loads with the tree opened at the entry.
                "url": f"{base}?commit={c.sha}#entry={c.entry_id}" if c.entry_id else "",
            }
            for c in commits
        ],
        "pull_requests": [
            {
                "url": p.url,
                "normalized": p.normalized,
                "entry": f"{base}?{urlencode({'pr': p.url})}#entry={p.entry_id}",
            }
            for p in prs
        ],
        "workspace": workspace,
    }


def _commit_badges(sessions: list[ChatSession], viewer: Any) -> dict[int, list[Badge]]:
    """ "N commits" on the list's rows of sessions that made any (the list shows readable sessions only)."""
    counts = (
        Commit.objects.filter(session_id__in=[s.pk for s in sessions])
        .values("session_id")
        .annotate(n=Count("pk"))
        .values_list("session_id", "n")
    )
    return {
        pk: [
            Badge(
                text=f"{n} commit{'s' if n != 1 else ''}",
                kind="commits",
                title="Commits made in this session",
                url=reverse("sessions:detail", args=[pk]) + "#commits",
            )
        ]
        for pk, n in counts
    }


def register() -> None:
    register_session_filter(
        SessionFilter(
            name="commit",
            label="Commit",
            apply=_by_commit,
            order=60,
            help="Sessions that made this commit (a SHA, or its first 7 or more hex digits)",
        )
    )
    register_session_filter(
        SessionFilter(
            name="pr",
            label="Pull request",
            apply=_by_pr,
            order=61,
            help="Sessions that named this pull request or merge request URL",
        )
    )
    register_search_reader("provenance", read_terms)
    register_page_part(PagePart("commits", "provenance/commits.html", where="end", context=_commits_part))
    register_badges("provenance", _commit_badges)
