"""Redact secrets: the stored line and everything read from it lose the secret, for good.

The entry's ``raw`` line (entries API, context, exports, share links all read it), its search text and
search row, the session's stored-bytes count and its cache revision (``state_cache`` keys hold it, so
cached trees and hit lists are built again) change in one transaction under the session's lock, with
the action-log row that says who redacted what. The line's export is no longer byte-exact: by design.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from functools import partial

from django.db import connection, transaction
from django.db.models import F
from django.utils import timezone

from actionlog.facade import record_action
from core import realtime
from core.actors import Actor, user_of
from discussion.facade import Comment, rewrite_comment
from documents.secrets import Finding
from governance.domain.redaction import redact_line
from governance.models import SecretFinding
from governance.scanning import authorize_findings, store_comment_findings
from governance.verbs import Action
from pitree.redacted import MARKER_PREFIX, marker
from pitree.searchable import search_text
from provenance.facade import refresh_entry as refresh_provenance
from sessions_app.facade import (
    ChatSession,
    Entry,
    EntrySearch,
    access,
    file_lines_rewritten,
    line_bytes,
    refresh_calls,
)

__all__ = ["redact_findings"]


def redact_findings(
    *, actor: Actor, session: ChatSession, finding_ids: Sequence[int] | None = None
) -> list[SecretFinding]:
    """Redact the given findings (None: every finding not redacted yet); return those redacted now.

    The owner and staff only. Findings already redacted are skipped, so asking twice is harmless.
    Holds SELECT FOR UPDATE on the session row, so no append or other redaction interleaves.
    """
    authorize_findings(actor, session)
    with transaction.atomic():
        locked = ChatSession.objects.select_for_update().filter(pk=session.pk).first()
        if locked is None:
            raise access.NotVisible(f"Session not found: {session.pk}")
        chosen = SecretFinding.objects.select_for_update().filter(session=locked)
        if finding_ids is not None:
            chosen = chosen.filter(pk__in=finding_ids)
            missing = set(finding_ids) - {f.pk for f in chosen}
            if missing:
                raise access.NotVisible(f"Finding not found in this session: {min(missing)}")
        todo = [f for f in chosen if f.redacted_at is None]
        if not todo:
            return []
        by_seq: dict[int, list[SecretFinding]] = defaultdict(list)
        by_comment: dict[int, list[SecretFinding]] = defaultdict(list)
        for finding in todo:
            if finding.comment_id is not None:
                by_comment[finding.comment_id].append(finding)
            elif finding.seq is not None:
                by_seq[finding.seq].append(finding)
        grown = 0
        replaced: list[tuple[str, str]] = []
        for seq, findings in sorted(by_seq.items()):
            grown += _redact_entry(locked, seq, findings, replaced)
        for comment_id, findings in sorted(by_comment.items()):
            _redact_comment(comment_id, findings)
        if by_seq:  # the files view's steps were worked out from those lines
            file_lines_rewritten(locked, sorted(by_seq))
        # The name is copied out of a session_info line when stored: it loses the secret too.
        name = locked.name
        for secret, mark in replaced:
            name = name.replace(secret, mark)
        now = timezone.now()
        user = user_of(actor)
        SecretFinding.objects.filter(pk__in=[f.pk for f in todo]).update(redacted_at=now, redacted_by=user)
        ChatSession.objects.filter(pk=locked.pk).update(
            revision=F("revision") + 1, stored_bytes=F("stored_bytes") + grown, name=name
        )
        record_action(
            actor=actor,
            action=Action.REDACT,
            session=locked,
            findings=len(todo),
            kinds=sorted({f.kind for f in todo}),
            entries=sorted({f.entry_id or str(f.seq) for f in todo if f.comment_id is None}),
            comments=sorted(by_comment),
        )
        if by_seq:
            transaction.on_commit(
                partial(realtime.broadcast, locked.pk, "entries_redacted", seqs=sorted(by_seq))
            )
    for finding in todo:
        finding.redacted_at, finding.redacted_by = now, user
    return todo


def _redact_entry(
    session: ChatSession, seq: int, findings: list[SecretFinding], replaced: list[tuple[str, str]]
) -> int:
    """Rewrite one entry without the findings' secrets; return how many bytes the line grew by."""
    row = Entry.objects.get(session=session, seq=seq)
    result = redact_line(
        row.raw, [Finding(kind=f.kind, path=f.path, start=f.start, end=f.end) for f in findings]
    )
    if result.raw == row.raw:
        return 0
    replaced.extend(result.replaced)
    text = search_text(result.value)
    Entry.objects.filter(pk=row.pk).update(raw=result.raw, search_text=text)
    # A secret in a command or a path leaves the index of work too (its hits show them).
    refresh_calls(session, [(seq, result.value)])
    refresh_provenance(session, seq, result.value)  # and the commit subjects and PR URLs it named
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(
                f"UPDATE {EntrySearch._meta.db_table} SET vector = to_tsvector('simple'::regconfig, %s) "
                "WHERE session_id = %s AND seq = %s",
                [text, session.pk, seq],
            )
    # Other findings later in the same strings moved with the text before them.
    done = {f.pk for f in findings}
    for path, start, delta in result.shifts:
        if delta:
            SecretFinding.objects.filter(
                session=session, seq=seq, path=path, start__gt=start, redacted_at__isnull=True
            ).exclude(pk__in=done).update(start=F("start") + delta, end=F("end") + delta)
    return line_bytes(result.raw) - line_bytes(row.raw)


def _redact_comment(comment_id: int, findings: list[SecretFinding]) -> None:
    """Rewrite one comment without the findings' secrets (its earlier texts lose theirs too)."""
    comment = Comment.objects.select_for_update().filter(pk=comment_id).first()
    if comment is None:
        return
    body = comment.body
    for finding in sorted(findings, key=lambda f: -f.start):
        secret = body[finding.start : finding.end]
        if finding.end > len(body) or secret.startswith(MARKER_PREFIX):
            continue  # the text changed since the scan: the rescan below finds what is left
        body = body[: finding.start] + marker(finding.kind) + body[finding.end :]
    rewrite_comment(comment_id, body)
    # Findings not chosen moved with the text before them: they are found again where they now are.
    store_comment_findings(comment, body, keep={f.pk for f in findings})
