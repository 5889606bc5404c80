"""The receiver of ``entries_stored`` for bash results: commits and pull requests, linked to their entry.

In the transaction that stored the entries (whatever the path: import, append, sync push, a run), each
``bash`` tool result and each command the user ran (``!command``) is read for ``git commit``'s report
line and for pull-request URLs (``provenance.domain.git_text``). A line that cannot hold either is not
parsed: the check on the raw line is a substring test.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from django.db import transaction
from django.db.models import Q

from pitree.jsjson import parse_json
from provenance.domain.git_text import commits_in, normalize_pr_url, pr_urls_in
from provenance.models import Commit, Found, PullRequest, WorkspaceState
from sessions_app.facade import ChatSession, Entry

__all__ = ["ACTS_ON", "output_of", "reconcile_session", "record", "refresh_entry", "save_found"]

ACTS_ON = (("message", "toolResult"), ("message", "bashExecution"))
# Substrings one of which a line must hold to be worth parsing, beside naming the bash tool.
_HINTS = ("] ", "/pull/", "merge_requests", "visit")
_BASH = re.compile(r'"toolName"\s*:\s*"bash"|"role"\s*:\s*"bashExecution"')


def _maybe(raw: str) -> bool:
    return any(hint in raw for hint in _HINTS) and _BASH.search(raw) is not None


def output_of(value: Any) -> str | None:
    """The output text of a bash tool result or a user's command, else None."""
    message = value.get("message") if isinstance(value, Mapping) else None
    if not isinstance(message, Mapping):
        return None
    role = message.get("role")
    if role == "bashExecution":
        output = message.get("output")
        return output if isinstance(output, str) else None
    if role != "toolResult" or message.get("toolName") != "bash":
        return None
    content = message.get("content")
    if isinstance(content, str):
        return content
    blocks = content if isinstance(content, list) else []
    texts = [
        b["text"]
        for b in blocks
        if isinstance(b, Mapping) and b.get("type") == "text" and isinstance(b.get("text"), str)
    ]
    return "\n".join(texts)


def save_found(session: ChatSession, found: Iterable[tuple[int, str | None, str]]) -> None:
    """Link what the outputs name to their entries: (seq, entry id, output) each, in append order.

    The session's known commits are read once (a session makes few); the new ones go in one insert."""
    named = [(seq, entry_id, commits_in(output), pr_urls_in(output)) for seq, entry_id, output in found]
    if not any(commits or urls for _, _, commits, urls in named):
        return
    known = list(Commit.objects.filter(session=session).values_list("pk", "sha", "found"))
    repository = (
        WorkspaceState.objects.filter(session=session)
        .exclude(repository="")
        .order_by("-seen_at", "-pk")
        .values_list("repository", flat=True)
        .first()
        or ""
    )
    new: list[Commit] = []
    prs: list[PullRequest] = []
    for seq, entry_id, commits, urls in named:
        for commit in commits:
            # A commit known already (its full SHA from a runner, or the same abbreviation) keeps its row;
            # a runner's guess at its entry gives way to this one, whose output names it.
            same = [k for k in known if k[1].startswith(commit.sha) or commit.sha.startswith(k[1])]
            if same:
                runner = [pk for pk, _, how in same if how == Found.RUNNER]
                if runner:
                    Commit.objects.filter(pk__in=runner).update(
                        entry_id=entry_id, seq=seq, found=Found.OUTPUT
                    )
                continue
            known.append((0, commit.sha, Found.OUTPUT))
            new.append(
                Commit(
                    session=session,
                    sha=commit.sha,
                    repository=repository,
                    branch=commit.branch[:255],
                    subject=commit.subject,
                    entry_id=entry_id,
                    seq=seq,
                    found=Found.OUTPUT,
                )
            )
        prs.extend(
            PullRequest(
                session=session, url=url, normalized=normalize_pr_url(url) == url, entry_id=entry_id, seq=seq
            )
            for url in urls
        )
    Commit.objects.bulk_create(new, ignore_conflicts=True, batch_size=1000)
    PullRequest.objects.bulk_create(prs, ignore_conflicts=True, batch_size=1000)


def _outputs(rows: Iterable[tuple[int, str | None, str]]) -> list[tuple[int, str | None, str]]:
    found = []
    for seq, entry_id, raw in rows:
        if not _maybe(raw):
            continue
        output = output_of(parse_json(raw))
        if output:
            found.append((seq, entry_id, output))
    return found


def record(
    sender: Any,
    *,
    session: ChatSession,
    first_seq: int,
    last_seq: int,
    rows: Sequence[Entry] | None,
    **_: Any,
) -> None:
    """Link the commits and pull requests the batch's bash outputs name (receiver of ``entries_stored``)."""
    if rows is None:
        # A bulk import: its bash results are read back, the few that may name either.
        query = (
            Entry.objects.filter(
                session=session,
                seq__gte=first_seq,
                seq__lte=last_seq,
                type="message",
                role__in=("toolResult", "bashExecution"),
                raw__contains="bash",
            )
            .filter(
                Q(raw__contains="] ")
                | Q(raw__contains="/pull/")
                | Q(raw__contains="merge_requests")
                | Q(raw__contains="visit")
            )
            .order_by("seq")
            .values_list("seq", "entry_id", "raw")
        )
        found = _outputs(query.iterator(chunk_size=500))
    else:
        found = _outputs(
            (row.seq, row.entry_id, row.raw)
            for row in rows
            if row.type == "message" and row.role in ("toolResult", "bashExecution")
        )
    if found:
        save_found(session, found)


def reconcile_session(sender: Any, *, session_id: int, **_: Any) -> str | None:
    """Read the bash results of a session stored before provenance (or by the previous release during an
    upgrade) for the commits and pull requests they name (receiver of ``bookkeeping_checked``); safe to
    run again. Return "provenance" when it linked anything new."""
    with transaction.atomic():
        session = ChatSession.with_deleted.select_for_update().filter(pk=session_id).first()
        if session is None or session.next_seq == 0:
            return None
        before = (
            Commit.objects.filter(session=session).count()
            + PullRequest.objects.filter(session=session).count()
        )
        record(ChatSession, session=session, first_seq=0, last_seq=session.next_seq - 1, rows=None)
        after = (
            Commit.objects.filter(session=session).count()
            + PullRequest.objects.filter(session=session).count()
        )
    return "provenance" if after != before else None


def refresh_entry(session: ChatSession, seq: int, value: Any) -> None:
    """An entry rewritten in place (a redaction): the commits and pull requests it named lose what its line
    lost (a subject, a URL); which commits it made stays."""
    output = output_of(value) or ""
    subjects = {c.sha: c.subject for c in commits_in(output)}
    for row in Commit.objects.filter(session=session, seq=seq, found=Found.OUTPUT):
        subject = next((s for sha, s in subjects.items() if row.sha.startswith(sha)), "")
        if row.subject != subject:
            Commit.objects.filter(pk=row.pk).update(subject=subject)
    PullRequest.objects.filter(session=session, seq=seq).exclude(url__in=pr_urls_in(output)).delete()
