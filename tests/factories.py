"""Test data for the whole suite: Pi entries, session files, stored sessions and how to read them back.

One module, so every test builds sessions the same way. Entry ids here are fixed, never random: tests
may look for them in pages and answers.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any

from django.db import connections

from sessions_app import services
from sessions_app.models import ChatSession, Entry

HEADER = {
    "type": "session",
    "version": 3,
    "id": "sess-1",
    "timestamp": "2026-01-02T03:04:05.678Z",
    "cwd": "/w",
}
SYSTEM_PROMPT = "You are a careful coding assistant."
WORDS = "the parser keeps every line of src/app/parser.py intact while reading tokens " * 4


# -- entries and files ----------------------------------------------------------------------------------


def line(value: dict[str, Any]) -> str:
    """Return a value as one compact JSONL line (no newline)."""
    return json.dumps(value, separators=(",", ":"))


def user_message(
    entry_id: str, parent: str | None, text: str, ts: str = "2026-01-02T03:04:06.000Z"
) -> dict[str, Any]:
    return {
        "type": "message",
        "id": entry_id,
        "parentId": parent,
        "timestamp": ts,
        "message": {"role": "user", "content": text, "timestamp": 1},
    }


def assistant_message(entry_id: str, parent: str | None, text: str, **extra: Any) -> dict[str, Any]:
    """An assistant answer; ``blocks`` adds content blocks, ``stop`` sets the stop reason, the rest of
    ``extra`` goes into the message."""
    return {
        "type": "message",
        "id": entry_id,
        "parentId": parent,
        "timestamp": "2026-01-02T03:04:07.000Z",
        "message": {
            "role": "assistant",
            "content": [{"type": "text", "text": text}, *extra.pop("blocks", [])],
            "provider": "p",
            "model": "m",
            "usage": {"input": 10, "output": 5, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 15},
            "stopReason": extra.pop("stop", "stop"),
            "timestamp": 2,
            **extra,
        },
    }


def session_file(entries: list[dict[str, Any]], header: dict[str, Any] | None = None) -> bytes:
    return ("\n".join(line(v) for v in [header or HEADER, *entries]) + "\n").encode()


def small_tree(*, rich: bool = False) -> list[dict[str, Any]]:
    """u1 → a1 → u2 → a2, and a second branch u3 → a3 under a1 (leaf: a3).

    ``rich`` gives the texts the page tests look for (markdown, a longer greeting).
    """
    extra = {"api": "openai-completions"} if rich else {}
    return [
        user_message("u1", None, "hello there" if rich else "hello"),
        assistant_message("a1", "u1", "hi, how can I help?" if rich else "hi", **extra),
        user_message("u2", "a1", "first question"),
        assistant_message("a2", "u2", "first **answer**" if rich else "first answer", **extra),
        user_message("u3", "a1", "second question"),
        assistant_message("a3", "u3", "second answer", **extra),
    ]


FILES_HEADER = {
    "type": "session",
    "version": 3,
    "id": "files-1",
    "timestamp": "2026-01-02T03:04:05.678Z",
    "cwd": "/w",
}


def tool_turn(
    call_id: str, parent: str, name: str, args: dict[str, Any], *, error: bool = False
) -> list[Any]:
    """An assistant entry calling one tool (id ``call_id``-a) and its result (``call_id``-r)."""
    call = {"type": "toolCall", "id": call_id, "name": name, "arguments": args}
    return [
        {
            "type": "message",
            "id": f"{call_id}-a",
            "parentId": parent,
            "timestamp": "2026-01-02T03:04:07.000Z",
            "message": {"role": "assistant", "content": [call], "stopReason": "toolUse", "timestamp": 2},
        },
        {
            "type": "message",
            "id": f"{call_id}-r",
            "parentId": f"{call_id}-a",
            "timestamp": "2026-01-02T03:04:08.000Z",
            "message": {
                "role": "toolResult",
                "toolCallId": call_id,
                "toolName": name,
                "content": [{"type": "text", "text": "error" if error else "ok"}],
                "isError": error,
                "timestamp": 3,
            },
        },
    ]


def two_branches_with_files() -> list[dict[str, Any]]:
    """u0 → write shared.txt; then branch B (u3 → write other.txt, appended first) and branch A
    (u1 → edit shared.txt, a failed edit, write /w/src/a.py): the leaf is A's last entry, c4-r."""
    return [
        user_message("u0", None, "start"),
        *tool_turn("c0", "u0", "write", {"path": "shared.txt", "content": "one\ntwo\n"}),
        user_message("u3", "c0-r", "the other way"),
        *tool_turn("c9", "u3", "write", {"path": "other.txt", "content": "elsewhere\n"}),
        user_message("u1", "c0-r", "this way"),
        *tool_turn(
            "c1", "u1", "edit", {"path": "shared.txt", "edits": [{"oldText": "two", "newText": "2\n3"}]}
        ),
        *tool_turn(
            "c2", "c1-r", "edit", {"path": "shared.txt", "oldText": "nope", "newText": "x"}, error=True
        ),
        *tool_turn("c3", "c2-r", "bash", {"command": "make test"}),
        *tool_turn("c4", "c3-r", "write", {"path": "/w/src/a.py", "content": "print(1)\n"}),
    ]


def _at(second: int) -> str:
    return f"2026-01-02T03:04:{second:02d}.000Z"


