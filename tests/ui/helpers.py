"""Session files and small helpers for the UI tests."""

from __future__ import annotations

import json
from typing import Any

HEADER = {
    "type": "session",
    "version": 3,
    "id": "ui-sess",
    "timestamp": "2026-01-02T03:04:05.678Z",
    "cwd": "/w/ui",
}


def user_msg(entry_id: str, parent: str | None, text: str) -> dict[str, Any]:
    return {
        "type": "message",
        "id": entry_id,
        "parentId": parent,
        "timestamp": "2026-01-02T03:04:06.000Z",
        "message": {"role": "user", "content": text, "timestamp": 1},
    }


def assistant_msg(entry_id: str, parent: str | None, text: str, **extra: Any) -> dict[str, Any]:
    return {
        "type": "message",
        "id": entry_id,
        "parentId": parent,
        "timestamp": "2026-01-02T03:04:07.000Z",
        "message": {
            "role": "assistant",
            "content": [{"type": "text", "text": text}, *extra.pop("blocks", [])],
            "api": "openai-completions",
            "provider": "p",
            "model": "m",
            "usage": {"input": 10, "output": 5, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 15},
            "stopReason": extra.pop("stop", "stop"),
            "timestamp": 2,
            **extra,
        },
    }


def session_file(entries: list[dict[str, Any]], header: dict[str, Any] | None = None) -> bytes:
    lines = [json.dumps(v, separators=(",", ":")) for v in [header or HEADER, *entries]]
    return ("\n".join(lines) + "\n").encode()


def small_tree() -> list[dict[str, Any]]:
    """u1 → a1 → u2 → a2, and a second branch u3 → a3 under a1 (leaf: a3)."""
    return [
        user_msg("u1", None, "hello there"),
        assistant_msg("a1", "u1", "hi, how can I help?"),
        user_msg("u2", "a1", "first question"),
        assistant_msg("a2", "u2", "first **answer**"),
        user_msg("u3", "a1", "second question"),
        assistant_msg("a3", "u3", "second answer"),
    ]
