"""Synthetic Pi sessions long enough to compact, and a way to read what a session holds."""

from __future__ import annotations

import json
from typing import Any

from sessions_app import services
from sessions_app.models import ChatSession, Entry

HEADER = {
    "type": "session",
    "version": 3,
    "id": "sess-c",
    "timestamp": "2026-02-01T10:00:00.000Z",
    "cwd": "/w",
}
SYSTEM_PROMPT = "You are a careful coding assistant."
WORDS = "the parser keeps every line of src/app/parser.py intact while reading tokens " * 4


def _stamp(i: int) -> str:
    return f"2026-02-01T10:{i // 60:02d}:{i % 60:02d}.000Z"


def conversation(turns: int, *, system: bool = True, repeat: int = 1) -> list[dict[str, Any]]:
    """Return a linear session: an optional system message, then ``turns`` user/assistant pairs.

    ``repeat`` multiplies the length of each message.
    """
    words = WORDS * repeat
    entries: list[dict[str, Any]] = []
    parent: str | None = None
    if system:
        entries.append(
            {
                "type": "message",
                "id": "s0",
                "parentId": None,
                "timestamp": _stamp(0),
                "message": {"role": "system", "content": SYSTEM_PROMPT, "timestamp": 1},
            }
        )
        parent = "s0"
    for n in range(1, turns + 1):
        entries.append(
            {
                "type": "message",
                "id": f"u{n}",
                "parentId": parent,
                "timestamp": _stamp(2 * n),
                "message": {"role": "user", "content": f"Request {n}: {words}", "timestamp": 10 * n},
            }
        )
        entries.append(
            {
                "type": "message",
                "id": f"a{n}",
                "parentId": f"u{n}",
                "timestamp": _stamp(2 * n + 1),
                "message": {
                    "role": "assistant",
                    "content": [{"type": "text", "text": f"Answer {n}: I fixed it. {words}"}],
                    "provider": "p",
                    "model": "m",
                    "usage": {
                        "input": 100 * n,
                        "output": 50,
                        "cacheRead": 0,
                        "cacheWrite": 0,
                        "totalTokens": 0,
                    },
                    "stopReason": "stop",
                    "timestamp": 10 * n + 1,
                },
            }
        )
        parent = f"a{n}"
    return entries


def store(owner: Any, entries: list[dict[str, Any]], pi_id: str = "sess-c") -> ChatSession:
    """Import the entries as a session of ``owner``."""
    data = "\n".join(json.dumps(v) for v in [{**HEADER, "id": pi_id}, *entries]) + "\n"
    return services.import_jsonl(owner=owner, data=data.encode(), filename="c.jsonl").session


def payloads(session: ChatSession, kind: str | None = None) -> list[dict[str, Any]]:
    """Return the session's entries in append order, optionally only one type."""
    rows = Entry.objects.filter(session=session).order_by("seq")
    if kind is not None:
        rows = rows.filter(type=kind)
    return [row.payload() for row in rows]
