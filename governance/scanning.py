"""Scan stored entries for secrets after every write, and list what was found.

Every entry write ends with ``sessions_app.signals.entries_committed``; ``scan_after_commit`` answers it,
outside the write's transaction and lock. A small batch (an append, a run's turn, a sync push) is
scanned at once from the rows the write already holds, so a line without a secret costs no query; a
large one (a bulk import) is recorded as a ``PendingScan`` and handed to a worker, off the request path.
A pending scan whose task was lost is run by the hourly sweep, or at once when someone asks whether the
session may be shared. Scanning twice finds nothing twice (the findings' unique key).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from datetime import timedelta
from functools import partial
from typing import Any

from django.db import transaction
from django.db.models import Count, F
from django.utils import timezone

from core import realtime
from core.actors import Actor, user_of
from core.tasks import enqueue
from discussion.facade import Comment
from documents.secrets import scan_value, secret_spans
from governance import signals
from governance.models import PendingScan, SecretFinding
from pitree.jsjson import parse_json
from pitree.redacted import MARKER_PREFIX
from sessions_app.facade import ChatSession, Entry, access

__all__ = [
    "INLINE_ENTRIES",
    "list_findings",
    "run_pending_scan",
    "scan_after_commit",
    "scan_comment",
    "scan_range",
    "scan_session_now",
    "secrets_in",
    "store_comment_findings",
    "sweep_pending_scans",
]

log = logging.getLogger(__name__)

# Entries scanned in the request that stored them (about 0.05 ms each); more go to a worker, and so
# do batches of more bytes (a long run of letters and digits costs up to half a second a MB).
INLINE_ENTRIES = 1000
INLINE_BYTES = 256 * 1024
BATCH = 2000
SECRETS_FOUND = "secrets_found"
# Where a comment's finding sits: its body, the one string it has.
COMMENT_PATH = "/body"

Line = tuple[int, str | None, str]  # seq, entry id, stored line


def scan_after_commit(
    sender: Any, *, session_id: int, first_seq: int, last_seq: int, rows: Any = None, **kwargs: Any
) -> None:
    """Scan what a committed write stored: at once when it is small, else by a worker.

    The write has committed: nothing here may fail it. A scan that cannot run now is left to a worker,
    and when even that cannot be recorded, the failure is logged.
    """
    try:
        if last_seq - first_seq + 1 <= INLINE_ENTRIES:
            if rows is None:
                scan_range(session_id, first_seq, last_seq)
                return
            if sum(len(r.raw) for r in rows) <= INLINE_BYTES:
                _store(session_id, [(r.seq, r.entry_id, r.raw) for r in rows])
                return
    except Exception:
        log.exception("the secret scan of session %s failed; a worker will retry it", session_id)
    try:
        pending = PendingScan.objects.create(session_id=session_id, first_seq=first_seq, last_seq=last_seq)
    except Exception:
        log.exception("entries %s-%s of session %s were not scanned", first_seq, last_seq, session_id)
        return
    _queue(pending.pk)


def _queue(pending_id: int) -> None:
    try:
        enqueue("governance.scan_pending", pending_id)
    except Exception:
        log.exception("could not queue secret scan %s; the sweep will run it", pending_id)


def scan_range(session_id: int, first_seq: int, last_seq: int) -> int:
    """Scan the session's entries first_seq..last_seq (inclusive); return how many findings it made."""
    found = 0
    for low in range(first_seq, last_seq + 1, BATCH):
        lines = Entry.objects.filter(
            session_id=session_id, seq__gte=low, seq__lte=min(last_seq, low + BATCH - 1)
        ).values_list("seq", "entry_id", "raw")
        found += _store(session_id, list(lines))
    return found


def run_pending_scan(pending_id: int) -> int:
    """Run one queued scan (a worker's task, the sweep, or a sharing check); a second run finds it gone."""
    pending = PendingScan.objects.filter(pk=pending_id).first()
    if pending is None:
        return 0
    found = 0
    if ChatSession.objects.filter(pk=pending.session_id).exists():
        found = scan_range(pending.session_id, pending.first_seq, pending.last_seq)
    PendingScan.objects.filter(pk=pending_id).delete()
    return found


def scan_session_now(session_id: int) -> None:
    """Run the session's queued scans here (before a decision that needs every finding)."""
    for pending_id in PendingScan.objects.filter(session_id=session_id).values_list("pk", flat=True):
        run_pending_scan(pending_id)


def sweep_pending_scans(*, older_than: timedelta = timedelta(minutes=10)) -> int:
    """Run queued scans whose task never ran (the broker was away, a worker died); return how many."""
    stale = PendingScan.objects.filter(queued_at__lt=timezone.now() - older_than).values_list("pk", flat=True)
    done = 0
    for pending_id in list(stale):
        run_pending_scan(pending_id)
        done += 1
    return done


