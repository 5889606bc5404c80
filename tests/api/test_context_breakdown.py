"""The context endpoint splits what a request spends into system prompt, tools and messages."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from pitree.tokens import TokenEstimate, break_down_context
from sessions_app import services
from tests.factories import assistant_message as assistant
from tests.factories import session_file
from tests.factories import user_message as user

pytestmark = pytest.mark.django_db

READ = {
    "name": "read",
    "description": "Read a file",
    "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
}
BASH = {"name": "bash", "description": "Run a command", "parameters": {"type": "object", "properties": {}}}
PROMPT = {"preamble": "You are a coding assistant.", "cwd": "<cwd>\n/repo\n</cwd>"}


def system_entry(entry_id: str, parent: str | None, **message: Any) -> dict[str, Any]:
    return {
        "type": "message",
        "id": entry_id,
        "parentId": parent,
        "timestamp": "2026-01-02T03:04:05.000Z",
        "message": {"role": "system", "content": "", "timestamp": 1, **message},
    }


def tokens_of(text: str) -> int:
    return math.ceil(len(text) / 4)  # ASCII only: UTF-16 units are characters


def tools_json(*tools: dict[str, Any]) -> str:
    return json.dumps(list(tools), separators=(",", ":"))


def context(api_client: Any, entries: list[dict[str, Any]], **params: Any) -> dict[str, Any]:
    session = services.import_jsonl(actor=api_client.user, data=session_file(entries)).session
    response = api_client.get(f"/api/sessions/{session.pk}/context/", params)
    assert response.status_code == 200
    return response.json()


def test_without_usage_the_parts_are_the_prompt_tools_and_messages_a_run_would_send(api_client: Any) -> None:
    body = context(
        api_client,
        [
            system_entry("s1", None, sections=PROMPT, toolsAdded=[READ, BASH]),
            user("u1", "s1", "Please read app.py"),
        ],
        window=1000,
    )
    parts = body["breakdown"]
    # The prompt goes out as its sections joined by a blank line; the tools as their definitions.
    assert parts["systemPrompt"] == tokens_of("You are a coding assistant.\n\n<cwd>\n/repo\n</cwd>")
    assert parts["tools"] == tokens_of(tools_json(READ, BASH))
    assert parts["messages"] == tokens_of("Please read app.py")
    assert parts["total"] == parts["systemPrompt"] + parts["tools"] + parts["messages"]
    assert not parts["fromUsage"]
    assert body["contextWindow"] == {
        "window": 1000,
        "used": parts["total"],
        "fraction": parts["total"] / 1000,
    }


def test_the_tools_and_sections_in_force_are_counted_not_every_one_ever_added(api_client: Any) -> None:
    body = context(
        api_client,
        [
            system_entry("s1", None, sections=PROMPT, toolsAdded=[READ, BASH]),
            user("u1", "s1", "hello"),
            system_entry("s2", "u1", sections={"cwd": None}, toolsRemoved=["bash"]),
        ],
    )
    parts = body["breakdown"]
    assert parts["systemPrompt"] == tokens_of("You are a coding assistant.")
    assert parts["tools"] == tokens_of(tools_json(READ))
    assert parts["messages"] == tokens_of("hello")


def test_with_usage_the_messages_are_the_rest_of_the_providers_count(api_client: Any) -> None:
    usage = {"input": 900, "output": 100, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 1000}
    body = context(
        api_client,
        [
            system_entry("s1", None, sections=PROMPT, toolsAdded=[READ]),
            user("u1", "s1", "hello"),
            assistant("a1", "u1", "hi", usage=usage),
            user("u2", "a1", "and now?"),
        ],
    )
    parts = body["breakdown"]
    assert parts["fromUsage"]
    # The provider counted 1000 up to its answer; the newer question adds its estimate.
    assert body["estimate"]["tokens"] == 1000 + tokens_of("and now?") == parts["total"]
    system, tools = (
        tokens_of("You are a coding assistant.\n\n<cwd>\n/repo\n</cwd>"),
        tokens_of(tools_json(READ)),
    )
    assert (parts["systemPrompt"], parts["tools"]) == (system, tools)
    assert parts["messages"] == parts["total"] - system - tools
    assert body["contextWindow"]["used"] == parts["total"]


def test_a_session_without_system_messages_is_all_messages(api_client: Any) -> None:
    body = context(api_client, [user("u1", None, "hello"), assistant("a1", "u1", "hi")])
    parts = body["breakdown"]
    assert (parts["systemPrompt"], parts["tools"]) == (0, 0)
    assert parts["messages"] == parts["total"] == body["estimate"]["tokens"] == 15


def test_a_reported_usage_below_the_prompt_estimate_leaves_no_negative_messages() -> None:
    parts = break_down_context(TokenEstimate(30, 30, 0, 1), system_prompt=25, tools=10, messages=4)
    assert (parts.system_prompt, parts.tools, parts.messages, parts.total) == (25, 10, 0, 35)
