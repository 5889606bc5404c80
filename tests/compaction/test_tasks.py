"""The Celery tasks: repeated deliveries, cancels and branch summaries change a session at most once."""

from __future__ import annotations

from typing import Any

import pytest

from compaction_app import tasks
from compaction_app.domain.branch_summary import BRANCH_SUMMARY_PREAMBLE
from compaction_app.domain.summary import SummaryRequest, SummaryResponse
from compaction_app.models import CompactionRun
from compaction_app.services import (
    OperationInProgress,
    cancel_operation,
    request_compaction,
    start_branch_summary,
    summarize_and_navigate,
)
from compaction_app.summarizers import OfflineSummarizer
from core.actors import SystemActor
from pitree.operations import TreeOperationError
from providers.llm.testserver import ProviderServer, error, reply
from providers.models import LLMProvider
from sessions_app import services as session_services
from tests.factories import payloads, store

pytestmark = pytest.mark.django_db


def _tree() -> list[dict[str, Any]]:
    """u1 → a1 → u2 → a2 and a second branch u3 → a3 under a1 (leaf a3), with a file read on it."""

    def msg(entry_id: str, parent: str | None, role: str, text: str) -> dict[str, Any]:
        body: dict[str, Any] = {"role": role, "content": text, "timestamp": 1}
        if role == "assistant":
            body = {
                "role": "assistant",
                "content": [{"type": "text", "text": text}],
                "provider": "p",
                "model": "m",
                "usage": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2},
                "stopReason": "stop",
                "timestamp": 2,
            }
        return {
            "type": "message",
            "id": entry_id,
            "parentId": parent,
            "timestamp": "2026-02-01T10:00:00.000Z",
            "message": body,
        }

    return [
        msg("u1", None, "user", "hello"),
        msg("a1", "u1", "assistant", "hi"),
        msg("u2", "a1", "user", "first question"),
        msg("a2", "u2", "assistant", "first answer"),
        msg("u3", "a1", "user", "Try a rewrite of src/lexer.py instead"),
        msg("a3", "u3", "assistant", "I rewrote the lexer; tests pass."),
    ]


@pytest.fixture
def branched(owner: Any) -> Any:
    return store(owner, _tree(), pi_id="sess-tree")


def _queued_compaction(session: Any, django_capture_on_commit_callbacks: Any, **kwargs: Any) -> CompactionRun:
    # The callbacks are captured, not run: these tests deliver the task themselves.
    with django_capture_on_commit_callbacks(execute=False):
        return request_compaction(session=session, actor=session.owner, **kwargs)


def test_a_task_delivered_twice_writes_one_compaction(
    compactable: Any, django_capture_on_commit_callbacks: Any
) -> None:
    run = _queued_compaction(
        compactable, django_capture_on_commit_callbacks, custom_instructions="focus on tests"
    )

    assert tasks.run_compaction(run.pk) == "succeeded"
    assert tasks.run_compaction(run.pk) == "succeeded"

    [entry] = payloads(compactable, "compaction")
    run.refresh_from_db()
    assert run.result_entry_id == entry["id"]
    assert "Focus: focus on tests" in entry["summary"]
    assert run.attempts == 1


def test_a_redelivered_task_whose_first_attempt_died_finishes_the_run(
    compactable: Any, django_capture_on_commit_callbacks: Any
) -> None:
    run = _queued_compaction(compactable, django_capture_on_commit_callbacks)
    # What a worker killed during the summary leaves behind: a running run and no entry.
    CompactionRun.objects.filter(pk=run.pk).update(status="running", attempts=1)

    assert tasks.run_compaction(run.pk) == "succeeded"

    assert len(payloads(compactable, "compaction")) == 1
    run.refresh_from_db()
    assert (run.status, run.attempts) == ("succeeded", 2)


