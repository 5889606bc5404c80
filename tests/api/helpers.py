"""Synthetic session files for API tests."""

from __future__ import annotations

import json
from typing import Any

HEADER = {
    "type": "session",
    "version": 3,
    "id": "sess-1",
    "timestamp": "2026-01-02T03:04:05.678Z",
    "cwd": "/w",
}


def line(value: dict[str, Any]) -> str:
    return json.dumps(value, separators=(",", ":"))


def user(
    entry_id: str, parent: str | None, text: str, ts: str = "2026-01-02T03:04:06.000Z"
) -> dict[str, Any]:
    return {
        "type": "message",
        "id": entry_id,
        "parentId": parent,
        "timestamp": ts,
        "message": {"role": "user", "content": text, "timestamp": 1},
    }


def assistant(entry_id: str, parent: str | None, text: str) -> dict[str, Any]:
    return {
        "type": "message",
        "id": entry_id,
        "parentId": parent,
        "timestamp": "2026-01-02T03:04:07.000Z",
        "message": {
            "role": "assistant",
            "content": [{"type": "text", "text": text}],
            "provider": "p",
            "model": "m",
            "usage": {"input": 10, "output": 5, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 15},
            "stopReason": "stop",
            "timestamp": 2,
        },
    }


def session_file(entries: list[dict[str, Any]], header: dict[str, Any] | None = None) -> bytes:
    return ("\n".join(line(v) for v in [header or HEADER, *entries]) + "\n").encode()


def small_tree() -> list[dict[str, Any]]:
    """u1 → a1 → u2 → a2, and a second branch u3 → a3 under a1."""
    return [
        user("u1", None, "hello"),
        assistant("a1", "u1", "hi"),
        user("u2", "a1", "first question"),
        assistant("a2", "u2", "first answer"),
        user("u3", "a1", "second question"),
        assistant("a3", "u3", "second answer"),
    ]
