"""Compaction and branch summaries as server operations, each recorded as a ``CompactionRun``.

A run reads and plans, calls the summarizer with no transaction open, then writes in one short
transaction that locks the run, then the session, and re-checks the leaf it planned for. The run's
status changes in that same transaction, so a task delivered twice, or delivered again after its
worker died, writes at most one entry. Events go out only after commit.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.module_loading import import_string

from sessions_app import realtime
from sessions_app.domain.entries import Entry as DomainEntry
from sessions_app.domain.messages import convert_to_llm
from sessions_app.domain.operations import TreeOperationError, apply_navigation, plan_navigation
from sessions_app.domain.tokens import current_system_message, estimate_tokens
from sessions_app.domain.tree import SessionTree
from sessions_app.models import ChatSession
from sessions_app.queries import context_for_leaf, find_entry, path_rows
from sessions_app.services import AppendConflict, append_entries, set_leaf

from .domain.branch_summary import (
    NO_CONTENT_SUMMARY,
    branch_file_lists,
    branch_summary_budget,
    branch_summary_text,
    collect_entries_for_branch_summary,
    prepare_branch_entries,
)
from .domain.preparation import CompactionPreparation, manual_compaction_error, prepare_compaction
from .domain.prompts import SummaryKind
from .domain.serialization import serialize_conversation
from .domain.settings import resolve_settings
from .domain.summary import (
    BRANCH_LABEL,
    SummarizationAborted,
    Summarizer,
    SummaryRequest,
    SummaryResponse,
    compact,
    validated_summary,
)
from .models import CompactionRun, LLMProvider
from .summarizers import LLMSummarizer, OfflineSummarizer

__all__ = [
    "SESSION_CHANGED",
    "BranchSummaryOutcome",
    "CompactionOutcome",
    "CompactionRefused",
    "OperationFinished",
    "OperationInProgress",
    "cancel_operation",
    "compact_session",
    "request_compaction",
    "start_branch_summary",
    "summarize_and_navigate",
    "summarizer_for",
]

log = logging.getLogger(__name__)

SESSION_CHANGED = "Session changed while compacting"
SESSION_CHANGED_NAVIGATING = "Session changed while summarizing the branch"
BUSY_NAVIGATING = (
    "Wait for the current compaction or tree navigation to finish before navigating the session tree."
)
BUSY_COMPACTING = "Wait for the current compaction or tree navigation to finish before compacting."
Status = CompactionRun.Status
Reason = CompactionRun.Reason


class CompactionRefused(Exception):
    """Pi refuses the compaction before any work starts ("Already compacted", "Nothing to compact …")."""


class OperationInProgress(TreeOperationError):
    """Another compaction or branch summary of the session is queued or running."""


class OperationFinished(Exception):
    """The operation already ended and can no longer be cancelled."""


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


@dataclass(frozen=True, slots=True, kw_only=True)
class BranchSummaryOutcome:
    """How a navigation with summary ended, and where it left the leaf."""

    operation_id: str
    status: str  # succeeded | failed | cancelled
    old_leaf_id: str | None
    leaf_id: str | None = None
    summary_entry_id: str | None = None
    editor_text: str | None = None
    error: str | None = None


# -- summarizers ----------------------------------------------------------------------------------------


def summarizer_for(session: ChatSession) -> Summarizer:
    """Return the summarizer for a session: the setting's factory, the default provider, or the offline one.

    ``PIWEB_SUMMARIZER`` names a callable taking the session; it is where a deployment substitutes its
    own summaries (Pi's ``session_before_compact`` extension point).
    """
    factory = getattr(settings, "PIWEB_SUMMARIZER", None)
    if factory:
        return import_string(factory)(session)
    provider = LLMProvider.objects.filter(is_summarizer_default=True).first()
    if provider is not None:
        return LLMSummarizer(config=provider.config())
    return OfflineSummarizer()


@dataclass(slots=True)
class _Recorder:
    """Pass requests through, remembering which model answered."""

    inner: Summarizer
    models: list[str] = field(default_factory=list)

    def summarize(self, request: SummaryRequest) -> SummaryResponse:
        response = self.inner.summarize(request)
        model = response.get("model")
        if isinstance(model, str) and model not in self.models:
            self.models.append(model)
        return response

    @property
    def name(self) -> str:
        return type(self.inner).__name__


def _context_window(summarizer: Summarizer) -> int | None:
    config = getattr(summarizer, "config", None)
    return getattr(config, "context_window", None)


def _cost(usage: Mapping[str, Any] | None) -> float | None:
    cost = usage.get("cost") if isinstance(usage, Mapping) else None
    total = cost.get("total") if isinstance(cost, Mapping) else None
    return float(total) if isinstance(total, int | float) and not isinstance(total, bool) else None


# -- run bookkeeping ------------------------------------------------------------------------------------


def _event_prefix(reason: str) -> str:
    if reason == Reason.OVERFLOW:
        return "Context overflow recovery failed: "
    if reason == Reason.THRESHOLD:
        return "Auto-compaction failed: "
    return "Compaction failed: "


def _events(run: CompactionRun) -> tuple[str, str]:
    if run.kind == CompactionRun.Kind.COMPACTION:
        return "compaction_start", "compaction_end"
    return "branch_summary_start", "branch_summary_end"


def _begin(run: CompactionRun) -> bool:
    """Mark the run running; return False if it already finished. Announces the start only once."""
    with transaction.atomic():
        locked = CompactionRun.objects.select_for_update().get(pk=run.pk)
        if locked.is_finished:
            _copy(locked, run)
            return False
        first = locked.status == Status.QUEUED
        locked.status = Status.RUNNING
        locked.attempts += 1
        locked.started_at = locked.started_at or timezone.now()
        locked.save(update_fields=["status", "attempts", "started_at"])
        if first:
            start, _ = _events(locked)
            transaction.on_commit(
                partial(
                    realtime.broadcast,
                    locked.session_id,
                    start,
                    operationId=str(locked.operation_id),
                    reason=locked.reason,
                )
            )
        _copy(locked, run)
    return True


def _copy(source: CompactionRun, target: CompactionRun) -> None:
    """Bring the caller's instance up to date with the locked row."""
    if source is not target:
        for column in CompactionRun._meta.concrete_fields:
            setattr(target, column.attname, getattr(source, column.attname))


def _finish(run: CompactionRun, status: str, **fields: Any) -> None:
    """Set the run's final state on the locked row; the caller holds the transaction."""
    run.status = status
    run.finished_at = timezone.now()
    if run.started_at is not None:
        run.duration_ms = int((run.finished_at - run.started_at).total_seconds() * 1000)
    for key, value in fields.items():
        setattr(run, key, value)
    run.save()


def _fail(run: CompactionRun, error: str, *, aborted: bool = False) -> CompactionRun:
    """Record a failure (or a cancellation) unless the run already ended, and announce it after commit."""
    with transaction.atomic():
        locked = CompactionRun.objects.select_for_update().get(pk=run.pk)
        if not locked.is_finished:
            message = (
                None
                if aborted
                else (_event_prefix(locked.reason) + error if locked.kind == "compaction" else error)
            )
            _finish(locked, Status.CANCELLED if aborted else Status.FAILED, error=message or "")
            transaction.on_commit(partial(_announce_end, locked))
        _copy(locked, run)
    return run


def _announce_end(run: CompactionRun) -> None:
    _, end = _events(run)
    fields: dict[str, Any] = {"operationId": str(run.operation_id), "reason": run.reason}
    if run.kind == CompactionRun.Kind.COMPACTION:
        fields["aborted"] = run.status == Status.CANCELLED
        fields["willRetry"] = run.will_retry if run.status == Status.SUCCEEDED else False
        if run.status == Status.SUCCEEDED:
            fields["result"] = {
                "summary": run.summary,
                "firstKeptEntryId": run.first_kept_entry_id,
                "tokensBefore": run.tokens_before,
                "estimatedTokensAfter": run.tokens_after,
                "usage": run.usage,
                "entryId": run.result_entry_id,
            }
        elif run.status == Status.FAILED:
            fields["errorMessage"] = run.error
    else:
        fields.update(
            status=run.status,
            oldLeafId=run.planned_leaf,
            newLeafId=run.result_leaf_id,
            summaryEntryId=run.result_entry_id,
        )
        if run.status == Status.FAILED:
            fields["errorMessage"] = run.error
    realtime.broadcast(run.session_id, end, **fields)


def _enqueue(task_name: str, run_pk: int) -> None:
    """Send the run's task to the broker; a broker failure fails the run instead of leaving it queued."""
    from . import tasks

    task = getattr(tasks, task_name)
    queue = getattr(settings, "PIWEB_COMPACTION_QUEUE", None)
    try:
        task.apply_async(args=(run_pk,), **({"queue": queue} if queue else {}))
    except Exception:
        log.exception("could not queue %s for run %s", task_name, run_pk)
        _fail(CompactionRun.objects.get(pk=run_pk), "The operation could not be queued")


def _create_run(
    *, session: ChatSession, kind: str, reason: str, requested_by: Any, key: str | None, **fields: Any
) -> CompactionRun:
    user = requested_by if getattr(requested_by, "is_authenticated", False) else None
    return CompactionRun.objects.create(
        idempotency_key=key or f"{kind}:{uuid.uuid4()}",
        kind=kind,
        session=session,
        requested_by=user,
        reason=reason,
        **fields,
    )


def _scoped_key(kind: str, session: ChatSession, requested_by: Any, key: str | None) -> str | None:
    if not key:
        return None
    return f"{kind}:{session.pk}:{getattr(requested_by, 'pk', '-')}:{key}"[:255]


def _existing(key: str | None) -> CompactionRun | None:
    return CompactionRun.objects.filter(idempotency_key=key).first() if key else None


def _lock_idle_session(session: ChatSession, busy: str) -> ChatSession:
    """Lock the session row and refuse if another operation on it is active. Caller holds a transaction."""
    locked = ChatSession.objects.select_for_update().get(pk=session.pk)
    if CompactionRun.objects.filter(session=locked).active().exists():
        raise OperationInProgress(busy)
    return locked


# -- compaction -----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Plan:
    preparation: CompactionPreparation | None
    error: str | None
    system_message: dict[str, Any] | None
    path: list[DomainEntry]


def _plan(session: ChatSession, leaf_id: str | None) -> _Plan:
    """Plan a compaction of the path to ``leaf_id`` from the rows its projection reads."""
    view = context_for_leaf(session, leaf_id, use_session_leaf=False)
    model = view.projection.model or {}
    compaction_settings = resolve_settings(
        getattr(settings, "PIWEB_COMPACTION", None),
        provider=model.get("provider"),
        model_id=model.get("modelId"),
    )
    preparation = prepare_compaction(view.path, compaction_settings)
    return _Plan(
        preparation,
        manual_compaction_error(view.path, preparation),
        current_system_message(view.projection.messages),
        view.path,
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
    reason: str = Reason.MANUAL,
    custom_instructions: str | None = None,
    requested_by: Any = None,
    idempotency_key: str | None = None,
) -> CompactionRun:
    """Queue a compaction of the session's leaf and return its run; the task is sent after commit.

    A repeated ``idempotency_key`` returns the first run. Pi's refusals are checked here, before queueing.
    """
    key = _scoped_key("compaction", session, requested_by, idempotency_key)
    existing = _existing(key)
    if existing is not None:
        return existing
    check_compaction(session)
    try:
        with transaction.atomic():
            locked = _lock_idle_session(session, BUSY_COMPACTING)
            run = _create_run(
                session=locked,
                kind=CompactionRun.Kind.COMPACTION,
                reason=reason,
                requested_by=requested_by,
                key=key,
                planned_leaf=locked.leaf_entry_id,
                custom_instructions=custom_instructions or None,
            )
            transaction.on_commit(partial(_enqueue, "run_compaction", run.pk))
    except IntegrityError:
        # The same key raced in from a second request: both callers get the first run.
        found = _existing(key)
        if found is None:
            raise
        return found
    return run


def compact_session(
    *,
    session: ChatSession,
    reason: str,
    custom_instructions: str | None = None,
    will_retry: bool = False,
    requested_by: Any = None,
    summarizer: Summarizer | None = None,
    run: CompactionRun | None = None,
) -> CompactionOutcome:
    """Compact the session's path now and record the run. Never call inside a transaction.

    Without ``run`` the current leaf is compacted and a run is recorded; automatic compactions with
    nothing to compact return "skipped" with no record and no events, as Pi does.
    """
    planned_leaf = run.planned_leaf if run is not None else session.leaf_entry_id
    plan = _plan(session, planned_leaf)
    if run is None:
        if plan.preparation is None and reason != Reason.MANUAL:
            return CompactionOutcome(operation_id="", status="skipped", reason=reason, error=plan.error)
        run = _create_run(
            session=session,
            kind=CompactionRun.Kind.COMPACTION,
            reason=reason,
            requested_by=requested_by,
            key=None,
            planned_leaf=planned_leaf,
            custom_instructions=custom_instructions,
            will_retry=will_retry,
        )
    if not _begin(run):
        return _compaction_outcome(run)
    if plan.preparation is None:
        return _compaction_outcome(_fail(run, plan.error or "compaction failed"), error=plan.error)
    session.refresh_from_db(fields=["leaf_entry_id", "leaf_seq"])
    if session.leaf_entry_id != planned_leaf:
        return _compaction_outcome(_fail(run, SESSION_CHANGED), error=SESSION_CHANGED)

    recorder = _Recorder(summarizer or summarizer_for(session))
    try:
        result = compact(plan.preparation, recorder, run.custom_instructions)
    except Exception as exc:  # any failure of the summary, Pi's messages included, fails the run
        message = str(exc) or "compaction failed"
        return _compaction_outcome(_fail(run, message), error=message)

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
    first_seq, last_seq = _replaced_range(plan)

    try:
        with transaction.atomic():
            locked = CompactionRun.objects.select_for_update().get(pk=run.pk)
            if locked.is_finished:  # another delivery of this task finished first, or a cancel
                _copy(locked, run)
                return _compaction_outcome(run)
            rows = append_entries(session=session, entries=[entry], expected_leaf=planned_leaf)
            new_id = rows[-1].entry_id
            after = context_for_leaf(session, new_id)
            tokens_after = sum(estimate_tokens(m) for m in after.projection.messages)
            _finish(
                locked,
                Status.SUCCEEDED,
                result_entry_id=new_id,
                result_leaf_id=new_id,
                summary=result.summary,
                first_kept_entry_id=result.first_kept_entry_id,
                tokens_before=round(result.tokens_before),
                tokens_after=tokens_after,
                summarizer=recorder.name,
                model=", ".join(recorder.models),
                usage=result.usage,
                cost=_cost(result.usage),
                replaced_first_seq=first_seq,
                replaced_last_seq=last_seq,
                error="",
            )
            transaction.on_commit(partial(_announce_end, locked))
            _copy(locked, run)
    except AppendConflict:
        return _compaction_outcome(_fail(run, SESSION_CHANGED), error=SESSION_CHANGED)
    return _compaction_outcome(run, details=result.details, tokens_before=result.tokens_before)


def _compaction_outcome(run: CompactionRun, **extra: Any) -> CompactionOutcome:
    error = extra.pop("error", None)
    if error is None and run.status == Status.FAILED:
        prefix = _event_prefix(run.reason)
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


# -- branch summaries -----------------------------------------------------------------------------------


def start_branch_summary(
    *,
    session: ChatSession,
    target_id: str,
    actor: Any = None,
    user: Any = None,
    custom_instructions: str | None = None,
    replace_instructions: bool = False,
    label: str | None = None,
    idempotency_key: str | None = None,
) -> str:
    """Queue a navigation to ``target_id`` that summarizes the branch being left; return the operation id.

    The session changes only when the task succeeds. Unknown targets are refused here.
    """
    requested_by = actor if actor is not None else user
    key = _scoped_key("branch_summary", session, requested_by, idempotency_key)
    existing = _existing(key)
    if existing is not None:
        return str(existing.operation_id)
    with transaction.atomic():
        locked = _lock_idle_session(session, BUSY_NAVIGATING)
        if target_id != locked.leaf_entry_id:
            find_entry(locked, target_id)
        run = _create_run(
            session=locked,
            kind=CompactionRun.Kind.BRANCH_SUMMARY,
            reason=Reason.NAVIGATE,
            requested_by=requested_by,
            key=key,
            planned_leaf=locked.leaf_entry_id,
            target_id=target_id,
            custom_instructions=custom_instructions or None,
            replace_instructions=replace_instructions,
            label=label or None,
        )
        transaction.on_commit(partial(_enqueue, "run_branch_summary", run.pk))
    return str(run.operation_id)


def _navigation_tree(session: ChatSession, *leaf_ids: str | None) -> SessionTree:
    """Return a tree of just the paths to ``leaf_ids``: all that navigation and its summary read."""
    rows: dict[int, Any] = {}
    for leaf_id in leaf_ids:
        if leaf_id is None:
            continue
        for row in path_rows(session, find_entry(session, leaf_id)):
            rows[row.seq] = row
    return SessionTree([rows[seq].to_domain() for seq in sorted(rows)])


@dataclass(frozen=True, slots=True)
class _BranchSummary:
    text: str
    details: dict[str, Any]
    usage: Mapping[str, Any] | None


def _summarize_branch(
    entries: list[DomainEntry], summarizer: Summarizer, run: CompactionRun
) -> _BranchSummary:
    """Summarize the collected entries as Pi's branch summary does; raise SummarizationError if unusable."""
    preparation = prepare_branch_entries(entries, branch_summary_budget(_context_window(summarizer)))
    if not preparation.messages:
        return _BranchSummary(NO_CONTENT_SUMMARY, {"readFiles": [], "modifiedFiles": []}, None)
    request = SummaryRequest(
        kind=SummaryKind.BRANCH,
        conversation=serialize_conversation(convert_to_llm(preparation.messages)),
        custom_instructions=run.custom_instructions,
        replace_instructions=run.replace_instructions,
    )
    response = summarizer.summarize(request)
    text = validated_summary(response, BRANCH_LABEL, check_aborted=True)
    read_files, modified_files = branch_file_lists(preparation)
    usage = response.get("usage")
    return _BranchSummary(
        branch_summary_text(text, read_files, modified_files),
        {"readFiles": read_files, "modifiedFiles": modified_files},
        usage if isinstance(usage, Mapping) else None,
    )


def summarize_and_navigate(
    run: CompactionRun, *, summarizer: Summarizer | None = None
) -> BranchSummaryOutcome:
    """Summarize the branch being left, then move the leaf, as Pi's ``navigateTree`` with ``summarize``.

    On any failure or a cancel, the leaf and the entries stay as they were. Never call inside a transaction.
    """
    if not _begin(run):
        return _branch_outcome(run)
    session = ChatSession.objects.get(pk=run.session_id)
    old_leaf, target_id = run.planned_leaf, run.target_id or ""
    if session.leaf_entry_id != old_leaf:
        return _branch_outcome(_fail(run, SESSION_CHANGED_NAVIGATING))
    recorder = _Recorder(summarizer or summarizer_for(session))
    summary: _BranchSummary | None = None
    try:
        tree = _navigation_tree(session, old_leaf, target_id)
        plan = plan_navigation(tree, old_leaf, target_id)
        entries, _ = (
            collect_entries_for_branch_summary(tree, old_leaf, target_id) if plan.changed else ([], None)
        )
        if entries:
            summary = _summarize_branch(entries, recorder, run)
    except SummarizationAborted:
        return _branch_outcome(_fail(run, "", aborted=True))
    except Exception as exc:  # the message is what the user sees; nothing has been written
        return _branch_outcome(_fail(run, str(exc) or "Branch summarization failed"))

    try:
        with transaction.atomic():
            locked = CompactionRun.objects.select_for_update().get(pk=run.pk)
            if locked.is_finished:
                _copy(locked, run)
                return _branch_outcome(run)
            result = apply_navigation(
                tree,
                plan,
                summary=summary.text if summary else None,
                details=summary.details if summary else None,
                from_hook=False,
                usage=summary.usage if summary else None,
                label=run.label,
            )
            if result.entries:
                append_entries(session=session, entries=result.entries, expected_leaf=old_leaf)
            elif plan.changed:
                locked_session = ChatSession.objects.select_for_update().get(pk=session.pk)
                if locked_session.leaf_entry_id != old_leaf:
                    raise AppendConflict(old_leaf, locked_session.leaf_entry_id)
                set_leaf(session=locked_session, entry_id=plan.new_leaf_id)
            usage = dict(summary.usage) if summary and summary.usage else None
            _finish(
                locked,
                Status.SUCCEEDED,
                result_entry_id=result.summary_entry["id"] if result.summary_entry else None,
                result_leaf_id=result.leaf_id,
                editor_text=plan.editor_text,
                summary=summary.text if summary else "",
                summarizer=recorder.name if summary else "",
                model=", ".join(recorder.models),
                usage=usage,
                cost=_cost(usage),
                error="",
            )
            transaction.on_commit(partial(_announce_end, locked))
            _copy(locked, run)
    except AppendConflict:
        return _branch_outcome(_fail(run, SESSION_CHANGED_NAVIGATING))
    return _branch_outcome(run)


def _branch_outcome(run: CompactionRun) -> BranchSummaryOutcome:
    return BranchSummaryOutcome(
        operation_id=str(run.operation_id),
        status=run.status,
        old_leaf_id=run.planned_leaf,
        leaf_id=run.result_leaf_id,
        summary_entry_id=run.result_entry_id,
        editor_text=run.editor_text,
        error=run.error or None,
    )


# -- cancel ---------------------------------------------------------------------------------------------


def cancel_operation(*, run: CompactionRun) -> CompactionRun:
    """Cancel a queued or running operation; its task sees the status before writing and writes nothing."""
    with transaction.atomic():
        locked = CompactionRun.objects.select_for_update().get(pk=run.pk)
        if locked.is_finished:
            raise OperationFinished(f"Operation already {locked.status}")
        _finish(locked, Status.CANCELLED, error="")
        transaction.on_commit(partial(_announce_end, locked))
    return locked
