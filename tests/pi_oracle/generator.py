"""Random Pi session files that reach the corners, and the sessiontool requests to ask about each.

Everything is drawn from one ``random.Random`` seeded by ``(seed, index)``, so a session is rebuilt
from its two numbers alone. The files mix well-formed trees (chains, rewinds, nested branch points,
summaries, compactions, context edits, labels set and cleared) with the awkward parts of real files:
duplicate ids, lines that are not objects, extra headers, torn and blank lines, a BOM, CRLF, odd
numbers and odd unicode, v1 and v2 headers.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from typing import Any

__all__ = ["GeneratedSession", "generate"]

BASE_MS = 1772359200000  # 2026-03-01T10:00:00Z
ODD_NUMBERS: tuple[Any, ...] = (
    0,
    -0.0,
    1.5,
    1e21,
    1e-7,
    1.5e-7,
    5e-324,
    2**53,
    2**53 + 1,
    12345678901234567890,
    -(2**63),
    1.7976931348623157e308,
    0.1,
    123.0,
    1e5,
    -1,
)
ODD_TEXTS = (
    "",
    " ",
    "hi",
    "ok 👍",
    "line\u2028sep\u2029para",
    "tabs\tand\nnewlines\r\n",
    "ünïcødé",
    "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 astral 🧪",
    'quote " and \\ backslash',
    "\x00nul\x1f",
    "<summary>not a tag</summary>",
    "x" * 400,
)
WORDS = ("alpha", "beta", "gamma", "read", "fix", "test", "the", "file", "parser", "🙂", "naïve", "ß")
TOOLS = ("read", "write", "edit", "bash", "grep", "ls")
PATHS = ("src/a.py", "docs/README.md", "ünï/ç.txt", "a b/c.md", "/abs/path.rs")


@dataclass(slots=True)
class GeneratedSession:
    """One generated file, the ids it holds and the requests to compare on it."""

    seed: int
    index: int
    data: bytes
    ids: list[str]
    duplicate_ids: bool
    requests: list[list[str]] = field(default_factory=list)


def _words(rng: random.Random, low: int = 1, high: int = 12) -> str:
    if rng.random() < 0.15:
        return rng.choice(ODD_TEXTS)
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(low, high)))


def _number(rng: random.Random) -> Any:
    return rng.choice(ODD_NUMBERS) if rng.random() < 0.5 else rng.randint(0, 5000)


def _details(rng: random.Random) -> Any:
    pick = rng.random()
    if pick < 0.3:
        return {
            "readFiles": rng.sample(PATHS, rng.randint(0, 2)),
            "modifiedFiles": rng.sample(PATHS, rng.randint(0, 2)),
        }
    if pick < 0.5:
        return {
            "n": _number(rng),
            "nested": {"list": [_number(rng), _words(rng, 1, 2)], "10": "k", "2": True},
        }
    if pick < 0.6:
        return rng.choice([None, "text", 7, [1, 2]])
    return {"k": _words(rng, 1, 3)}


def _blocks(rng: random.Random, role: str) -> Any:
    # Only shapes Pi itself survives: its estimators throw on a string content outside user messages.
    if rng.random() < 0.08:
        if role == "custom":
            return rng.choice(["", _words(rng), []])
        return rng.choice([None, []]) if role != "user" else rng.choice([None, "", _words(rng)])
    if role == "user" and rng.random() < 0.3:
        return _words(rng)
    blocks: list[Any] = []
    for _ in range(rng.randint(0, 3) if role != "user" else rng.randint(1, 2)):
        pick = rng.random()
        if role == "assistant" and pick < 0.2:
            block: dict[str, Any] = {"type": "thinking", "thinking": _words(rng)}
            if rng.random() < 0.6:
                block["thinkingSignature"] = "sig-" + "A" * rng.randint(1, 40)
            if rng.random() < 0.15:
                block["redacted"] = True
            blocks.append(block)
        elif role == "assistant" and pick < 0.5:
            tool = rng.choice(TOOLS)
            args: dict[str, Any] = {"path": rng.choice(PATHS)} if rng.random() < 0.85 else {"path": 5}
            if rng.random() < 0.4:
                args["n"] = _number(rng)
            if tool == "bash":
                args = {"command": _words(rng, 1, 4)}
            blocks.append(
                {"type": "toolCall", "id": f"call{rng.randint(0, 9)}", "name": tool, "arguments": args}
            )
        elif role in ("user", "toolResult", "custom") and pick < 0.35:
            blocks.append({"type": "image", "mimeType": "image/png", "data": "QUJD" * rng.randint(0, 40)})
        elif pick < 0.97:
            block = {"type": "text", "text": _words(rng, 1, 40)}
            if rng.random() < 0.1:
                block["textSignature"] = "ts"
            blocks.append(block)
        else:
            blocks.append({"type": "unknown", "x": 1})
    return blocks


def _usage(rng: random.Random) -> dict[str, Any] | None:
    if rng.random() < 0.15:
        return None
    usage: dict[str, Any] = {k: rng.randint(0, 3000) for k in ("input", "output", "cacheRead", "cacheWrite")}
    if rng.random() < 0.1:
        usage[rng.choice(list(usage))] = _number(rng)
    usage["totalTokens"] = (
        sum(v for v in usage.values() if isinstance(v, int)) if rng.random() < 0.8 else _number(rng)
    )
    if rng.random() < 0.5:
        usage["cost"] = {"input": 0.001, "output": 0.002, "total": 0.003}
    return usage


def _message(rng: random.Random, ms: int, version: int) -> dict[str, Any]:
    role = rng.choices(
        ["user", "assistant", "toolResult", "system", "custom", "bashExecution", "branchSummary"],
        weights=[30, 34, 20, 4, 4, 5, 1],
    )[0]
    message: dict[str, Any] = {"role": role}
    if role == "custom" and version == 2 and rng.random() < 0.7:
        message["role"] = "hookMessage"
    if role in ("user", "assistant", "toolResult"):
        message["content"] = _blocks(rng, role)
    if role == "assistant":
        message |= {
            "api": "anthropic-messages",
            "provider": rng.choice(["anthropic", "openai"]),
            "model": rng.choice(["m-small", "m-large"]),
            "stopReason": rng.choices(
                ["stop", "toolUse", "aborted", "error", "length"], weights=[6, 6, 1, 1, 1]
            )[0],
        }
        usage = _usage(rng)
        if usage is not None:
            message["usage"] = usage
        if message["stopReason"] == "error":
            message["errorMessage"] = _words(rng, 1, 5)
    elif role == "toolResult":
        message |= {
            "toolCallId": f"call{rng.randint(0, 9)}",
            "toolName": rng.choice(TOOLS),
            "isError": rng.random() < 0.1,
        }
    elif role == "system":
        message |= {
            "content": rng.choice(["", "Base prompt.", None]),
            "sections": {"p": _words(rng, 1, 3), "q": None},
        }
        if rng.random() < 0.4:
            message["toolsAdded"] = [{"name": "read", "description": "r"}]
    elif role == "custom":
        message |= {"customType": "ext", "content": _blocks(rng, "custom"), "display": rng.random() < 0.5}
        if rng.random() < 0.5:
            message["details"] = _details(rng)
    elif role == "bashExecution":
        message |= {
            "command": _words(rng, 1, 3),
            "output": _words(rng, 0, 20),
            "exitCode": rng.choice([0, 1, None]),
            "cancelled": rng.random() < 0.1,
            "truncated": rng.random() < 0.1,
            "excludeFromContext": rng.random() < 0.2,
        }
    elif role == "branchSummary":
        message |= {"summary": _words(rng), "fromId": "elsewhere"}
    message["timestamp"] = ms if rng.random() < 0.95 else _number(rng)
    return message


def _timestamp(rng: random.Random, ms: int) -> Any:
    from datetime import UTC, datetime

    iso = datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    pick = rng.random()
    if pick < 0.94:
        return iso
    return rng.choice([None, ms, "not a date", iso[:-1], iso[:10], iso.replace("Z", "+02:00"), ""])


def _entry(rng: random.Random, state: _State, parent: str | None) -> dict[str, Any]:
    kind = rng.choices(
        [
            "message",
            "compaction",
            "branch_summary",
            "label",
            "context_edit",
            "model_change",
            "thinking_level_change",
            "session_info",
            "custom_message",
            "custom",
            "usage",
        ],
        weights=[70, 4, 4, 5, 4, 2, 2, 1, 3, 2, 1],
    )[0]
    ms = state.tick(rng)
    entry: dict[str, Any] = {"type": kind, "timestamp": _timestamp(rng, ms)}
    known = state.ids or ["missing-id"]
    ancestors = state.path_of(parent)
    if kind == "message":
        entry["message"] = _message(rng, ms, state.version)
    elif kind == "compaction":
        first_kept = (
            rng.choice(ancestors) if ancestors and rng.random() < 0.85 else rng.choice([*known, "missing"])
        )
        entry |= {"summary": _words(rng), "firstKeptEntryId": first_kept, "tokensBefore": _number(rng)}
        if rng.random() < 0.4:
            entry["details"] = _details(rng)
        if rng.random() < 0.3:
            entry["systemMessage"] = {"role": "system", "content": "", "sections": {"p": "snapshot"}}
    elif kind == "branch_summary":
        entry |= {"summary": _words(rng), "fromId": rng.choice(known)}
        if rng.random() < 0.5:
            entry["details"] = _details(rng)
    elif kind == "label":
        target = (
            rng.choice(ancestors) if ancestors and rng.random() < 0.7 else rng.choice([*known, "missing"])
        )
        entry["targetId"] = target
        label = rng.choices(
            ["keep", "v2", _words(rng, 1, 2), "", None, "<absent>"], weights=[4, 2, 2, 1, 1, 1]
        )[0]
        if label != "<absent>":
            entry["label"] = label
    elif kind == "context_edit":
        entry["targetId"] = rng.choice(ancestors) if ancestors and rng.random() < 0.8 else rng.choice(known)
        # Replacements Pi accepts when it writes them (one without content makes its estimator throw).
        entry["replacement"] = rng.choice(
            [None, {"content": _words(rng)}, {"content": [{"type": "text", "text": _words(rng)}]}]
        )
    elif kind == "model_change":
        entry |= {"provider": rng.choice(["anthropic", "openai"]), "modelId": rng.choice(["m-x", "m-y"])}
    elif kind == "thinking_level_change":
        entry["thinkingLevel"] = rng.choice(["off", "low", "medium", "high"])
    elif kind == "session_info":
        entry["name"] = rng.choice(["  Fix CI ", "", "name\nwith newline", _words(rng, 1, 3)])
    elif kind == "custom_message":
        entry |= {"customType": "ext", "content": _blocks(rng, "custom"), "display": rng.random() < 0.5}
        if rng.random() < 0.6:
            entry["details"] = _details(rng)
    elif kind == "custom":
        entry |= {"customType": "state", "data": _details(rng)}
    else:
        entry |= {"kind": "compaction", "provider": "anthropic", "model": "m-x", "usage": _usage(rng) or {}}
    return entry


@dataclass(slots=True)
class _State:
    version: int
    ms: int = BASE_MS
    ids: list[str] = field(default_factory=list)
    parents: dict[str, str | None] = field(default_factory=dict)

    def tick(self, rng: random.Random) -> int:
        step = rng.choice([0, 1, 7, 500, 1000, 60_000]) if rng.random() < 0.3 else rng.randint(1, 3000)
        if rng.random() < 0.05:
            step = -rng.randint(1, 120_000)  # clocks go backwards now and then
        self.ms += step
        return self.ms

    def path_of(self, leaf: str | None) -> list[str]:
        path: list[str] = []
        seen: set[str] = set()
        while leaf is not None and leaf in self.parents and leaf not in seen:
            seen.add(leaf)
            path.append(leaf)
            leaf = self.parents[leaf]
        return path


# Lines Pi skips or keeps oddly, by kind, so a campaign can leave out a kind it is not checking.
GARBAGE_LINES: dict[str, tuple[str, ...]] = {
    "blank": ("", "   ", "\t"),
    "malformed": ("{'single': 'quotes'}", "NaN", '{"a":1}garbage', "{", "nul"),
    "torn": ('{"type":"message","id":"torn","parentId":null,"message":{"role":"us',),
    "falsy": ("null", "false", "0", '""'),
    "non_object": ("42", '"text"', "[1,2]", "true", "{}", '{"type":"message","parentId":null}'),
    "second_header": ('{"type":"session","version":3,"id":"second-header","cwd":"/elsewhere"}',),
}
ALL_CORNERS = frozenset({*GARBAGE_LINES, "duplicates", "bom"})
DEFAULT_CORNERS = ALL_CORNERS


def _dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def generate(
    seed: int, index: int, *, max_entries: int = 60, corners: frozenset[str] = ALL_CORNERS
) -> GeneratedSession:
    """Return session ``index`` of campaign ``seed`` with the requests to compare on it."""
    rng = random.Random(f"{seed}:{index}")
    garbage = [line for kind in sorted(corners & GARBAGE_LINES.keys()) for line in GARBAGE_LINES[kind]]
    version = rng.choices([3, 2, 1], weights=[85, 8, 7])[0]
    size = rng.choice([0, 1, 2, 3]) if rng.random() < 0.1 else int(rng.triangular(2, max_entries, 8))
    if rng.random() < 0.01:
        size = rng.randint(500, 2000)
    duplicates = rng.random() < 0.04 and "duplicates" in corners
    header: dict[str, Any] = {
        "type": "session",
        "id": f"sess-{seed}-{index}",
        "timestamp": "2026-03-01T10:00:00.000Z",
        "cwd": "/home/demo",
    }
    if version > 1 or rng.random() < 0.5:
        header["version"] = version
    if rng.random() < 0.05:
        header["parentSession"] = rng.choice([None, "/tmp/parent.jsonl"])
    if version == 1:
        # Pi's v1 migration sets ids on whatever it parsed: arrays take them, numbers throw.
        garbage = [line for line in garbage if line not in GARBAGE_LINES["non_object"]]
    state = _State(version)
    lines: list[str] = [_dump(header)]
    leaf: str | None = None
    for n in range(size):
        if rng.random() < 0.04 and garbage:
            lines.append(rng.choice(garbage))
        entry_id = f"e{n}" if rng.random() < 0.8 else f"{rng.getrandbits(32):08x}"
        if duplicates and state.ids and rng.random() < 0.1:
            entry_id = rng.choice(state.ids)
        shape = rng.random()
        if not state.ids or shape < 0.03:
            parent: str | None = None
        elif shape < 0.05:
            parent = f"gone{n}"
        elif shape < 0.20:
            parent = rng.choice(state.ids)  # rewind: a new branch under any earlier entry
        else:
            parent = leaf
        entry = _entry(rng, state, parent)
        if version > 1:
            entry = {"type": entry.pop("type"), "id": entry_id, "parentId": parent, **entry}
        elif entry["type"] == "compaction":
            entry.pop("firstKeptEntryId")
            entry["firstKeptEntryIndex"] = rng.randint(0, len(lines))
        lines.append(_dump(entry))
        if version > 1:
            state.parents.setdefault(entry_id, parent)
            state.ids.append(entry_id)
            leaf = entry_id
        else:
            state.ids.append(f"v1-{n}")
    eol = "\r\n" if rng.random() < 0.05 else "\n"
    text = eol.join(lines) + (eol if rng.random() < 0.9 else "")
    if rng.random() < 0.02 and "bom" in corners:
        text = "\ufeff" + text
    session = GeneratedSession(seed, index, text.encode("utf-8"), list(dict.fromkeys(state.ids)), duplicates)
    session.requests = _requests(rng, session, version)
    return session


def _requests(rng: random.Random, session: GeneratedSession, version: int) -> list[list[str]]:
    ids = session.ids if version > 1 else []
    pick = (lambda: rng.choice(ids)) if ids else (lambda: "missing")
    leaves = [pick() for _ in range(min(3, len(ids)))]
    requests: list[list[str]] = [["project"], *(["project", leaf] for leaf in leaves)]
    if rng.random() < 0.2:
        requests.append(["project", rng.choice(["null", "nonexistent"])])
    for _ in range(2):
        keep = str(rng.choice([1, 5, 20, 50, 100, 300, 1000, 5000, 100000]))
        cut = ["cut", keep]
        if ids and rng.random() < 0.5:
            cut.append(f"--leaf={pick()}")
        if rng.random() < 0.2:
            cut += [f"--reserve={rng.randint(0, 20000)}", f"--window={rng.randint(100, 50000)}"]
        requests.append(cut)
    if ids:
        requests.append(["fork", pick()])
        budget = [str(rng.choice([0, 5, 50, 500, 5000]))] if rng.random() < 0.5 else []
        requests.append(["branch-summary", pick() if rng.random() < 0.9 else "null", pick(), *budget])
        bws = ["branch-with-summary", pick() if rng.random() < 0.9 else "null", _words(rng, 1, 6)]
        if rng.random() < 0.3:
            bws.append(f"--leaf={pick()}")
        requests.append(bws)
        replacement = rng.choice(
            ["null", '{"content":"shorter"}', '{"content":[{"type":"text","text":"e"}]}']
        )
        edit = ["context-edit", pick(), replacement]
        if rng.random() < 0.3:
            edit.append(f"--leaf={pick()}")
        requests.append(edit)
    return requests