def test_a_cancelled_run_writes_nothing(compactable: Any, django_capture_on_commit_callbacks: Any) -> None:
    run = _queued_compaction(compactable, django_capture_on_commit_callbacks)
    cancel_operation(run=run, actor=SystemActor("tests"))

    assert tasks.run_compaction(run.pk) == "cancelled"
    assert payloads(compactable, "compaction") == []


class _CancelledDuringCall:
    """A summarizer whose caller cancels the operation while the model is still writing."""

    def __init__(self, run: CompactionRun) -> None:
        self.run = run

    def summarize(self, request: SummaryRequest) -> SummaryResponse:
        cancel_operation(run=self.run, actor=SystemActor("tests"))
        return OfflineSummarizer().summarize(request)


def test_a_cancel_during_the_summary_call_writes_nothing(
    branched: Any, django_capture_on_commit_callbacks: Any
) -> None:
    with django_capture_on_commit_callbacks(execute=False):
        operation = start_branch_summary(session=branched, target_id="a2", actor=branched.owner)
    run = CompactionRun.objects.get(operation_id=operation)

    outcome = summarize_and_navigate(run, actor=SystemActor("tests"), summarizer=_CancelledDuringCall(run))

    assert outcome.status == "cancelled"
    branched.refresh_from_db()
    assert branched.leaf_entry_id == "a3"
    assert payloads(branched, "branch_summary") == []


def test_a_second_operation_waits_for_the_first(
    compactable: Any, django_capture_on_commit_callbacks: Any
) -> None:
    _queued_compaction(compactable, django_capture_on_commit_callbacks)

    with pytest.raises(OperationInProgress):
        _queued_compaction(compactable, django_capture_on_commit_callbacks)
    with pytest.raises(TreeOperationError, match="Wait for the current compaction or tree navigation"):
        start_branch_summary(session=compactable, actor=compactable.owner, target_id="a2")


def test_the_same_idempotency_key_returns_the_first_run(
    compactable: Any, django_capture_on_commit_callbacks: Any
) -> None:
    first = _queued_compaction(compactable, django_capture_on_commit_callbacks, idempotency_key="k-1")
    again = _queued_compaction(compactable, django_capture_on_commit_callbacks, idempotency_key="k-1")

    assert again.pk == first.pk
    assert CompactionRun.objects.count() == 1


def _navigate(session: Any, target: str, capture: Any, **kwargs: Any) -> CompactionRun:
    with capture(execute=False):
        operation = start_branch_summary(session=session, target_id=target, actor=session.owner, **kwargs)
    tasks.run_branch_summary(CompactionRun.objects.get(operation_id=operation).pk)
    return CompactionRun.objects.get(operation_id=operation)


def test_navigating_with_a_summary_appends_it_at_the_new_leaf(
    branched: Any, django_capture_on_commit_callbacks: Any
) -> None:
    run = _navigate(branched, "a2", django_capture_on_commit_callbacks, label="back to the plan")

    assert run.status == "succeeded"
    summary, label = payloads(branched)[-2:]
    assert (summary["type"], summary["parentId"], summary["fromId"]) == ("branch_summary", "a2", "a3")
    assert summary["summary"].startswith(BRANCH_SUMMARY_PREAMBLE)
    assert summary["fromHook"] is False
    assert summary["details"] == {"readFiles": [], "modifiedFiles": [], "offline": True}  # no model wrote it
    assert (label["type"], label["parentId"], label["targetId"], label["label"]) == (
        "label",
        summary["id"],
        summary["id"],
        "back to the plan",
    )
    branched.refresh_from_db()
    assert branched.leaf_entry_id == label["id"] == run.result_leaf_id
    assert run.result_entry_id == summary["id"]
    # The history row shows the branch the summary stands for: u3 → a3, appended fifth and sixth.
    assert (run.replaced_first_seq, run.replaced_last_seq) == (4, 5)


