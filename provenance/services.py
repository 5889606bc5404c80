"""Use cases of provenance: the workspace a push or a run saw, and the commits a run on a runner made.

Both are called by the app writing the entries (``sync`` for a push, ``runners`` when a run ends),
inside its transaction: the workspace is part of the push, logged as the push is; a run's commits leave
one action-log row of their own, naming the run.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from django.db import transaction
from django.db.models import Q

from actionlog.facade import record_action
from core.actors import Actor
from pitree.storable import storable_text
from provenance.domain.git_text import MAX_SUBJECT_CHARS, strip_credentials
from provenance.models import Commit, Found, Source, WorkspaceState
from provenance.verbs import Action
from sessions_app.facade import ChatSession, Entry, access

__all__ = ["GitState", "RunCommits", "note_workspace", "record_run_commits"]

MAX_RUN_COMMITS = 200  # a run that made more is rebasing history; the newest are kept
_FULL_SHA = re.compile(r"[0-9a-f]{40}")
_REF = re.compile(r"[^\x00-\x1f\x7f]{0,255}")


@dataclass(frozen=True, slots=True)
class GitState:
    """A workspace's repository (remote URL), branch and HEAD, as a client reports it."""

    repository: str = ""
    branch: str = ""
    head: str = ""

    def cleaned(self) -> GitState | None:
        """The state with credentials stripped and fields bounded; None when it says nothing usable.

        A field piweb cannot keep (a SHA-256 HEAD, a branch with control characters) is left out rather
        than refused: the workspace only accompanies a push or a run, which must not fail for it."""
        head = self.head.strip().lower()
        head = head if _FULL_SHA.fullmatch(head) else ""
        branch = self.branch.strip()
        branch = branch if _REF.fullmatch(branch) and storable_text(branch) else ""
        repository = strip_credentials(self.repository) if self.repository else ""
        repository = repository if storable_text(repository) else ""
        if not (head or repository or branch):
            return None
        return GitState(repository, branch, head)


@dataclass(frozen=True, slots=True)
class RunCommits:
    """What a runner saw around a run: HEAD before and after, and the commits between (oldest first)."""

    state: GitState
    before: str = ""
    commits: Sequence[tuple[str, str]] = field(default_factory=tuple)  # (full SHA, subject)


def _storable(text: str) -> str:
    return text if storable_text(text) else ""


def note_workspace(*, session: ChatSession, state: GitState, source: str) -> WorkspaceState | None:
    """Record the workspace a push or run saw; the caller's transaction holds the session row.

    The same repository, branch and HEAD as last seen from the same source add no row (a live session
    pushes every few seconds)."""
    cleaned = state.cleaned()
    if cleaned is None or source not in Source.values:
        return None
    last = WorkspaceState.objects.filter(session=session).order_by("-seen_at", "-pk").first()
    same = last is not None and (last.repository, last.branch, last.head, last.source) == (
        cleaned.repository,
        cleaned.branch,
        cleaned.head,
        source,
    )
    if same:
        return last
    return WorkspaceState.objects.create(
        session=session,
        repository=cleaned.repository,
        branch=cleaned.branch,
        head=cleaned.head,
        source=source,
        seq=session.next_seq - 1 if session.next_seq else None,
    )


def _last_work_entry(session: ChatSession) -> tuple[int | None, str | None]:
    """The run's last assistant message or tool result: where commits with no naming output are linked."""
    row = (
        Entry.objects.filter(session=session, type="message", role__in=("assistant", "toolResult"))
        .order_by("-seq")
        .values_list("seq", "entry_id")
        .first()
    )
    return (row[0], row[1]) if row is not None else (None, None)


def record_run_commits(*, actor: Actor, session: ChatSession, run: str, report: RunCommits) -> list[Commit]:
    """Link the commits a run on a runner made to the run's entries; ``actor`` is the run's requester.

    A commit whose abbreviation a bash result of the session printed keeps that entry (its output names
    it) and gains its full SHA; any other is linked to the run's last assistant message or tool result.
    """
    access.authorize(actor, session, access.WRITE)
    state = report.state.cleaned() or GitState()
    commits = [
        (sha.strip().lower(), _storable(subject.strip()[:MAX_SUBJECT_CHARS]))
        for sha, subject in list(report.commits)[-MAX_RUN_COMMITS:]
        if _FULL_SHA.fullmatch(sha.strip().lower())
    ]
    with transaction.atomic():
        locked = ChatSession.objects.select_for_update().get(pk=session.pk)
        note_workspace(session=locked, state=state, source=Source.RUNNER)
        if not commits:
            return []
        seq, entry_id = _last_work_entry(locked)
        linked: list[Commit] = []
        for sha, subject in commits:
            known = Commit.objects.filter(session=locked).filter(
                Q(sha=sha) | Q(sha__in=[sha[:n] for n in range(7, 40)])
            )
            row = known.first()
            if row is not None:
                # The entry whose output named it stays; the SHA becomes the full one.
                row.sha, row.subject = sha, row.subject or subject
                row.repository = row.repository or state.repository
                row.save(update_fields=["sha", "subject", "repository"])
                linked.append(row)
                continue
            linked.append(
                Commit.objects.create(
                    session=locked,
                    sha=sha,
                    repository=state.repository,
                    branch=state.branch,
                    subject=subject,
                    entry_id=entry_id,
                    seq=seq,
                    found=Found.RUNNER,
                )
            )
        record_action(
            actor=actor,
            action=Action.RUN_COMMITS,
            session=locked,
            run=run,
            commits=[c.sha for c in linked][:50],
            before=report.before[:40],
            after=state.head,
        )
    return linked
