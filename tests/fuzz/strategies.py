"""Hypothesis strategies for Pi session files: random trees of valid entries mixed with broken lines."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

__all__ = ["SessionFile", "garbage_lines", "json_values", "session_files"]

TIMESTAMP = "2026-03-01T10:00:{:02d}.{:03d}Z"
ROLES = ("user", "assistant", "toolResult", "system", "custom", "bashExecution")
KINDS = (
    "message",
    "message",
    "message",
    "compaction",
    "context_edit",
    "branch_summary",
    "label",
    "model_change",
    "thinking_level_change",
    "session_info",
    "custom_message",
    "custom",
)


@dataclass(frozen=True, slots=True)
class SessionFile:
    """A generated file: its bytes, the ids it uses and whether it may hold a parent cycle."""

    data: bytes
    ids: tuple[str, ...]
    version: int
    may_cycle: bool

    @property
    def text(self) -> str:
        return self.data.decode("utf-8", errors="replace")


def _dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


texts = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=40)
small_texts = st.sampled_from(["", " ", "hi", "ok 👍", "tabs\tand\nnewlines", "ünïcødé", "x" * 300])


def json_values(*, max_leaves: int = 20) -> st.SearchStrategy[Any]:
    """Return JSON values with the awkward corners: big ints, tiny floats, -0.0, integer-like keys."""
    scalars = st.one_of(
        st.none(),
        st.booleans(),
        st.integers(min_value=-(2**70), max_value=2**70),
        st.floats(allow_nan=False, allow_infinity=False),
        st.sampled_from([1e21, 1e-7, -0.0, 0.1, 5e-324, 1.7976931348623157e308, 2.0**53 + 2, 123.0]),
        st.text(max_size=12),
        st.sampled_from(["\ud800", "a\udfffb", "\u2028", "\x00", '"\\', "😀"]),
    )
    keys = st.one_of(st.text(max_size=6), st.sampled_from(["0", "1", "10", "01", "-1", "4294967295", "2"]))
    return st.recursive(
        scalars,
        lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(keys, inner, max_size=4)),
        max_leaves=max_leaves,
    )


@st.composite
def _content(draw: st.DrawFn, role: str) -> Any:
    if draw(st.integers(0, 5)) == 0:
        return draw(st.sampled_from([None, "plain string", [], 7]))
    blocks: list[dict[str, Any]] = []
    for _ in range(draw(st.integers(0, 3))):
        pick = draw(st.integers(0, 4))
        if pick == 0 and role == "assistant":
            blocks.append({"type": "thinking", "thinking": draw(small_texts)})
        elif pick == 1 and role == "assistant":
            blocks.append(
                {
                    "type": "toolCall",
                    "id": f"c{draw(st.integers(0, 9))}",
                    "name": "read",
                    "arguments": {"path": draw(small_texts), "n": draw(st.sampled_from([1.0, 1e5, 1e21]))},
                }
            )
        elif pick == 2 and role in ("user", "toolResult"):
            blocks.append(
                {"type": "image", "mimeType": "image/png", "data": "QUJD" * draw(st.integers(0, 3))}
            )
        else:
            blocks.append({"type": "text", "text": draw(small_texts)})
    return blocks


@st.composite
def _usage(draw: st.DrawFn) -> dict[str, Any] | None:
    pick = draw(st.integers(0, 4))
    if pick == 0:
        return None
    counters = {k: draw(st.integers(0, 5000)) for k in ("input", "output", "cacheRead", "cacheWrite")}
    if pick == 1:
        counters.pop(draw(st.sampled_from(sorted(counters))))
    total = draw(st.sampled_from([0, sum(counters.values()), 12345]))
    if pick != 2:
        counters["totalTokens"] = total
    return counters


@st.composite
def _message(draw: st.DrawFn, second: int) -> dict[str, Any]:
    role = draw(st.sampled_from(ROLES))
    message: dict[str, Any] = {"role": role}
    if role == "bashExecution":
        message |= {
            "command": "ls",
            "output": draw(small_texts),
            "exitCode": 0,
            "cancelled": False,
            "truncated": False,
            "excludeFromContext": draw(st.booleans()),
        }
    elif role == "custom":
        message |= {"customType": "ext", "content": draw(_content("custom")), "display": draw(st.booleans())}
    elif role == "system":
        message |= {"content": draw(st.sampled_from(["", "Base prompt.", None])), "sections": {"p": "x"}}
    else:
        content = draw(_content(role))
        if content is not None or draw(st.booleans()):
            message["content"] = content
    if role == "assistant":
        message["provider"] = draw(st.sampled_from(["anthropic", "openai"]))
        message["model"] = draw(st.sampled_from(["m-small", "m-large"]))
        message["stopReason"] = draw(st.sampled_from(["stop", "toolUse", "aborted", "error", "length"]))
        usage = draw(_usage())
        if usage is not None:
            message["usage"] = usage
    if role == "toolResult":
        message |= {"toolCallId": f"c{draw(st.integers(0, 9))}", "toolName": "read", "isError": False}
    message["timestamp"] = 1772359200000 + second
    return message


@st.composite
def _entry(
    draw: st.DrawFn, index: int, entry_id: str, parent: str | None, known: list[str]
) -> dict[str, Any]:
    kind = draw(st.sampled_from(KINDS))
    second = index % 60
    entry: dict[str, Any] = {
        "type": kind,
        "id": entry_id,
        "parentId": parent,
        "timestamp": TIMESTAMP.format(second, draw(st.integers(0, 999))),
    }
    target = st.sampled_from([*known, "missing-id"]) if known else st.just("missing-id")
    if kind == "message":
        entry["message"] = draw(_message(index))
    elif kind == "compaction":
        entry |= {
            "summary": draw(small_texts),
            "firstKeptEntryId": draw(st.one_of(target, st.none())),
            "tokensBefore": draw(st.integers(0, 100000)),
        }
        if draw(st.booleans()):
            entry["systemMessage"] = {"role": "system", "content": "", "sections": {"p": "snap"}}
    elif kind == "context_edit":
        replacement = draw(
            st.sampled_from(
                [
                    None,
                    {"content": "edited"},
                    {"content": [{"type": "text", "text": "e"}]},
                    {"content": None},
                    {},
                ]
            )
        )
        entry |= {"targetId": draw(target), "replacement": replacement}
    elif kind == "branch_summary":
        entry |= {"summary": draw(st.sampled_from(["", "We tried X."])), "fromId": draw(target)}
    elif kind == "label":
        entry |= {"targetId": draw(target), "label": draw(st.sampled_from(["", "keep", "v2", None]))}
    elif kind == "model_change":
        entry |= {"provider": draw(st.sampled_from(["anthropic", "openai"])), "modelId": "m-x"}
    elif kind == "thinking_level_change":
        entry["thinkingLevel"] = draw(st.sampled_from(["off", "low", "high"]))
    elif kind == "session_info":
        entry["name"] = draw(st.sampled_from(["  Fix CI ", "", "name\nwith newline"]))
    elif kind == "custom_message":
        entry |= {"customType": "ext", "content": draw(_content("custom")), "display": draw(st.booleans())}
    else:
        entry |= {"customType": "state", "data": {"k": draw(st.integers(0, 9))}}
    return entry


BROKEN_LINES = [
    "",
    "   ",
    "\t",
    "\ufeff",
    "\u00a0",
    "{",
    '{"type":"message","id":"tr',
    "[1,2,3]",
    "42",
    '"just a string"',
    "0",
    "false",
    "null",
    '""',
    "NaN",
    "Infinity",
    "{'single': 'quotes'}",
    '{"type":"session","version":3,"id":"stray-header"}',
    '{"type":"message","message":{"role":"user","content":"no id"}}',
    '{"type":"message","id":7,"parentId":null}',
    '{"type":"label","id":"lbl-num","parentId":null,"targetId":5}',
    "[" * 3000 + "]" * 3000,
    '{"a":1}garbage',
]


@st.composite
def garbage_lines(draw: st.DrawFn) -> bytes:
    """Return one line (without newline) that is not a usable entry."""
    pick = draw(st.integers(0, 5))
    if pick == 0:
        return draw(st.binary(max_size=60)).replace(b"\n", b" ")
    if pick == 1:
        return draw(st.text(max_size=60)).replace("\n", " ").encode("utf-8", errors="surrogatepass")
    if pick == 2:
        return draw(st.sampled_from([b"\xff\xfe{}", b'{"id":"\xc3\x28"}', b"\xe2\x82", b"\x00\x00"]))
    return draw(st.sampled_from(BROKEN_LINES)).encode("utf-8")


HUGE_LINE = ('{"type":"custom","id":"huge","parentId":null,"data":"' + "z" * (1024 * 1024) + '"}').encode()


@st.composite
def session_files(
    draw: st.DrawFn,
    *,
    max_entries: int = 25,
    version: int | None = 3,
    cycles: bool = True,
    garbage: bool = True,
    huge: bool = False,
) -> SessionFile:
    """Return a session file whose entries form a random forest (chains, rewinds, orphans, duplicates)."""
    chosen = version if version is not None else draw(st.sampled_from([1, 2, 3]))
    header: dict[str, Any] = {
        "type": "session",
        "id": f"sess-{draw(st.uuids())}",
        "timestamp": "2026-03-01T10:00:00.000Z",
        "cwd": "/home/demo",
    }
    if chosen != 1 or draw(st.booleans()):
        header["version"] = chosen
    lines: list[bytes] = [_dump(header).encode()]
    ids: list[str] = []
    may_cycle = False
    for index in range(draw(st.integers(0, max_entries))):
        if garbage and draw(st.integers(0, 6)) == 0:
            lines.append(draw(garbage_lines()))
        shape = draw(st.integers(0, 9))
        entry_id = f"e{index}"
        if cycles and ids and shape == 0:
            entry_id = draw(st.sampled_from(ids))  # a duplicate id: later wins, cycles become possible
            may_cycle = True
        if not ids or shape == 1:
            parent: str | None = None
        elif shape == 2:
            parent = f"gone{index}"  # an orphan: its parent is not in the file
        elif shape == 3:
            parent = draw(st.sampled_from(ids))  # a rewind: a new branch off an older entry
        elif cycles and shape == 4:
            parent = f"e{index + draw(st.integers(0, 3))}"  # self-parent or a forward reference
            may_cycle = True
        else:
            parent = ids[-1]
        entry = draw(_entry(index, entry_id, parent, ids))
        lines.append(_dump(entry).encode())
        ids.append(entry_id)
    if huge:
        lines.insert(draw(st.integers(1, len(lines))), HUGE_LINE)
    eol = b"\r\n" if draw(st.integers(0, 9)) == 0 else b"\n"
    data = eol.join(lines)
    if draw(st.integers(0, 4)):
        data += eol
    return SessionFile(data, tuple(dict.fromkeys(ids)), chosen, may_cycle)