def test_navigating_to_a_user_message_leaves_its_text_for_the_editor(
    branched: Any, django_capture_on_commit_callbacks: Any
) -> None:
    run = _navigate(branched, "u2", django_capture_on_commit_callbacks)

    [summary] = payloads(branched, "branch_summary")
    assert summary["parentId"] == "a1"
    assert run.editor_text == "first question"


def test_a_failed_branch_summary_leaves_the_session_untouched(
    branched: Any, provider_server: ProviderServer, django_capture_on_commit_callbacks: Any
) -> None:
    LLMProvider.objects.create(
        name="local",
        base_url=provider_server.url + "/v1",
        model_id="summary-model",
        provider="test",
        api_key="sk-local",
        is_summarizer_default=True,
    )
    provider_server.enqueue(error(400, "model not found"))
    before = payloads(branched)

    run = _navigate(branched, "a2", django_capture_on_commit_callbacks)

    assert run.status == "failed"
    assert run.error.startswith("Branch summarization failed: ")
    assert "model not found" in run.error
    assert payloads(branched) == before
    branched.refresh_from_db()
    assert branched.leaf_entry_id == "a3"


def test_a_branch_summary_from_the_model(
    branched: Any, provider_server: ProviderServer, django_capture_on_commit_callbacks: Any
) -> None:
    LLMProvider.objects.create(
        name="local",
        base_url=provider_server.url + "/v1",
        model_id="summary-model",
        provider="test",
        context_window=32000,
        api_key="sk-local",
        is_summarizer_default=True,
    )
    provider_server.enqueue(reply("## Goal\n- Rewrite the lexer.", usage={"input": 321, "output": 9}))

    run = _navigate(branched, "a2", django_capture_on_commit_callbacks)

    assert (run.status, run.error) == ("succeeded", "")
    [summary] = payloads(branched, "branch_summary")
    assert summary["summary"] == BRANCH_SUMMARY_PREAMBLE + "## Goal\n- Rewrite the lexer."
    assert summary["usage"]["input"] == 321
    assert (run.model, run.usage["input"]) == ("summary-model", 321)


def test_navigation_is_refused_if_the_leaf_moved_before_the_task_ran(
    branched: Any, django_capture_on_commit_callbacks: Any
) -> None:
    with django_capture_on_commit_callbacks(execute=False):
        operation = start_branch_summary(session=branched, actor=branched.owner, target_id="a2")
    session_services.append_entries(
        session=branched,
        actor=branched.owner,
        entries=[{"type": "message", "message": {"role": "user", "content": "x", "timestamp": 3}}],
    )
    before = payloads(branched)

    tasks.run_branch_summary(CompactionRun.objects.get(operation_id=operation).pk)

    run = CompactionRun.objects.get(operation_id=operation)
    assert (run.status, run.error) == ("failed", "Session changed while summarizing the branch")
    assert payloads(branched) == before


def test_navigating_to_the_leaf_itself_changes_nothing(
    branched: Any, django_capture_on_commit_callbacks: Any
) -> None:
    before = payloads(branched)

    run = _navigate(branched, "a3", django_capture_on_commit_callbacks)

    assert run.status == "succeeded"
    assert payloads(branched) == before


def test_navigation_events_name_the_operation_and_the_new_leaf(
    branched: Any, events: Any, django_capture_on_commit_callbacks: Any
) -> None:
    drain = events(branched)
    with django_capture_on_commit_callbacks(execute=True):
        operation = start_branch_summary(session=branched, actor=branched.owner, target_id="a2")
        run = CompactionRun.objects.get(operation_id=operation)
        summarize_and_navigate(run, actor=SystemActor("tests"), summarizer=OfflineSummarizer())

    got = {e["event"]: e for e in drain()}
    assert got["branch_summary_start"]["operationId"] == operation
    end = got["branch_summary_end"]
    [summary] = payloads(branched, "branch_summary")
    assert (end["status"], end["oldLeafId"], end["newLeafId"]) == ("succeeded", "a3", summary["id"])
