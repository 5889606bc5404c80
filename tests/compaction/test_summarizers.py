"""The offline summarizer's layout and limits, and the model summarizer's request."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import pytest

from compaction_app.domain.preparation import prepare_compaction
from compaction_app.domain.prompts import SUMMARIZATION_SYSTEM_PROMPT, SummaryKind
from compaction_app.domain.settings import CompactionSettings
from compaction_app.domain.summary import (
    SummarizationError,
    SummaryRequest,
    compact,
    response_text,
    validated_summary,
)
from compaction_app.summarizers import LLMSummarizer, OfflineSummarizer
from pitree.entries import Entry
from providers.llm import ProviderConfig
from providers.llm.testserver import ProviderServer, error, reply

CONVERSATION = "\n\n".join(
    [
        "[User]: Add retries to fetch_data() in src/net/client.py. Never retry POST requests.",
        "[Assistant]: Let me read the client first.",
        '[Assistant tool calls]: read(path="src/net/client.py")',
        "[Tool result]: def fetch_data(url):\n    return http.get(url)",
        '[Assistant tool calls]: edit(path="src/net/client.py", oldText="a", newText="b")',
        "[Tool result]: Applied 1 edit.",
        '[Assistant tool calls]: bash(command="pytest tests/test_client.py")',
        "[Tool result]: E   ConnectionError: HTTPSConnectionPool(host='api.example.com', port=443): "
        "Max retries",
        "[Assistant]: I decided to use exponential backoff because the API rate-limits bursts. "
        "I will fix the failing test next.",
        "[User]: Also log every retry at debug level.",
    ]
)


def _summary(kind: SummaryKind = SummaryKind.HISTORY, **fields: object) -> str:
    request = SummaryRequest(kind=kind, conversation=fields.pop("conversation", CONVERSATION), **fields)  # type: ignore[arg-type]
    response = OfflineSummarizer(clock=lambda: 0).summarize(request)
    return validated_summary(response, "Summarization")


def test_offline_summary_has_the_sections_in_order() -> None:
    text = _summary()
    headings = [line for line in text.splitlines() if line.startswith("#")]
    assert headings == [
        "## Goal",
        "## Constraints & Preferences",
        "## Progress",
        "### Done",
        "### In Progress",
        "### Blocked",
        "## Key Decisions",
        "## Next Steps",
        "## Critical Context",
    ]


def test_offline_summary_keeps_exact_paths_functions_and_errors() -> None:
    text = _summary()
    assert "src/net/client.py" in text
    assert "fetch_data()" in text
    assert "E ConnectionError: HTTPSConnectionPool(host='api.example.com', port=443): Max retries" in text
    assert "Never retry POST requests." in text
    assert "Also log every retry at debug level." in text.split("## Next Steps")[1]
    assert "because the API rate-limits bursts" in text.split("## Key Decisions")[1]


def test_offline_summary_respects_the_output_cap() -> None:
    long_conversation = "\n\n".join(
        f"[User]: Please update module_{i}/file_{i}.py and never break api_{i}()." for i in range(300)
    )
    text = _summary(conversation=long_conversation, max_output_tokens=200)
    assert len(text) <= 800
    assert text.startswith("## Goal\n- Please update module_0/file_0.py")
    assert "## Critical Context" in text


def test_offline_update_keeps_previous_points_and_adds_new_ones() -> None:
    previous = _summary(
        conversation="[User]: Build the login page in web/login.tsx. Always use the design tokens."
    )
    updated = _summary(
        SummaryKind.UPDATE,
        conversation="[User]: Now add a logout button to web/header.tsx.\n\n[Assistant]: Added the button.",
        previous_summary=previous + "\n\n<read-files>\nweb/login.tsx\n</read-files>",
    )
    goal = updated.split("## Constraints")[0]
    assert "Build the login page in web/login.tsx." in goal
    assert "Always use the design tokens." in updated
    assert "Added the button." in updated
    assert "web/header.tsx" in updated
    assert "<read-files>" not in updated


def test_offline_turn_prefix_uses_its_own_sections() -> None:
    text = _summary(SummaryKind.TURN_PREFIX)
    assert [line for line in text.splitlines() if line.startswith("#")] == [
        "## Original Request",
        "## Progress So Far",
        "## Context Needed to Continue",
    ]
    assert "Edited src/net/client.py" in text


@pytest.fixture
def server() -> Iterator[ProviderServer]:
    with ProviderServer() as running:
        yield running


def _config(server: ProviderServer) -> ProviderConfig:
    return ProviderConfig(
        api="openai-completions",
        provider="openai",
        base_url=f"{server.url}/v1",
        model_id="gpt-test",
        api_key="sk-test",
        context_window=128000,
        max_output_tokens=8192,
    )


def test_llm_summarizer_sends_one_user_message_with_the_prompt(server: ProviderServer) -> None:
    server.enqueue(reply("## Goal\n- done"))
    request = SummaryRequest(kind=SummaryKind.HISTORY, conversation="[User]: hi", max_output_tokens=1000)
    response = LLMSummarizer(_config(server), sleep=lambda _: None).summarize(request)
    assert response["stopReason"] == "stop"
    assert response_text(response) == "## Goal\n- done"
    (sent,) = server.requests
    body = sent.body
    assert body["messages"][0] == {"role": "system", "content": SUMMARIZATION_SYSTEM_PROMPT}
    content = body["messages"][1]["content"]
    texts = [content] if isinstance(content, str) else [part["text"] for part in content]
    assert body["messages"][1]["role"] == "user" and texts == [request.prompt]
    assert body.get("max_tokens", body.get("max_completion_tokens")) == 1000


def test_llm_summarizer_sends_no_routing_fields_and_fits_the_output_cap(server: ProviderServer) -> None:
    server.enqueue(reply("a"))
    small = replace(_config(server), context_window=8000, max_output_tokens=8192)
    LLMSummarizer(small, sleep=lambda _: None).summarize(
        SummaryRequest(kind=SummaryKind.HISTORY, conversation="[User]: hi")
    )
    (sent,) = server.requests
    assert "user" not in sent.body and "x-session-id" not in sent.headers
    # 8,000 tokens less the prompt and Pi's 4,096-token margin, not the model's 8,192.
    assert 0 < sent.body["max_completion_tokens"] < 8000 - 4096


def test_compaction_with_offline_summarizer_end_to_end() -> None:
    edit = {"type": "toolCall", "id": "c", "name": "edit", "arguments": {"path": "pkg/mod.py"}}
    messages = [
        ("u1", {"role": "user", "content": "Rename parse() in pkg/mod.py"}),
        ("a1", {"role": "assistant", "content": [{"type": "text", "text": "Renamed it."}, edit]}),
        ("t1", {"role": "toolResult", "toolCallId": "c", "content": [{"type": "text", "text": "ok"}]}),
        ("u2", {"role": "user", "content": "Thanks"}),
    ]
    path = []
    for seq, (entry_id, message) in enumerate(messages):
        parent = path[-1].id if path else None
        payload = {"type": "message", "id": entry_id, "parentId": parent, "message": message}
        path.append(Entry(seq=seq, id=entry_id, parent_id=parent, type="message", payload=payload))
    prep = prepare_compaction(path, CompactionSettings(keep_recent_tokens=2))
    assert prep is not None
    result = compact(prep, OfflineSummarizer(clock=lambda: 0))
    assert result.first_kept_entry_id == "u2"
    assert result.summary.startswith("## Goal\n- Rename parse() in pkg/mod.py")
    assert result.summary.endswith("\n\n<modified-files>\npkg/mod.py\n</modified-files>")
    assert result.usage is not None and result.usage["totalTokens"] == 0  # no model ran
    assert result.details["offline"] is True


def test_provider_failure_stops_the_compaction(server: ProviderServer) -> None:
    server.enqueue(error(400, "model not found"))
    prep_path = [
        Entry(
            seq=0,
            id="u1",
            parent_id=None,
            type="message",
            payload={"message": {"role": "user", "content": "First question here"}},
        ),
        Entry(
            seq=1,
            id="u2",
            parent_id="u1",
            type="message",
            payload={"message": {"role": "user", "content": "Thanks"}},
        ),
    ]
    prep = prepare_compaction(prep_path, CompactionSettings(keep_recent_tokens=2))
    assert prep is not None
    with pytest.raises(SummarizationError, match=r"^Summarization failed: .*model not found"):
        compact(prep, LLMSummarizer(_config(server), sleep=lambda _: None))