def branched() -> list[dict[str, Any]]:
    """Search hits in a branched tree: u0 → a0, where a0 has two children, x1 (appended first, but later
    in time) and y1 (earlier). The x branch runs on to x9, the leaf. Every entry but y2 says "needle".
    """
    entries = [
        user_message("u0", None, "needle at the root", _at(0)),
        user_message("a0", "u0", "a needle answer", _at(1)),
        user_message("x1", "a0", "needle on x", _at(20)),
        user_message("x2", "x1", "more needle on x", _at(21)),
        user_message("y1", "a0", "needle on y", _at(10)),
        user_message("y2", "y1", "nothing to find here", _at(11)),
        user_message("y3", "y2", "the last needle on y", _at(12)),
    ]
    parent = "x2"
    for i in range(3, 10):
        entries.append(user_message(f"x{i}", parent, f"needle number {i}", _at(20 + i)))
        parent = f"x{i}"
    return entries


# Where branched()'s "needle" hits come in the tree. Pi lists a branch point's children oldest first:
# y1 (03:04:10) before x1 (03:04:20).
TREE_ORDER = ["u0", "a0", "y1", "y3", "x1", "x2", *(f"x{i}" for i in range(3, 10))]
# The listing a restricted link sees keeps children in append order: x1 was stored before y1.
APPEND_ORDER = ["u0", "a0", "x1", "x2", *(f"x{i}" for i in range(3, 10)), "y1", "y3"]


def _compaction_stamp(i: int) -> str:
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
                "timestamp": _compaction_stamp(0),
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
                "timestamp": _compaction_stamp(2 * n),
                "message": {"role": "user", "content": f"Request {n}: {words}", "timestamp": 10 * n},
            }
        )
        entries.append(
            {
                "type": "message",
                "id": f"a{n}",
                "parentId": f"u{n}",
                "timestamp": _compaction_stamp(2 * n + 1),
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


# -- stored sessions ------------------------------------------------------------------------------------


def store(owner: Any, entries: list[dict[str, Any]], pi_id: str = "sess-c") -> ChatSession:
    """Import the entries as a session of ``owner`` (header of the compaction tests' sessions)."""
    header = {**HEADER, "id": pi_id, "timestamp": "2026-02-01T10:00:00.000Z"}
    data = "\n".join(json.dumps(v) for v in [header, *entries]) + "\n"
    return services.import_jsonl(actor=owner, data=data.encode(), filename="c.jsonl").session


def seeded_session(owner: Any, turns: int = 6, *, words: int = 60) -> ChatSession:
    """Return a session with ``turns`` user/assistant exchanges of some length."""
    lines = [
        {
            "type": "session",
            "version": 3,
            "id": "seeded",
            "timestamp": "2026-07-29T09:00:00.000Z",
            "cwd": "/repo",
        }
    ]
    parent = None
    for i in range(turns):
        for role, text in (
            ("user", f"Question {i}: " + "word " * words),
            ("assistant", f"Answer {i}: " + "fact " * words),
        ):
            entry_id = f"{role[0]}{i}"
            content: Any = text if role == "user" else [{"type": "text", "text": text}]
            message = {"role": role, "content": content, "timestamp": 1_785_000_000_000 + i}
            lines.append(
                {
                    "type": "message",
                    "id": entry_id,
                    "parentId": parent,
                    "timestamp": f"2026-07-29T09:{i:02d}:{0 if role == 'user' else 1:02d}.000Z",
                    "message": message,
                }
            )
            parent = entry_id
    data = "".join(json.dumps(line) + "\n" for line in lines).encode()
    return services.import_jsonl(actor=owner, data=data).session


# -- reading back ---------------------------------------------------------------------------------------


def payloads(session: ChatSession, kind: str | None = None) -> list[dict[str, Any]]:
    """Return the session's entries in append order, optionally only one type."""
    rows = Entry.objects.filter(session=session).order_by("seq")
    if kind is not None:
        rows = rows.filter(type=kind)
    return [row.payload() for row in rows]


def entries(session: ChatSession) -> list[dict[str, Any]]:
    """Return every entry of the session in append order, parsed from its stored line."""
    return [
        json.loads(raw)
        for raw in Entry.objects.filter(session=session).order_by("seq").values_list("raw", flat=True)
    ]


# -- concurrent writers ---------------------------------------------------------------------------------


def run_writers(count: int, writer: Callable[[int], None]) -> None:
    """Run ``writer(0..count-1)`` in threads, each with its own connections; re-raise the first failure."""
    errors: list[BaseException] = []

    def run(n: int) -> None:
        try:
            writer(n)
        except BaseException as exc:
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run, args=(n,)) for n in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


def assert_one_gapless_chain(session: ChatSession, total: int) -> list[tuple[int, str, str, int]]:
    """Every writer hung its entries under the leaf it found: seqs 0..total-1, unique ids, one chain.

    Returns the rows as (seq, entry id, parent id, depth).
    """
    rows = list(
        Entry.objects.filter(session=session)
        .order_by("seq")
        .values_list("seq", "entry_id", "parent_id", "depth")
    )
    assert [r[0] for r in rows] == list(range(total))
    assert len({r[1] for r in rows}) == total
    assert [r[3] for r in rows] == list(range(total))
    assert all(rows[i][2] == rows[i - 1][1] for i in range(1, total))
    return rows