def _store(session_id: int, lines: Iterable[Line]) -> int:
    findings = list(_findings(session_id, lines))
    if findings:
        seqs = [f.seq for f in findings if f.seq is not None]
        where = f"{session_id}:entries:{min(seqs, default=0)}-{max(seqs, default=0)}"
        with transaction.atomic():
            SecretFinding.objects.bulk_create(findings, ignore_conflicts=True)
            transaction.on_commit(partial(_announce_found, session_id, len(findings), where))
    return len(findings)


def _announce_found(session_id: int, count: int = 0, where: str = "") -> None:
    """Tell the session's pages that findings were recorded; the owner's page lists them again. The
    event says nothing of where or what. Apps above hear how many (``signals.secrets_found``)."""
    realtime.broadcast(session_id, SECRETS_FOUND)
    if count and signals.secrets_found.receivers:
        signals.secrets_found.send(SecretFinding, session_id=session_id, count=count, where=where)


def _findings(session_id: int, lines: Iterable[Line]) -> Iterator[SecretFinding]:
    for seq, entry_id, raw in lines:
        try:
            value = parse_json(raw)
        except ValueError:
            continue
        for finding in scan_value(value):
            yield SecretFinding(
                session_id=session_id,
                seq=seq,
                entry_id=entry_id,
                kind=finding.kind,
                path=finding.path,
                start=finding.start,
                end=finding.end,
            )


def scan_comment(sender: Any, *, comment_id: int, **kwargs: Any) -> None:
    """Scan a comment just posted or edited: its open findings become those of its new text.

    Runs after the comment committed; a failure is logged and costs only the findings (the email masks
    secrets on its own).
    """
    try:
        comment = Comment.objects.filter(pk=comment_id, deleted_at__isnull=True).first()
        if comment is None:
            return
        with transaction.atomic():
            count = store_comment_findings(comment, comment.body)
            if count:
                where = f"{comment.session_id}:comment:{comment.pk}:{len(comment.body)}"
                transaction.on_commit(partial(_announce_found, comment.session_id, count, where))
    except Exception:
        log.exception("the secret scan of comment %s failed", comment_id)


def secrets_in(*, actor: Actor, text: str) -> list[tuple[str, int, int]]:
    """Return (kind, start, end) of each secret in ``text``, for a signed-in user about to send it."""
    if user_of(actor) is None:
        raise access.NotSignedIn()
    return secret_spans(text)


def store_comment_findings(comment: Comment, body: str, *, keep: Iterable[int] = ()) -> int:
    """Make the comment's open findings (but those in ``keep``) the secrets of ``body``; return how many
    were found. Markers of earlier redactions are not secrets."""
    open_ones = SecretFinding.objects.filter(comment_id=comment.pk, redacted_at__isnull=True)
    open_ones.exclude(pk__in=list(keep)).delete()
    found = [
        SecretFinding(
            session_id=comment.session_id,
            comment_id=comment.pk,
            entry_id=comment.entry_id,
            kind=kind,
            path=COMMENT_PATH,
            start=start,
            end=end,
        )
        for kind, start, end in secret_spans(body)
        if not body[start:end].startswith(MARKER_PREFIX)
    ]
    SecretFinding.objects.bulk_create(found, ignore_conflicts=True)
    return len(found)


def authorize_findings(actor: Actor, session: ChatSession) -> None:
    """Refuse anyone but the session's owner and staff: findings say where secrets are."""
    user = user_of(actor)
    if user is not None and user.is_staff:
        return
    access.authorize(actor, session, access.OWNER)


def list_findings(*, actor: Actor, session: ChatSession) -> list[SecretFinding]:
    """Return the session's findings in entry order (the owner and staff only)."""
    authorize_findings(actor, session)
    found = SecretFinding.objects.filter(session=session).select_related("redacted_by")
    # Entries' findings in append order, then the comments' (no seq) in the order they were written.
    return list(found.order_by(F("seq").asc(nulls_last=True), "comment_id", "path", "start"))


def open_counts(*, owner: Any) -> list[tuple[int, int]]:
    """Return (session id, open findings) for the owner's live sessions holding unredacted secrets."""
    rows = (
        SecretFinding.objects.filter(
            session__owner=owner, session__deleted_at__isnull=True, redacted_at__isnull=True
        )
        .values("session_id")
        .annotate(open=Count("pk"))
        .order_by("session_id")
        .values_list("session_id", "open")
    )
    return list(rows)


def scanned(session: ChatSession) -> bool:
    """Return whether every stored entry of the session has been scanned (no bulk scan waits)."""
    return not PendingScan.objects.filter(session=session).exists()
