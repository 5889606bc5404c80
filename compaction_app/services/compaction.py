"""Compaction as Pi does it: manual (queued, from the API) or automatic (threshold, overflow, from runs)."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction

from actionlog.facade import record_action
from compaction_app.domain.preparation import (
    CompactionPreparation,
    manual_compaction_error,
    prepare_compaction,
)
from compaction_app.domain.settings import resolve_settings, with_session_override
from compaction_app.domain.summary import CompactionResult, Summarizer, compact
from compaction_app.models import CompactionRun
from compaction_app.services.operations import (
    OperationInProgress,
    Reason,
    Recorder,
    Status,
    announce_end,
    begin,
    copy_run,
    cost,
    create_run,
    enqueue,
    event_prefix,
    existing_run,
    fail_run,
    finish,
    lock_idle_session,
    log_end,
    scoped_key,
    summarizer_for,
)
from compaction_app.verbs import Action
from core import metrics
from core.actors import Actor
from pitree.entries import Entry as DomainEntry
from pitree.storable import MAX_NAME_CHARS, check_text
from pitree.tokens import current_system_message, estimate_tokens
from sessions_app.facade import AppendConflict, ChatSession, access, append_entries, context_for_leaf

__all__ = [
    "BUSY_COMPACTING",
    "SESSION_CHANGED",
    "CompactionOutcome",
    "CompactionRefused",
    "check_compaction",
    "compact_session",
    "compaction_settings",
    "request_compaction",
]

SESSION_CHANGED = "Session changed while compacting"
BUSY_COMPACTING = "Wait for the current compaction or tree navigation to finish before compacting."


class CompactionRefused(Exception):
    """Pi refuses the compaction before any work starts ("Already compacted", "Nothing to compact …")."""


@dataclass(frozen=True, slots=True, kw_only=True)
class CompactionOutcome:
    """How a compaction ended; ``error_message`` is the text Pi's ``compaction_end`` event carries."""

    operation_id: str
    status: str  # succeeded | failed | cancelled | skipped
    reason: str
    entry_id: str | None = None
    summary: str | None = None
    first_kept_entry_id: str | None = None
    tokens_before: float | None = None
    estimated_tokens_after: int | None = None
    usage: Mapping[str, Any] | None = None
    details: Mapping[str, Any] | None = None
    error: str | None = None  # the bare reason, e.g. "Already compacted"
    error_message: str | None = None


def compaction_settings(
    provider: Any = None, model_id: Any = None, session: ChatSession | None = None
) -> Any:
    """Return the settings (``PIWEB_COMPACTION*``) with the model's, then the session's, overrides."""
    defaults = {
        "reserveTokens": settings.PIWEB_COMPACTION_RESERVE_TOKENS,
        "keepRecentTokens": settings.PIWEB_COMPACTION_KEEP_RECENT_TOKENS,
    }
    configured = settings.PIWEB_COMPACTION or {}
    resolved = resolve_settings({**defaults, **configured}, provider=provider, model_id=model_id)
    return with_session_override(resolved, session.compaction_settings if session is not None else None)


@dataclass(frozen=True, slots=True)
class _Plan:
    preparation: CompactionPreparation | None
    error: str | None
    system_message: dict[str, Any] | None
    path: list[DomainEntry]
    thinking_level: Any  # the session's at the planned leaf
    model: dict[str, Any] | None  # the session's model there ({"provider", "modelId"})


def _plan(session: ChatSession, leaf_id: str | None) -> _Plan:
    """Plan a compaction of the path to ``leaf_id`` from the rows its projection reads."""
    view = context_for_leaf(session, leaf_id, use_session_leaf=False)
    model = view.projection.model or {}
    preparation = prepare_compaction(
        view.path, compaction_settings(model.get("provider"), model.get("modelId"), session)
    )
    return _Plan(
        preparation,
        manual_compaction_error(view.path, preparation),
        current_system_message(view.projection.messages),
        view.path,
        view.projection.thinking_level,
        view.projection.model,
    )


def _replaced_range(plan: _Plan) -> tuple[int | None, int | None]:
    """Return the first and last append sequence of the path entries the summary stands for."""
    prep = plan.preparation
    if prep is None:
        return None, None
    sources = {m.source for m in prep.history + prep.turn_prefix if m.source is not None}
    seqs = [e.seq for e in plan.path if e.id in sources]
    kept = next((i for i, e in enumerate(plan.path) if e.id == prep.first_kept_entry_id), None)
    last = plan.path[kept - 1].seq if kept else (max(seqs) if seqs else None)
    return (min(seqs) if seqs else None), last


