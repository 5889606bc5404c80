"""The omitted-attempt audit, written where the fact happens.

Every stored ``context_edit`` gets its row in the transaction that stores it (``record_stored`` receives
``sessions_app``'s ``entries_stored`` signal, whatever the write path: append, run, sync, import); an
assistant answer stored below an open omission settles whether the retry succeeded, in the answer's
transaction. A run that omits its own failed attempt says why (``attribute``) and, when it ends without
trying again, closes its open rows (``close_open``). The admin pages only read the table.
``backfill_omitted_attempts`` rebuilds rows for edits stored before this was in place.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import transaction
from django.db.models import Max, Min
from django.utils import timezone

from agent.facade import AgentRun
from audit.models import OmittedAttempt
from pitree.jsjson import parse_json
from sessions_app.facade import ChatSession, Entry

__all__ = ["ACTS_ON", "attribute", "backfill_omitted_attempts", "close_open", "record_stored"]

# What ``record_stored`` acts on: edits get rows, assistant answers settle open ones.
ACTS_ON = (("context_edit", ""), ("message", "assistant"))

# A backfill reads at most this many edits and open outcomes per call.
NEW_PER_SYNC = 500
PENDING_PER_SYNC = 200
# Entries after an edit searched for the retry: the rest of the edit batch, a compaction, the answer.
RETRY_WINDOW = 16
# Edits read and written per round after a bulk import.
EDITS_PER_BATCH = 500
FAILED_STOPS = frozenset({"error", "length", "aborted"})


@dataclass(frozen=True, slots=True)
class RecoveryRef:
    run: AgentRun
    event: Mapping[str, Any]


def record_stored(
    sender: Any,
    *,
    session: ChatSession,
    first_seq: int,
    last_seq: int,
    rows: Sequence[Entry] | None,
    **_: Any,
) -> None:
    """Audit what was just stored, inside its transaction: new edits get rows, answers settle open ones."""
    if rows is None:
        # After a bulk COPY (an import of 100k entries) only the answers' seq span and the edits are
        # read, the edits a batch at a time: loading every answer's row would hold the file in memory.
        stored = Entry.objects.filter(session=session, seq__gte=first_seq, seq__lte=last_seq)
        span = stored.filter(type="message", role="assistant").aggregate(first=Min("seq"), last=Max("seq"))
        if span["first"] is not None:
            _settle(session, span["first"], span["last"])
        edits = stored.filter(type="context_edit").order_by("seq").iterator(chunk_size=EDITS_PER_BATCH)
        for batch in itertools.batched(edits, EDITS_PER_BATCH):
            _record_edits(session, list(batch))
        return
    answers = [r.seq for r in rows if r.type == "message" and r.role == "assistant"]
    if answers:
        _settle(session, min(answers), max(answers))
    _record_edits(session, [r for r in rows if r.type == "context_edit"])


def _record_edits(session: ChatSession, edits: list[Entry]) -> None:
    if not edits:
        return
    for edit in edits:
        edit.session = session
    targets = _targets(edits)
    OmittedAttempt.objects.bulk_create([_attempt(edit, {}, targets) for edit in edits], ignore_conflicts=True)


def _settle(session: ChatSession, first: int, last: int) -> None:
    """Settle the open omissions an answer stored in [first, last] may follow."""
    pending = OmittedAttempt.objects.filter(
        session=session,
        omits=True,
        retry_succeeded__isnull=True,
        edit__seq__lt=last,
        edit__seq__gte=first - RETRY_WINDOW,
    ).select_related("edit")
    for row in pending:
        answer = _next_answer(row.edit)
        if answer is not None:
            row.retry_succeeded = answer.get("stopReason") not in FAILED_STOPS
            row.save(update_fields=["retry_succeeded", "synced_at"])


def attribute(edit_ids: Sequence[str], *, run: AgentRun, why: str) -> None:
    """Mark the rows of edits a run appended to omit its own failed attempt: why, and which run."""
    kind = why if why in OmittedAttempt.Why.values else OmittedAttempt.Why.MANUAL
    OmittedAttempt.objects.filter(session_id=run.session_id, edit_entry_id__in=list(edit_ids)).update(
        why=kind, run=run, requested_by_id=run.requested_by_id, synced_at=timezone.now()
    )


def close_open(run: AgentRun) -> None:
    """A run that ended without trying again: its still-open omissions did not get a successful retry."""
    OmittedAttempt.objects.filter(run=run, omits=True, retry_succeeded__isnull=True).update(
        retry_succeeded=False, synced_at=timezone.now()
    )


def backfill_omitted_attempts() -> int:
    """Record edits stored before the audit was written at append time; return the number of rows written."""
    fresh = list(
        Entry.objects.filter(type="context_edit", session__deleted_at__isnull=True)
        .exclude(pk__in=OmittedAttempt.objects.values("edit_id"))
        .select_related("session")
        .order_by("pk")[:NEW_PER_SYNC]
    )
    pending = list(
        OmittedAttempt.objects.filter(
            omits=True, retry_succeeded__isnull=True, session__deleted_at__isnull=True
        )
        .select_related("edit", "edit__session")
        .order_by("-edit_id")[:PENDING_PER_SYNC]
    )
    edits = fresh + [row.edit for row in pending]
    if not edits:
        return 0
    refs = _recoveries({edit.session_id for edit in edits})
    targets = _targets(edits)
    rows = [_attempt(edit, refs, targets) for edit in edits]
    written = 0
    with transaction.atomic():
        if fresh:
            # Another page view may be syncing the same edits; the unique edit id makes that harmless.
            OmittedAttempt.objects.bulk_create(rows[: len(fresh)], ignore_conflicts=True)
            written += len(fresh)
        existing = {row.edit_id: row for row in pending}
        changed = []
        for row in rows[len(fresh) :]:
            old = existing[row.edit_id]
            if (row.why, row.retry_succeeded, row.run_id) != (old.why, old.retry_succeeded, old.run_id):
                row.pk, row.synced_at = old.pk, timezone.now()
                changed.append(row)
        if changed:
            OmittedAttempt.objects.bulk_update(
                changed, ["why", "retry_succeeded", "run", "requested_by", "synced_at"]
            )
            written += len(changed)
    return written


def _recoveries(session_ids: Iterable[int]) -> dict[tuple[int, str], RecoveryRef]:
    """Map (session, edit id) to the run recovery that appended the edit."""
    refs: dict[tuple[int, str], RecoveryRef] = {}
    runs = AgentRun.objects.filter(session_id__in=list(session_ids)).exclude(recovery_events=[])
    for run in runs.only("id", "session_id", "status", "requested_by_id", "recovery_events"):
        for event in run.recovery_events or []:
            if not isinstance(event, dict):
                continue
            for edit_id in event.get("omitted") or []:
                refs[(run.session_id, str(edit_id))] = RecoveryRef(run, event)
    return refs


def _payload(row: Entry) -> dict[str, Any]:
    value = parse_json(row.raw)
    return value if isinstance(value, dict) else {}


def _targets(edits: Sequence[Entry]) -> dict[tuple[int, str], Entry]:
    """Return the edited entries, one query for the whole batch."""
    wanted = {(edit.session_id, str(_payload(edit).get("targetId") or "")) for edit in edits}
    rows = Entry.objects.filter(
        session_id__in={s for s, _ in wanted}, entry_id__in={t for _, t in wanted if t}
    )
    return {(row.session_id, row.entry_id or ""): row for row in rows}


def _attempt(
    edit: Entry, refs: Mapping[tuple[int, str], RecoveryRef], targets: Mapping[tuple[int, str], Entry]
) -> OmittedAttempt:
    payload = _payload(edit)
    target_id = str(payload.get("targetId") or "")
    target = targets.get((edit.session_id, target_id))
    message = _payload(target).get("message") if target is not None else None
    message = _mapping(message)
    usage = _mapping(message.get("usage"))
    cost = _mapping(usage.get("cost"))
    ref = refs.get((edit.session_id, edit.entry_id or ""))
    omits = payload.get("replacement") is None
    return OmittedAttempt(
        edit=edit,
        session_id=edit.session_id,
        owner_id=edit.session.owner_id,
        run=ref.run if ref else None,
        requested_by_id=ref.run.requested_by_id if ref else None,
        omits=omits,
        edit_entry_id=edit.entry_id or "",
        target_entry_id=target_id,
        target_role=str(message.get("role") or (target.type if target is not None else "")),
        stop_reason=str(message.get("stopReason") or ""),
        error=str(message.get("errorMessage") or ""),
        provider=str(message.get("provider") or ""),
        model=str(message.get("model") or ""),
        input_tokens=_number(usage.get("input")),
        output_tokens=_number(usage.get("output")),
        total_tokens=_number(usage.get("totalTokens")),
        cost=_float(cost.get("total")),
        why=_why(ref),
        retry_succeeded=_retry_succeeded(edit, ref) if omits else None,
        omitted_at=_when(edit.timestamp),
    )


def _why(ref: RecoveryRef | None) -> str:
    kind = ref.event.get("kind") if ref else None
    return kind if kind in OmittedAttempt.Why.values else OmittedAttempt.Why.MANUAL


def _retry_succeeded(edit: Entry, ref: RecoveryRef | None) -> bool | None:
    """Return the recorded outcome of a compact-and-retry, else that of the next answer on the branch."""
    if ref is not None and isinstance(ref.event.get("retrySucceeded"), bool):
        return bool(ref.event["retrySucceeded"])
    answer = _next_answer(edit)
    if answer is not None:
        return answer.get("stopReason") not in FAILED_STOPS
    if ref is not None and ref.run.is_finished:
        return False  # the run ended without trying again
    return None


def _next_answer(edit: Entry) -> Mapping[str, Any] | None:
    """Return the first assistant message appended below the edit, looking a few entries ahead."""
    window = list(
        Entry.objects.filter(
            session_id=edit.session_id, seq__gt=edit.seq, seq__lte=edit.seq + RETRY_WINDOW
        ).order_by("seq")
    )
    below = {edit.seq}
    for row in window:
        if row.parent_seq not in below:
            continue
        below.add(row.seq)
        if row.type == "message" and row.role == "assistant":
            message = _payload(row).get("message")
            return message if isinstance(message, dict) else {}
    return None


_BIGINT = 2**63


def _number(value: Any) -> int | None:
    """A token counter as the column holds it: JSON allows 1e21, bigint does not (kept as unknown)."""
    if (
        not isinstance(value, int | float)
        or isinstance(value, bool)
        or value != value
        or value in (_INF, -_INF)
    ):
        return None
    number = int(value)
    return number if -_BIGINT <= number < _BIGINT else None


_INF = float("inf")


def _float(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _when(stamp: str) -> datetime | None:
    try:
        return datetime.fromisoformat(stamp) if stamp else None
    except ValueError:
        return None


def attempts_omitted(sender: Any, *, edit_ids: Sequence[str], run: AgentRun, why: str, **kwargs: Any) -> None:
    """Receiver of the agent's ``attempts_omitted``."""
    attribute(edit_ids, run=run, why=why)


def run_closed(sender: Any, *, run: AgentRun, **kwargs: Any) -> None:
    """Receiver of the agent's ``run_closed``."""
    close_open(run)


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}
