"""Full runs against the scripted provider server: entries, edits, compactions, events, final context."""

from __future__ import annotations

from typing import Any

import pytest

from agent import services
from agent.models import AgentRun
from agent.policy import OVERFLOW_RECOVERY_FAILED
from compaction_app.models import CompactionRun
from providers.llm import testserver as script
from sessions_app import services as session_services
from sessions_app.queries import context_for_leaf
from tests.factories import entries, seeded_session

pytestmark = pytest.mark.django_db(transaction=True)


def run_prompt(session: Any, user: Any, provider: Any, prompt: str = "Please continue.") -> AgentRun:
    run = services.start_run(session=session, user=user, prompt=prompt, provider=provider)
    run.refresh_from_db()
    return run


def tail(session: Any, after_id: str | None) -> list[dict[str, Any]]:
    """Return the entries appended after ``after_id`` (all of them for None)."""
    all_entries = entries(session)
    if after_id is None:
        return all_entries
    index = next(i for i, e in enumerate(all_entries) if e["id"] == after_id)
    return all_entries[index + 1 :]


def roles(session: Any) -> list[str]:
    session.refresh_from_db()
    return [m["role"] for m in context_for_leaf(session).projection.messages]


def test_normal_reply_streams_deltas_and_appends_whole_messages(user, make_provider, server, listen) -> None:
    owner = user()
    session = session_services.create_session(actor=owner, cwd="/repo")
    viewer = listen(session.pk)
    server.enqueue(script.reply("The answer is forty two.", usage={"input": 120, "output": 9}))

    run = run_prompt(session, owner, make_provider(), "What is the answer?")

    assert run.status == "succeeded" and run.stop_reason == "stop" and run.error == ""
    written = entries(session)
    assert [e["type"] for e in written] == ["model_change", "message", "message"]
    assert written[0]["provider"] == "anthropic" and written[0]["modelId"] == "claude-test"
    user_message, answer = written[1]["message"], written[2]["message"]
    assert user_message["content"] == [{"type": "text", "text": "What is the answer?"}]
    assert answer["content"] == [{"type": "text", "text": "The answer is forty two."}]
    assert (answer["provider"], answer["model"], answer["stopReason"]) == ("anthropic", "claude-test", "stop")
    assert answer["usage"]["input"] == 120 and answer["usage"]["output"] == 9
    # The fields Pi writes on every answer.
    assert answer["rawStopReason"] == "end_turn" and answer["thinkingLevel"] == "off"
    assert isinstance(answer["durationMs"], int) and answer["usage"]["cost"]["totalFromProvider"] is False
    assert [e["parentId"] for e in written] == [None, written[0]["id"], written[1]["id"]]
    session.refresh_from_db()
    assert session.leaf_entry_id == written[2]["id"]

    deltas = viewer.named("run_delta")
    assert "".join(d["delta"] for d in deltas) == "The answer is forty two."
    assert len(deltas) > 1 and all(d["run"] == str(run.public_id) for d in deltas)
    names = viewer.names()
    assert names[:2] == ["run_queued", "run_started"] and names[-1] == "run_ended"
    assert viewer.named("run_ended")[0]["status"] == "succeeded"
    assert "compaction_start" not in names
    assert roles(session) == ["user", "assistant"]
    sent = server.requests[0].body["messages"]
    cache = {"type": "ephemeral"}
    assert sent == [
        {"role": "user", "content": [{"type": "text", "text": "What is the answer?", "cache_control": cache}]}
    ]


def test_tool_call_ends_the_run_without_executing_it(user, make_provider, server) -> None:
    owner = user()
    session = session_services.create_session(actor=owner, cwd="/repo")
    server.enqueue(script.tool_call("read", {"path": "auth.ts"}))

    run = run_prompt(session, owner, make_provider())

    assert run.status == "succeeded" and run.stop_reason == "toolUse"
    assert len(server.requests) == 1
    assert entries(session)[-1]["message"]["content"][-1]["name"] == "read"


