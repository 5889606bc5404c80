"""A session with everything a message can hold, for the rendering, context and compare tests."""

from __future__ import annotations

from typing import Any

from tests.factories import assistant_message as assistant_msg
from tests.factories import user_message as user_msg

TS = "2026-01-02T03:04:10.000Z"
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
MARKDOWN = (
    "Here is the plan:\n\n"
    "| step | owner |\n|---|---|\n| parse | ada |\n| store | bo |\n\n"
    "- outer\n  - inner one\n  - inner two\n\n"
    "See <https://example.org/docs> and https://example.com.\n\n"
    "```python\ndef total(xs):\n    return sum(xs)\n```\n"
)


def tool_result(entry_id: str, parent: str, call_id: str, name: str, text: str) -> dict[str, Any]:
    return {
        "type": "message",
        "id": entry_id,
        "parentId": parent,
        "timestamp": TS,
        "message": {
            "role": "toolResult",
            "toolCallId": call_id,
            "toolName": name,
            "content": [{"type": "text", "text": text}],
            "isError": False,
            "timestamp": 3,
        },
    }


def rich_session() -> list[dict[str, Any]]:
    """u1 → a1 (markdown, thinking, edit) → t1 → a2 (read) → t2 → a3 (bash) → t3 → c1 compaction → u2 → a4,
    with an image in u2 and a model_change without a model id; a side branch u9 → a9 under a1."""
    return [
        {"type": "model_change", "id": "mc", "parentId": None, "timestamp": TS, "provider": "anthropic"},
        user_msg("u1", "mc", "Please fix the ordering"),
        assistant_msg(
            "a1",
            "u1",
            MARKDOWN,
            blocks=[
                {"type": "thinking", "thinking": "The order is not total."},
                {
                    "type": "toolCall",
                    "id": "c-edit",
                    "name": "edit",
                    "arguments": {
                        "path": "app/views.py",
                        "oldText": "order_by('a')\nx = 1",
                        "newText": "order_by('a', 'id')\nx = 1",
                    },
                },
            ],
            stop="toolUse",
        ),
        tool_result("t1", "a1", "c-edit", "edit", "Successfully replaced text in app/views.py."),
        assistant_msg(
            "a2",
            "t1",
            "Reading it back.",
            blocks=[
                {"type": "toolCall", "id": "c-read", "name": "read", "arguments": {"path": "app/views.py"}}
            ],
            stop="toolUse",
        ),
        tool_result("t2", "a2", "c-read", "read", "def view():\n    return qs.order_by('a', 'id')\n"),
        assistant_msg(
            "a3",
            "t2",
            "Running the tests.",
            blocks=[
                {
                    "type": "toolCall",
                    "id": "c-bash",
                    "name": "bash",
                    "arguments": {"command": "pytest -q tests/"},
                }
            ],
            stop="toolUse",
        ),
        tool_result("t3", "a3", "c-bash", "bash", "3 passed in 0.2s"),
        {
            "type": "compaction",
            "id": "c1",
            "parentId": "t3",
            "timestamp": TS,
            "summary": "## Goal\nFix the ordering.\n\n## Done\n- edited `app/views.py`",
            "firstKeptEntryId": "a3",
            "tokensBefore": 64000,
            "details": {"offline": True},
        },
        {
            "type": "message",
            "id": "u2",
            "parentId": "c1",
            "timestamp": TS,
            "message": {
                "role": "user",
                "content": [
                    {"type": "text", "text": "And this screenshot?"},
                    {"type": "image", "mimeType": "image/png", "data": PNG},
                ],
                "timestamp": 4,
            },
        },
        assistant_msg("a4", "u2", "Looks right."),
        user_msg("u9", "a1", "Another idea"),
        assistant_msg("a9", "u9", "A different answer"),
        # The leaf goes back to the main line.
        {"type": "label", "id": "l1", "parentId": "a4", "timestamp": TS, "targetId": "u1", "label": "start"},
    ]
