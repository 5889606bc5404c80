"""Scan stored entries for secrets after every write, and list what was found.

Every entry write ends with ``sessions_app.signals.entries_committed``; ``scan_after_commit`` answers it.
A session's entries are scanned in append order from its ``ScanProgress`` mark, so a scan that was lost
(a worker down, a broker away) is made up by the next one, and scanning twice finds nothing twice (the
findings' unique key). A small batch (an append, a run's turn, a sync push) is scanned at once, outside
the write's lock; a large one (an import) is handed to a worker, off the request path.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

from django.db import transaction
from django.db.models import F
from django.db.models.functions import Greatest

from sessions_app import access
from sessions_app.actors import Actor, user_of
from sessions_app.domain.jsjson import parse_json
from sessions_app.models import ChatSession, Entry

from .domain.scanning import scan_value
from .models import ScanProgress, SecretFinding

__all__ = ["INLINE_ENTRIES", "list_findings", "scan_after_commit", "scan_session"]

log = logging.getLogger(__name__)

# Entries scanned inside the request that stored them; more go to a worker. About 0.05 ms an entry.
INLINE_ENTRIES = 1000
BATCH = 2000


def scan_after_commit(sender: Any, *, session_id: int, first_seq: int, last_seq: int, **kwargs: Any) -> None:
    """Scan what a committed write stored: at once when it is small, else by a worker."""
    mark = ScanProgress.objects.filter(session_id=session_id).values_list("scanned_to", flat=True).first()
    waiting = last_seq + 1 - (mark or 0)
    if waiting <= 0:
        return
    if waiting <= INLINE_ENTRIES:
        scan_session(session_id)
        return
    from .tasks import scan_session_task

    try:
        scan_session_task.delay(session_id)
    except Exception:
        # The next write's scan starts from the same mark and catches up.
        log.exception("could not queue the secret scan of session %s", session_id)


def scan_session(session_id: int) -> int:
    """Scan the session's entries not scanned yet; return how many findings the scan made."""
    found = 0
    while True:
        mark = (
            ScanProgress.objects.filter(session_id=session_id).values_list("scanned_to", flat=True).first()
        ) or 0
        rows = list(
            Entry.objects.filter(session_id=session_id, seq__gte=mark, session__deleted_at__isnull=True)
            .order_by("seq")
            .values_list("seq", "entry_id", "raw")[:BATCH]
        )
        if not rows:
            return found
        findings = list(_findings(session_id, rows))
        with transaction.atomic():
            created = SecretFinding.objects.bulk_create(findings, ignore_conflicts=True)
            found += len(created)
            end = rows[-1][0] + 1
            _, made = ScanProgress.objects.get_or_create(session_id=session_id, defaults={"scanned_to": end})
            if not made:
                ScanProgress.objects.filter(session_id=session_id).update(
                    scanned_to=Greatest(F("scanned_to"), end)
                )
        if len(rows) < BATCH:
            return found


def _findings(session_id: int, rows: list[tuple[int, str | None, str]]) -> Iterator[SecretFinding]:
    for seq, entry_id, raw in rows:
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


def authorize_findings(actor: Actor, session: ChatSession) -> None:
    """Refuse anyone but the session's owner and staff: findings say where secrets are."""
    user = user_of(actor)
    if user is not None and user.is_staff:
        return
    access.authorize(actor, session, access.OWNER)


def list_findings(*, actor: Actor, session: ChatSession, open_only: bool = False) -> list[SecretFinding]:
    """Return the session's findings in entry order (the owner and staff only)."""
    authorize_findings(actor, session)
    found = SecretFinding.objects.filter(session=session).select_related("redacted_by")
    if open_only:
        found = found.filter(redacted_at__isnull=True)
    return list(found.order_by("seq", "path", "start"))


def open_findings(session_id: int) -> bool:
    """Return whether the session holds a secret not redacted yet."""
    return SecretFinding.objects.filter(session_id=session_id, redacted_at__isnull=True).exists()