def test_threshold_compaction_after_the_run_does_not_retry(
    user, make_provider, server, listen, settings
) -> None:
    settings.PIWEB_COMPACTION = {"reserveTokens": 1000, "keepRecentTokens": 100}
    owner = user()
    session = seeded_session(owner)
    viewer = listen(session.pk)
    server.enqueue(script.reply("Done with the refactor.", usage={"input": 9500, "output": 30}))

    run = run_prompt(session, owner, make_provider(context_window=10000))

    assert run.status == "succeeded" and run.recovery_events == []
    assert len(server.requests) == 1
    new = tail(session, "a5")
    assert [e["type"] for e in new] == ["model_change", "message", "message", "compaction"]
    assert new[2]["message"]["stopReason"] == "stop"
    compaction = CompactionRun.objects.get(session=session)
    assert compaction.reason == "threshold" and compaction.result_entry_id == new[3]["id"]
    start, end = viewer.named("compaction_start"), viewer.named("compaction_end")
    assert start[0]["reason"] == "threshold"
    assert end[0]["willRetry"] is False and end[0]["result"]["entryId"] == new[3]["id"]
    assert viewer.names().index("compaction_end") < viewer.names().index("run_ended")
    assert roles(session)[0] == "compactionSummary"


def test_overflow_is_omitted_compacted_and_retried_once(
    user, make_provider, server, listen, settings
) -> None:
    settings.PIWEB_COMPACTION = {"keepRecentTokens": 100}
    owner = user()
    session = seeded_session(owner)
    viewer = listen(session.pk)
    server.enqueue(script.overflow(), script.reply("Recovered: here is the plan."))

    run = run_prompt(session, owner, make_provider())

    assert run.status == "succeeded", run.error
    new = tail(session, "a5")
    assert [e["type"] for e in new] == [
        "model_change",
        "message",
        "message",
        "context_edit",
        "compaction",
        "message",
    ]
    failed, edit, compaction, answer = new[2], new[3], new[4], new[5]
    assert failed["message"]["stopReason"] == "error"
    assert "prompt is too long" in failed["message"]["errorMessage"]
    assert edit["targetId"] == failed["id"] and edit["replacement"] is None
    assert answer["message"]["content"] == [{"type": "text", "text": "Recovered: here is the plan."}]
    assert answer["parentId"] == compaction["id"]
    assert CompactionRun.objects.get(session=session).reason == "overflow"

    (event,) = run.recovery_events
    assert event["kind"] == "overflow" and event["entryId"] == failed["id"]
    assert event["omitted"] == [edit["id"]] and event["compaction"] == compaction["id"]
    assert event["retrySucceeded"] is True
    assert not run.recovery_attempted  # the clean reply reset the fuse

    names = viewer.names()
    assert names.index("entry_appended") < names.index("compaction_start") < names.index("compaction_end")
    assert viewer.named("entry_appended")[0]["entry"]["targetId"] == failed["id"]
    assert viewer.named("compaction_start")[0]["reason"] == "overflow"
    assert viewer.named("compaction_end")[0]["willRetry"] is True
    assert len(server.requests) == 2
    # The retry sends the summary and the kept turns, never the failed attempt.
    retried = server.requests[1].body["messages"]
    cache = {"type": "ephemeral"}  # the last user turn carries Pi's cache breakpoint
    assert retried[-1] == {
        "role": "user",
        "content": [{"type": "text", "text": "Please continue.", "cache_control": cache}],
    }
    assert "too long" not in str(retried) and "compacted into the following summary" in str(retried[0])
    session.refresh_from_db()
    context = context_for_leaf(session).projection
    assert context.messages[0]["role"] == "compactionSummary"
    assert failed["id"] not in context.sources()
    assert context.messages[-1]["content"][0]["text"] == "Recovered: here is the plan."


def test_second_overflow_in_one_window_stops_with_a_clear_message(
    user, make_provider, server, listen, settings
) -> None:
    settings.PIWEB_COMPACTION = {"keepRecentTokens": 100}
    owner = user()
    session = seeded_session(owner)
    viewer = listen(session.pk)
    server.enqueue(script.overflow(), script.overflow())

    run = run_prompt(session, owner, make_provider())

    assert run.status == "failed" and run.error == OVERFLOW_RECOVERY_FAILED
    assert run.recovery_attempted  # the fuse stays blown until a user message or a clean reply
    new = tail(session, "a5")
    assert [e["type"] for e in new] == [
        "model_change",
        "message",
        "message",
        "context_edit",
        "compaction",
        "message",
    ]
    assert new[5]["message"]["stopReason"] == "error"  # kept in history, not omitted
    assert len(server.requests) == 2
    ends = viewer.named("compaction_end")
    assert ends[0]["willRetry"] is True
    assert ends[1]["errorMessage"] == OVERFLOW_RECOVERY_FAILED and ends[1]["willRetry"] is False
    assert viewer.named("session_compact_failed")[0]["errorMessage"] == OVERFLOW_RECOVERY_FAILED
    assert len(viewer.named("compaction_start")) == 1
    assert viewer.named("run_ended")[0]["error"] == OVERFLOW_RECOVERY_FAILED
    assert run.recovery_events[0]["retrySucceeded"] is False

    # The next prompt opens a new window; before it, the blown fuse is reported once more, as Pi does.
    server.enqueue(script.reply("Fine now."))
    second = run_prompt(session, owner, run.provider, "Try again")
    assert second.status == "succeeded" and second.error == "" and not second.recovery_attempted
    assert entries(session)[-1]["message"]["content"][0]["text"] == "Fine now."
    assert len(viewer.named("session_compact_failed")) == 2


