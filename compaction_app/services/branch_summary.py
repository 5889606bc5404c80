"""Navigate with a branch summary, as Pi's ``navigateTree`` with ``summarize``: queued, then summarized.

The session changes only when the task succeeds; on any failure or a cancel, the leaf and the entries
stay as they were. The run row records the summary and the append range of the branch it stands for.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

from django.db import transaction

from actionlog.facade import record_action
from compaction_app.domain.branch_summary import (
    NO_CONTENT_SUMMARY,
    branch_file_lists,
    branch_summary_budget,
    branch_summary_text,
    collect_entries_for_branch_summary,
    prepare_branch_entries,
)
from compaction_app.domain.prompts import SummaryKind
from compaction_app.domain.serialization import serialize_conversation
from compaction_app.domain.summary import (
    BRANCH_LABEL,
    SummarizationAborted,
    Summarizer,
    SummaryRequest,
    validated_summary,
    with_offline_mark,
)
from compaction_app.models import CompactionRun
from compaction_app.services.operations import (
    Reason,
    Recorder,
    Status,
    announce_end,
    begin,
    context_window,
    copy_run,
    cost,
    create_run,
    enqueue,
    existing_run,
    fail_run,
    finish,
    lock_idle_session,
    log_end,
    scoped_key,
    summarizer_for,
)
from core.actors import Actor
from pitree.entries import Entry as DomainEntry
from pitree.messages import convert_to_llm
from pitree.operations import NavigationPlan, apply_navigation, plan_navigation
from pitree.projection import session_settings
from pitree.storable import MAX_NAME_CHARS, check_text, check_texts
from pitree.tree import SessionTree
from sessions_app.facade import (
    AppendConflict,
    ChatSession,
    access,
    append_entries,
    find_entry,
    path_rows,
    set_leaf,
)
from sessions_app.facade import verbs as session_verbs

__all__ = [
    "BUSY_NAVIGATING",
    "SESSION_CHANGED_NAVIGATING",
    "BranchSummaryOutcome",
    "start_branch_summary",
    "summarize_and_navigate",
]

SESSION_CHANGED_NAVIGATING = "Session changed while summarizing the branch"
BUSY_NAVIGATING = (
    "Wait for the current compaction or tree navigation to finish before navigating the session tree."
)


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


def start_branch_summary(
    *,
    session: ChatSession,
    target_id: str,
    actor: Actor,
    custom_instructions: str | None = None,
    replace_instructions: bool = False,
    label: str | None = None,
    idempotency_key: str | None = None,
    grant: access.Access | None = None,
) -> str:
    """Queue a navigation to ``target_id`` that summarizes the branch being left; return the operation id.

    The actor must be allowed to change the session. Unknown targets are refused here; the request is
    logged with the run.
    """
    check_texts(
        (target_id, label, idempotency_key), "targetId, label or idempotency key", max_chars=MAX_NAME_CHARS
    )
    check_text(custom_instructions, "customInstructions")
    requested_by = actor
    access.authorize(requested_by, session, access.WRITE, grant=grant)
    key = scoped_key("branch_summary", session, requested_by, idempotency_key)
    existing = existing_run(key)
    if existing is not None:
        return str(existing.operation_id)
    with transaction.atomic():
        locked = lock_idle_session(session, BUSY_NAVIGATING)
        if target_id != locked.leaf_entry_id:
            find_entry(locked, target_id)
        run = create_run(
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
        record_action(
            actor=requested_by,
            action=session_verbs.Action.NAVIGATE,
            session=locked,
            target=target_id,
            summarize=True,
        )
        transaction.on_commit(partial(enqueue, "run_branch_summary", run.pk))
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
    first_seq: int | None  # the append range of the entries the summary stands for
    last_seq: int | None


def _summarize_branch(
    entries: list[DomainEntry], summarizer: Summarizer, run: CompactionRun
) -> _BranchSummary:
    """Summarize the collected entries as Pi's branch summary does; raise SummarizationError if unusable."""
    seqs = [e.seq for e in entries]
    first, last = (min(seqs), max(seqs)) if seqs else (None, None)
    preparation = prepare_branch_entries(entries, branch_summary_budget(context_window(summarizer)))
    if not preparation.messages:
        return _BranchSummary(NO_CONTENT_SUMMARY, {"readFiles": [], "modifiedFiles": []}, None, first, last)
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
        with_offline_mark({"readFiles": read_files, "modifiedFiles": modified_files}, [response]),
        usage if isinstance(usage, Mapping) else None,
        first,
        last,
    )


