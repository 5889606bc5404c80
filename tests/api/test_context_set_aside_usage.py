"""After a failed prompt the gauge keeps Pi's estimate and says which reported usage it set aside, and why."""

from __future__ import annotations

from typing import Any

import pytest

from sessions_app import services
from tests.factories import assistant_message as assistant
from tests.factories import session_file
from tests.factories import user_message as user

pytestmark = pytest.mark.django_db

REPORTED = {"input": 9000, "output": 560, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 9560}


def edit(entry_id: str, parent: str, target: str) -> dict[str, Any]:
    return {
        "type": "context_edit",
        "id": entry_id,
        "parentId": parent,
        "timestamp": "2026-01-02T03:04:08.000Z",
        "targetId": target,
        "replacement": None,
    }


def conversation_with_a_failed_attempt() -> list[dict[str, Any]]:
    return [
        user("u1", None, "Read the whole repository"),
        assistant("a1", "u1", "Done reading.", usage=REPORTED),
        user("u2", "a1", "Now refactor it"),
        assistant("a2", "u2", "", stop="error", errorMessage="400: prompt is too long"),
        edit("e1", "a2", "a2"),
    ]


def context_at(api_client: Any, entries: list[dict[str, Any]], leaf: str) -> dict[str, Any]:
    session = services.import_jsonl(actor=api_client.user, data=session_file(entries)).session
    response = api_client.get(f"/api/sessions/{session.pk}/context/", {"leaf": leaf, "llm": "false"})
    assert response.status_code == 200
    return response.json()


def test_an_omitted_attempt_sets_the_last_report_aside_and_says_so(api_client: Any) -> None:
    entries = conversation_with_a_failed_attempt()

    before = context_at(api_client, entries, "u2")
    after = context_at(api_client, entries, "e1")

    # Before the failure the estimate rests on the report; after it, on the messages' text (Pi's number).
    assert before["estimate"]["tokens"] >= 9560 and before["estimate"]["setAsideUsage"] is None
    assert after["estimate"]["tokens"] < 100 and after["estimate"]["lastUsageIndex"] is None
    assert after["estimate"]["setAsideUsage"] == {
        "tokens": 9560,
        "entryId": "a1",
        "resetId": "e1",
        "resetType": "context_edit",
    }


def test_a_report_after_the_edit_is_trusted_again(api_client: Any) -> None:
    entries = [
        *conversation_with_a_failed_attempt(),
        user("u3", "e1", "Try a smaller step"),
        assistant("a3", "u3", "Smaller step done.", usage={**REPORTED, "totalTokens": 1200}),
    ]

    body = context_at(api_client, entries, "a3")

    assert body["estimate"]["setAsideUsage"] is None
    assert body["estimate"]["usageTokens"] == 1200


def test_without_any_report_there_is_nothing_to_explain(api_client: Any) -> None:
    entries = [user("u1", None, "hi"), edit("e1", "u1", "u1")]
    assert context_at(api_client, entries, "e1")["estimate"]["setAsideUsage"] is None