def test_silent_overflow_after_a_complete_answer_compacts_without_retry(
    user, make_provider, server, listen, settings
) -> None:
    settings.PIWEB_COMPACTION = {"reserveTokens": 1000, "keepRecentTokens": 100}
    owner = user()
    session = seeded_session(owner)
    viewer = listen(session.pk)
    server.enqueue(script.reply("Complete answer.", usage={"input": 12000, "output": 40}))

    run = run_prompt(session, owner, make_provider(context_window=10000))

    assert run.status == "succeeded"
    new = tail(session, "a5")
    assert [e["type"] for e in new] == ["model_change", "message", "message", "compaction"]
    assert len(server.requests) == 1
    assert CompactionRun.objects.get(session=session).reason == "overflow"
    assert viewer.named("compaction_end")[0]["willRetry"] is False
    assert "entry_appended" not in viewer.names()


def test_transient_failures_are_retried_with_the_attempts_omitted(
    user, make_provider, server, listen
) -> None:
    owner = user()
    session = session_services.create_session(actor=owner, cwd="/repo")
    viewer = listen(session.pk)
    server.enqueue(script.rate_limited(), script.dropped(after=3), script.reply("Third time lucky."))

    run = run_prompt(session, owner, make_provider(), "Hello?")

    assert run.status == "succeeded" and run.retry_attempts == 2
    written = entries(session)
    assert [e["type"] for e in written] == [
        "model_change",
        "message",
        "message",
        "context_edit",
        "message",
        "context_edit",
        "message",
    ]
    assert "429" in written[2]["message"]["errorMessage"]
    assert written[3]["targetId"] == written[2]["id"] and written[5]["targetId"] == written[4]["id"]
    starts = viewer.named("auto_retry_start")
    assert [(s["attempt"], s["delayMs"]) for s in starts] == [(1, 1), (2, 2)]
    assert viewer.named("auto_retry_end") == [
        {**viewer.named("auto_retry_end")[0], "success": True, "attempt": 2}
    ]
    assert "compaction_start" not in viewer.names()
    assert [e["kind"] for e in run.recovery_events] == ["transient", "transient"]
    assert roles(session) == ["user", "assistant"]
    assert len(server.requests) == 3


def test_retries_give_up_after_max_retries(user, make_provider, server, listen) -> None:
    owner = user()
    session = session_services.create_session(actor=owner, cwd="/repo")
    viewer = listen(session.pk)
    server.enqueue(*[script.overloaded() for _ in range(4)])

    run = run_prompt(session, owner, make_provider())

    assert run.status == "failed" and "529" in run.error
    assert len(server.requests) == 4
    end = viewer.named("auto_retry_end")[0]
    assert end["success"] is False and end["attempt"] == 3


def test_runs_send_pis_system_prompt_and_tools(user, make_provider, server, listen) -> None:
    owner = user()
    session = session_services.create_session(actor=owner, cwd="/repo")
    tool = {
        "name": "read",
        "description": "Read a file",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    }
    system = {"role": "system", "content": "", "sections": {"preamble": "You are a coding assistant.",
              "cwd": "<cwd>\n/repo\n</cwd>"}, "toolsAdded": [tool], "timestamp": 1}  # fmt: skip
    session_services.append_entries(
        session=session, actor=session.owner, entries=[{"type": "message", "message": system}]
    )
    server.enqueue(script.tool_call("read", {"path": "auth.ts"}))
    viewer = listen(session.pk)

    run = run_prompt(session, owner, make_provider())

    body = server.requests[0].body
    assert body["system"][0]["text"] == "You are a coding assistant.\n\n<cwd>\n/repo\n</cwd>"
    assert body["tools"] == [
        {
            "name": "read",
            "description": "Read a file",
            "eager_input_streaming": True,
            "input_schema": tool["parameters"],
            "cache_control": {"type": "ephemeral"},
        }
    ]
    # piweb runs no tools: the toolUse stop ends the run, and viewers are told so they can offer Pi.
    assert run.status == "succeeded" and run.stop_reason == "toolUse"
    assert viewer.named("run_ended")[-1]["toolUse"] is True