def check_compaction(session: ChatSession) -> None:
    """Raise CompactionRefused with Pi's message when a manual compaction of the leaf cannot run."""
    error = _plan(session, session.leaf_entry_id).error
    if error is not None:
        raise CompactionRefused(error)


def request_compaction(
    *,
    session: ChatSession,
    actor: Actor,
    reason: str = Reason.MANUAL,
    custom_instructions: str | None = None,
    idempotency_key: str | None = None,
) -> CompactionRun:
    """Queue a compaction of the session's leaf and return its run; the task is sent after commit.

    ``actor`` must be allowed to change the session. A repeated ``idempotency_key`` returns the first
    run. Pi's refusals (and a busy session) are checked here, before queueing: a refusal is kept in the
    compaction history as a ``refused`` run and logged with its reason, then raised. The request is
    logged with the run.
    """
    check_text(custom_instructions, "customInstructions")
    check_text(idempotency_key, "the idempotency key", max_chars=MAX_NAME_CHARS)
    access.authorize(actor, session, access.WRITE)
    key = scoped_key("compaction", session, actor, idempotency_key)
    existing = existing_run(key)
    if existing is not None:
        return existing
    try:
        check_compaction(session)
    except CompactionRefused as exc:
        _refuse(session, actor, reason, custom_instructions, str(exc))
        raise
    try:
        with transaction.atomic():
            locked = lock_idle_session(session, BUSY_COMPACTING)
            run = create_run(
                session=locked,
                kind=CompactionRun.Kind.COMPACTION,
                reason=reason,
                requested_by=actor,
                key=key,
                planned_leaf=locked.leaf_entry_id,
                custom_instructions=custom_instructions or None,
            )
            record_action(actor=actor, action=Action.COMPACT, session=locked, operation=str(run.operation_id))
            transaction.on_commit(partial(enqueue, "run_compaction", run.pk))
    except OperationInProgress as exc:
        _refuse(session, actor, reason, custom_instructions, exc.message)
        raise
    except IntegrityError:
        # The same key raced in from a second request: both callers get the first run.
        found = existing_run(key)
        if found is None:
            raise
        return found
    return run


def _refuse(
    session: ChatSession, actor: Actor, reason: str, custom_instructions: str | None, why: str
) -> None:
    """Keep a refused request in the compaction history and the action log, with the reason."""
    with transaction.atomic():
        run = create_run(
            session=session,
            kind=CompactionRun.Kind.COMPACTION,
            reason=reason,
            requested_by=actor,
            key=None,
            planned_leaf=session.leaf_entry_id,
            custom_instructions=custom_instructions or None,
        )
        finish(run, Status.REFUSED, error=why)
        record_action(
            actor=actor,
            action=Action.COMPACT_REFUSED,
            session=session,
            operation=str(run.operation_id),
            reason=why,
        )


def compact_session(
    *,
    session: ChatSession,
    reason: str,
    actor: Actor,
    custom_instructions: str | None = None,
    will_retry: bool = False,
    requested_by: Any = None,
    summarizer: Summarizer | None = None,
    run: CompactionRun | None = None,
) -> CompactionOutcome:
    """Compact the session's path now and record the run. Never call inside a transaction.

    ``actor`` does the work (the compaction worker, a run's worker) and logs how it ended;
    ``requested_by`` is the user the run is credited to. Without ``run`` the current leaf is compacted
    and a run is recorded; automatic compactions with nothing to compact return "skipped" with no
    record and no events, as Pi does.
    """
    access.authorize(actor, session, access.WRITE)
    planned_leaf = run.planned_leaf if run is not None else session.leaf_entry_id
    plan = _plan(session, planned_leaf)
    if run is None:
        if plan.preparation is None and reason != Reason.MANUAL:
            return CompactionOutcome(operation_id="", status="skipped", reason=reason, error=plan.error)
        run = create_run(
            session=session,
            kind=CompactionRun.Kind.COMPACTION,
            reason=reason,
            requested_by=requested_by,
            key=None,
            planned_leaf=planned_leaf,
            custom_instructions=custom_instructions,
            will_retry=will_retry,
        )
    if not begin(run):
        return _outcome(run)
    started = time.monotonic()
    outcome = _compact_begun(session, run, plan, planned_leaf, summarizer, actor)
    metrics.compaction_finished(reason=reason, status=outcome.status, seconds=time.monotonic() - started)
    return outcome