def summarize_and_navigate(
    run: CompactionRun, *, actor: Actor, summarizer: Summarizer | None = None
) -> BranchSummaryOutcome:
    """Summarize the branch being left, then move the leaf. Never call inside a transaction.

    ``actor`` (the worker) writes and logs how it ended.
    """
    if not begin(run):
        return _outcome(run)
    session = ChatSession.objects.get(pk=run.session_id)
    old_leaf, target_id = run.planned_leaf, run.target_id or ""
    if session.leaf_entry_id != old_leaf:
        return _outcome(fail_run(run, SESSION_CHANGED_NAVIGATING, actor=actor))
    summary: _BranchSummary | None = None
    try:
        tree = _navigation_tree(session, old_leaf, target_id)
        at_leaf = session_settings(tree.path(old_leaf))
        recorder = Recorder(
            summarizer or summarizer_for(session, thinking_level=at_leaf.thinking_level, model=at_leaf.model)
        )
        plan = plan_navigation(tree, old_leaf, target_id)
        entries, _ = (
            collect_entries_for_branch_summary(tree, old_leaf, target_id) if plan.changed else ([], None)
        )
        if entries:
            summary = _summarize_branch(entries, recorder, run)
    except SummarizationAborted:
        return _outcome(fail_run(run, "", aborted=True, actor=actor))
    except Exception as exc:  # the message is what the user sees; nothing has been written
        return _outcome(fail_run(run, str(exc) or "Branch summarization failed", actor=actor))
    try:
        _record(session, run, tree, plan, summary, recorder, actor)
    except AppendConflict:
        return _outcome(fail_run(run, SESSION_CHANGED_NAVIGATING, actor=actor))
    return _outcome(run)


def _record(
    session: ChatSession,
    run: CompactionRun,
    tree: SessionTree,
    plan: NavigationPlan,
    summary: _BranchSummary | None,
    recorder: Recorder,
    actor: Actor,
) -> None:
    """Write the summary entry (or just move the leaf) and finish the run, in one transaction."""
    old_leaf = run.planned_leaf
    with transaction.atomic():
        locked = CompactionRun.objects.select_for_update().get(pk=run.pk)
        if locked.is_finished:
            copy_run(locked, run)
            return
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
            append_entries(
                session=session, entries=result.entries, actor=actor, expected_leaf=old_leaf, log=None
            )
        elif plan.changed:
            locked_session = ChatSession.objects.select_for_update().get(pk=session.pk)
            if locked_session.leaf_entry_id != old_leaf:
                raise AppendConflict(old_leaf, locked_session.leaf_entry_id)
            set_leaf(session=locked_session, entry_id=plan.new_leaf_id, actor=actor)
        usage = dict(summary.usage) if summary and summary.usage else None
        finish(
            locked,
            Status.SUCCEEDED,
            result_entry_id=result.summary_entry["id"] if result.summary_entry else None,
            result_leaf_id=result.leaf_id,
            editor_text=plan.editor_text,
            summary=summary.text if summary else "",
            summarizer=recorder.name if summary else "",
            model=", ".join(recorder.models),
            usage=usage,
            cost=cost(usage),
            replaced_first_seq=summary.first_seq if summary else None,
            replaced_last_seq=summary.last_seq if summary else None,
            error="",
        )
        log_end(actor, locked)
        transaction.on_commit(partial(announce_end, locked))
        copy_run(locked, run)


def _outcome(run: CompactionRun) -> BranchSummaryOutcome:
    return BranchSummaryOutcome(
        operation_id=str(run.operation_id),
        status=run.status,
        old_leaf_id=run.planned_leaf,
        leaf_id=run.result_leaf_id,
        summary_entry_id=run.result_entry_id,
        editor_text=run.editor_text,
        error=run.error or None,
    )
