"""The synthetic sessions are valid Pi v3 files with the shape the benchmark relies on."""

from __future__ import annotations

import io
from collections import Counter
from pathlib import Path

import orjson
import pytest

from bench import generate


@pytest.fixture(scope="module")
def session_1k(tmp_path_factory: pytest.TempPathFactory) -> generate.SessionFile:
    return generate.ensure_session(generate.standard_spec("1k"), tmp_path_factory.mktemp("bench-data"))


def _lines(path: Path) -> list[dict]:
    raw = path.read_bytes()
    assert raw.endswith(b"\n")
    return [orjson.loads(line) for line in raw.splitlines()]


def _path_to(parents: dict[str, str | None], entry_id: str) -> list[str]:
    out: list[str] = []
    current: str | None = entry_id
    while current is not None:
        out.append(current)
        current = parents[current]
    return out


def test_1k_session_is_valid_v3_jsonl(session_1k: generate.SessionFile) -> None:
    header, *entries = _lines(session_1k.path)
    assert header["type"] == "session" and header["version"] == 3 and isinstance(header["id"], str)
    assert 1_000 <= len(entries) < 1_100
    ids = [e["id"] for e in entries]
    assert len(set(ids)) == len(ids)
    seen: set[str] = set()
    for entry in entries:
        assert list(entry)[:4] == ["type", "id", "parentId", "timestamp"]
        # parents always come earlier in the file, so the tree has no cycles and no orphans
        assert entry["parentId"] is None or entry["parentId"] in seen
        seen.add(entry["id"])
    assert entries[0]["parentId"] is None and sum(e["parentId"] is None for e in entries) == 1
    assert session_1k.meta["leaf_id"] == ids[-1]


def test_entries_cover_the_pi_shapes(session_1k: generate.SessionFile) -> None:
    _, *entries = _lines(session_1k.path)
    types = Counter(e["type"] for e in entries)
    assert {"message", "model_change", "thinking_level_change", "compaction", "session_info"} <= set(types)
    messages = [e["message"] for e in entries if e["type"] == "message"]
    roles = Counter(m["role"] for m in messages)
    assert roles["user"] and roles["assistant"] and roles["toolResult"]
    for message in messages:
        if message["role"] == "assistant":
            assert {"usage", "provider", "model", "stopReason", "api", "timestamp"} <= set(message)
    tools = {
        b["name"]
        for m in messages
        if m["role"] == "assistant"
        for b in m["content"]
        if b["type"] == "toolCall"
    }
    assert tools == {"read", "edit", "write", "bash"}
    # results answer calls of the assistant message they follow
    call_ids = {
        b["id"] for m in messages if m["role"] == "assistant" for b in m["content"] if b["type"] == "toolCall"
    }
    assert {m["toolCallId"] for m in messages if m["role"] == "toolResult"} == call_ids


def test_session_has_rewinds(session_1k: generate.SessionFile) -> None:
    _, *entries = _lines(session_1k.path)
    children = Counter(e["parentId"] for e in entries)
    assert max(children.values()) >= 2
    assert session_1k.meta["leaf_depth"] < len(entries) - 1  # abandoned branches are off the leaf's path


def test_compactions_keep_an_entry_on_their_own_path(session_1k: generate.SessionFile) -> None:
    _, *entries = _lines(session_1k.path)
    parents = {e["id"]: e["parentId"] for e in entries}
    compactions = [e for e in entries if e["type"] == "compaction"]
    assert compactions
    for compaction in compactions:
        assert compaction["firstKeptEntryId"] in _path_to(parents, compaction["parentId"])
        assert compaction["summary"] and compaction["tokensBefore"] > 0
        assert set(compaction["details"]) == {"readFiles", "modifiedFiles"}


def test_same_seed_same_bytes_other_seed_other_bytes() -> None:
    def render(seed: int) -> bytes:
        out = io.BytesIO()
        generate.write_session(generate.SessionSpec(entries=300, seed=seed), out)
        return out.getvalue()

    assert render(1) == render(1)
    assert render(1) != render(2)


def test_equal_context_pair_ends_with_the_same_leaf_context(tmp_path: Path) -> None:
    short, long = generate.equal_context_specs(short=300, long=1_500, context_entries=120)
    tails = []
    for spec in (short, long):
        session = generate.ensure_session(spec, tmp_path)
        _, *entries = _lines(session.path)
        by_id = {e["id"]: e for e in entries}
        path = _path_to({e["id"]: e["parentId"] for e in entries}, entries[-1]["id"])[::-1]
        last = max(i for i, eid in enumerate(path) if by_id[eid]["type"] == "compaction")
        kept = path.index(by_id[path[last]]["firstKeptEntryId"])
        context = [by_id[eid] for eid in path[kept:]]
        tails.append([(e["type"], e.get("message", {}).get("content")) for e in context])
    assert tails[0] == tails[1]
    assert 110 <= len(tails[0]) <= 200