def _compact_begun(
    session: ChatSession,
    run: CompactionRun,
    plan: _Plan,
    planned_leaf: str | None,
    summarizer: Summarizer | None,
    actor: Actor,
) -> CompactionOutcome:
    """The compaction proper, once its run has begun: summarize, then record it or its failure."""
    if plan.preparation is None:
        return _outcome(fail_run(run, plan.error or "compaction failed", actor=actor), error=plan.error)
    session.refresh_from_db(fields=["leaf_entry_id", "leaf_seq"])
    if session.leaf_entry_id != planned_leaf:
        return _outcome(fail_run(run, SESSION_CHANGED, actor=actor), error=SESSION_CHANGED)

    try:
        # Inside: a provider whose key cannot be decrypted fails the run with its reason, as the model would.
        recorder = Recorder(
            summarizer or summarizer_for(session, thinking_level=plan.thinking_level, model=plan.model)
        )
        result = compact(plan.preparation, recorder, run.custom_instructions)
    except Exception as exc:  # any failure of the summary, Pi's messages included, fails the run
        message = str(exc) or "compaction failed"
        return _outcome(fail_run(run, message, actor=actor), error=message)
    try:
        _record(session, run, plan, result, recorder, actor)
    except AppendConflict:
        return _outcome(fail_run(run, SESSION_CHANGED, actor=actor), error=SESSION_CHANGED)
    return _outcome(run, details=result.details, tokens_before=result.tokens_before)


def _entry(plan: _Plan, result: CompactionResult) -> dict[str, Any]:
    """Return the compaction entry as Pi writes it, stamped now."""
    now = datetime.now(UTC)
    stamp = now.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    entry: dict[str, Any] = {
        "type": "compaction",
        "timestamp": stamp,
        "summary": result.summary,
        "firstKeptEntryId": result.first_kept_entry_id,
        "tokensBefore": result.tokens_before,
        "details": result.details,
    }
    if result.usage is not None:
        entry["usage"] = result.usage
    entry["fromHook"] = False
    if plan.system_message is not None:
        # The prompt in force at compaction time, stamped with the compaction's own time.
        entry["systemMessage"] = {**plan.system_message, "timestamp": int(now.timestamp() * 1000)}
    return entry


def _record(
    session: ChatSession,
    run: CompactionRun,
    plan: _Plan,
    result: CompactionResult,
    recorder: Recorder,
    actor: Actor,
) -> None:
    """Append the entry and finish the run (its history row, with the range replaced) in one transaction."""
    first_seq, last_seq = _replaced_range(plan)
    with transaction.atomic():
        locked = CompactionRun.objects.select_for_update().get(pk=run.pk)
        if locked.is_finished:  # another delivery of this task finished first, or a cancel
            copy_run(locked, run)
            return
        rows = append_entries(
            session=session,
            entries=[_entry(plan, result)],
            actor=actor,
            expected_leaf=run.planned_leaf,
            log=None,  # logged below as the compaction's end
        )
        new_id = rows[-1].entry_id
        after = context_for_leaf(session, new_id)
        finish(
            locked,
            Status.SUCCEEDED,
            result_entry_id=new_id,
            result_leaf_id=new_id,
            summary=result.summary,
            first_kept_entry_id=result.first_kept_entry_id,
            tokens_before=round(result.tokens_before),
            tokens_after=sum(estimate_tokens(m) for m in after.projection.messages),
            summarizer=recorder.name,
            model=", ".join(recorder.models),
            usage=result.usage,
            cost=cost(result.usage),
            replaced_first_seq=first_seq,
            replaced_last_seq=last_seq,
            error="",
        )
        log_end(actor, locked)
        transaction.on_commit(partial(announce_end, locked))
        copy_run(locked, run)


def _outcome(run: CompactionRun, **extra: Any) -> CompactionOutcome:
    error = extra.pop("error", None)
    if error is None and run.status == Status.FAILED:
        prefix = event_prefix(run.reason)
        error = run.error[len(prefix) :] if run.error.startswith(prefix) else run.error
    fields: dict[str, Any] = {
        "operation_id": str(run.operation_id),
        "status": run.status,
        "reason": run.reason,
        "entry_id": run.result_entry_id,
        "summary": run.summary or None,
        "first_kept_entry_id": run.first_kept_entry_id,
        "tokens_before": run.tokens_before,
        "estimated_tokens_after": run.tokens_after,
        "usage": run.usage,
        "error": error,
        "error_message": run.error or None,
    }
    fields.update(extra)
    return CompactionOutcome(**fields)
