"""The E1 walk-through (seeds/000 §12): an overflow on the compacted session of §14, entry for entry."""

from __future__ import annotations

import json

import pytest

from agent import services
from compaction_app.models import CompactionRun
from providers.llm import testserver as script
from sessions_app import services as session_services
from sessions_app.queries import context_for_leaf
from tests.factories import entries

pytestmark = pytest.mark.django_db(transaction=True)

SECTION_14 = [
    {"type": "session", "version": 3, "id": "S1", "timestamp": "2026-07-29T09:00:00Z", "cwd": "/repo"},
    {"type": "message", "id": "U1", "parentId": None, "timestamp": "2026-07-29T09:00:01Z",
     "message": {"role": "user", "content": "检查认证实现", "timestamp": 1}},
    {"type": "message", "id": "A1", "parentId": "U1", "timestamp": "2026-07-29T09:00:02Z",
     "message": {"role": "assistant", "content": [
         {"type": "toolCall", "id": "call-1", "name": "read", "arguments": {"path": "auth.ts"}}]}},
    {"type": "message", "id": "T1", "parentId": "A1", "timestamp": "2026-07-29T09:00:03Z",
     "message": {"role": "toolResult", "toolCallId": "call-1", "toolName": "read",
                 "content": [{"type": "text", "text": "..."}], "isError": False}},
    {"type": "message", "id": "A2", "parentId": "T1", "timestamp": "2026-07-29T09:00:04Z",
     "message": {"role": "assistant", "content": [{"type": "text", "text": "认证逻辑已定位"}]}},
    {"type": "message", "id": "U2", "parentId": "A2", "timestamp": "2026-07-29T09:01:00Z",
     "message": {"role": "user", "content": "改成 JWT", "timestamp": 2}},
    {"type": "message", "id": "A3", "parentId": "U2", "timestamp": "2026-07-29T09:01:01Z",
     "message": {"role": "assistant", "content": [{"type": "text", "text": "JWT 方案已完成"}]}},
    {"type": "branch_summary", "id": "BS1", "parentId": "A2", "timestamp": "2026-07-29T09:02:00Z",
     "fromId": "A2", "summary": "离开的 JWT 路径已完成认证改造。"},
    {"type": "message", "id": "U2B", "parentId": "BS1", "timestamp": "2026-07-29T09:02:01Z",
     "message": {"role": "user", "content": "改成 session cookie", "timestamp": 3}},
    {"type": "message", "id": "A4", "parentId": "U2B", "timestamp": "2026-07-29T09:02:02Z",
     "message": {"role": "assistant", "content": [{"type": "text", "text": "cookie 方案已完成"}]}},
    {"type": "message", "id": "U3", "parentId": "A4", "timestamp": "2026-07-29T09:03:00Z",
     "message": {"role": "user", "content": "补充测试", "timestamp": 4}},
    {"type": "message", "id": "A5", "parentId": "U3", "timestamp": "2026-07-29T09:03:01Z",
     "message": {"role": "assistant", "content": [{"type": "text", "text": "测试已补充"}]}},
    {"type": "message", "id": "U4", "parentId": "A5", "timestamp": "2026-07-29T09:04:00Z",
     "message": {"role": "user", "content": "检查边界条件", "timestamp": 5}},
    {"type": "message", "id": "A6", "parentId": "U4", "timestamp": "2026-07-29T09:04:01Z",
     "message": {"role": "assistant", "content": [{"type": "text", "text": "边界条件已处理"}]}},
    {"type": "compaction", "id": "C1", "parentId": "A6", "timestamp": "2026-07-29T09:05:00Z",
     "summary": "目标是完成认证改造；当前采用 session cookie；测试已补充。", "firstKeptEntryId": "U4",
     "tokensBefore": 115000},
]  # fmt: skip


def test_e1_overflow_is_kept_omitted_compacted_and_continued(
    user, make_provider, server, listen, settings
) -> None:
    # The walk-through's session is tiny; a keep budget of one token lets it be compacted at all.
    settings.PIWEB_COMPACTION = {"keepRecentTokens": 1}
    owner = user()
    data = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in SECTION_14).encode()
    session = session_services.import_jsonl(actor=owner, data=data).session
    assert [m["role"] for m in context_for_leaf(session).projection.messages] == [
        "compactionSummary",
        "user",
        "assistant",
    ]
    viewer = listen(session.pk)
    server.enqueue(script.overflow(), script.reply("边界条件的测试也已补充"))

    run = services.start_run(
        session=session, user=owner, prompt="再检查一遍错误处理", provider=make_provider()
    )
    run.refresh_from_db()

    assert run.status == "succeeded", run.error
    written = entries(session)
    assert [e["id"] for e in written[:14]] == [line["id"] for line in SECTION_14[1:]]  # history untouched
    model_change, prompt, e1, edit, c2, answer = written[14:]
    assert model_change["type"] == "model_change" and model_change["parentId"] == "C1"
    assert prompt["message"]["role"] == "user" and prompt["parentId"] == model_change["id"]
    # 12.1: E1 goes through the ordinary message end and is persisted under the leaf.
    assert e1["parentId"] == prompt["id"]
    assert e1["message"]["stopReason"] == "error" and "prompt is too long" in e1["message"]["errorMessage"]
    # 12.4: the failed attempt stays in history and a context_edit removes it from the model's view.
    assert edit == {
        **edit,
        "type": "context_edit",
        "parentId": e1["id"],
        "targetId": e1["id"],
        "replacement": None,
    }
    # 12.5: the compaction is built from the edited projection, reason overflow.
    assert c2["type"] == "compaction" and c2["parentId"] == edit["id"]
    assert c2["firstKeptEntryId"] == e1["id"]
    assert "目标是完成认证改造" in c2["summary"] or "认证" in c2["summary"]
    assert CompactionRun.objects.get(session=session, result_entry_id=c2["id"]).reason == "overflow"
    # 12.6: the run continues without a new user message.
    assert answer["parentId"] == c2["id"] and answer["message"]["stopReason"] == "stop"
    assert [e["message"]["role"] for e in written if e["type"] == "message"][-3:] == [
        "user",
        "assistant",
        "assistant",
    ]

    session.refresh_from_db()
    context = context_for_leaf(session).projection
    assert [m["role"] for m in context.messages] == ["compactionSummary", "assistant"]
    assert e1["id"] not in context.sources()
    assert viewer.named("compaction_start")[0]["reason"] == "overflow"
    assert viewer.named("compaction_end")[0]["willRetry"] is True
    assert len(server.requests) == 2
