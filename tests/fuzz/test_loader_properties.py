"""Property tests of the JSONL loader, the tree and the projection: bad input never crashes them."""

from __future__ import annotations

import io
import itertools
import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pitree.entries import entry_from_value
from pitree.jsjson import INVALID, js_number, js_stringify, parse_json, stringify_walk
from pitree.jsonl import load_text, objects_only, scan_lines
from pitree.projection import project
from pitree.session import load_session
from pitree.tokens import estimate_context_tokens, estimate_projected_context_tokens
from pitree.tree import SessionTree

from .strategies import SessionFile, garbage_lines, json_values, session_files

FUZZ = settings(max_examples=60, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])


def _check_tree(tree: SessionTree) -> None:
    """Assert every path is a root→leaf chain along effective parents that honours the file's links."""
    facts, _ = tree.path_facts()
    broken = set(tree.broken_cycles)
    for entry_id, pos in tree.by_id.items():
        positions = tree.path_positions(entry_id)
        assert positions[-1] == pos
        assert tree.parent[positions[0]] == -1
        assert len(set(positions)) == len(positions)
        for up, down in itertools.pairwise(positions):
            assert tree.parent[down] == up
            if down not in broken:
                assert tree.by_id[tree.entries[down].parent_id] == up
        head = tree.entries[positions[0]]
        assert positions[0] in broken or head.parent_id is None or head.parent_id not in tree.by_id
        assert facts[pos] is not None and facts[pos].depth == len(positions) - 1


def _check_projection(tree: SessionTree, leaf_id: str) -> None:
    path = tree.path(leaf_id)
    projection = project(path)
    path_ids = [e.seq for e in path]
    context = [pe.entry.seq for pe in projection.entries]
    assert set(context) <= set(path_ids)
    assert len(projection.messages) == sum(len(pe.messages) for pe in projection.entries)
    assert set(projection.sources()) <= {pe.entry.id for pe in projection.entries}
    for estimate in (
        estimate_context_tokens(projection.messages),
        estimate_projected_context_tokens(projection, path),
    ):
        assert not estimate.tokens < 0  # NaN is allowed: Pi's sums go NaN on a missing usage counter


@FUZZ
@given(st.text(max_size=300))
def test_load_text_accepts_any_text(text: str) -> None:
    loaded = load_text(text)
    assert loaded.valid == (loaded.error is None)
    assert all(s.line_no >= 1 for s in loaded.skipped.lines)


@FUZZ
@given(session_files(version=None), st.lists(garbage_lines(), max_size=4))
def test_any_session_file_loads_walks_and_projects(file: SessionFile, extra: list[bytes]) -> None:
    data = b"\n".join([file.data, *extra])
    session = load_session(data.decode("utf-8", errors="replace"))
    assert session.file.valid, session.file.error
    tree = session.tree
    _check_tree(tree)
    leaves = [tree.last_leaf_id(), *list(tree.by_id)[:8]]
    for leaf in leaves:
        if leaf is not None:
            _check_projection(tree, leaf)
    if not file.may_cycle:
        assert tree.broken_cycles == []


@settings(
    max_examples=10,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(session_files(max_entries=6, huge=True))
def test_megabyte_lines_load_and_stream_alike(file: SessionFile) -> None:
    loaded = load_text(file.text)
    assert loaded.valid
    assert "huge" in {entry_from_value(0, p.value).id for p in loaded.entries}
    _assert_scan_agrees(file.data)


def _load_summary(data: bytes) -> dict[str, Any]:
    # An import stores only objects: the full load, less the lines that are not, is what a scan keeps.
    loaded = objects_only(load_text(data.decode("utf-8", errors="replace")))
    entries = [entry_from_value(i, p.value) for i, p in enumerate(loaded.entries)]
    return {
        "valid": loaded.valid,
        "header": loaded.header,
        "parsed": loaded.parsed_line_count if loaded.valid else None,
        "entries": [(e.id, e.parent_id, e.type) for e in entries],
        "lines": [p.line_no for p in loaded.entries],
        "skipped": [(s.line_no, s.reason) for s in loaded.skipped.lines],
        "missing_newline": loaded.missing_final_newline,
    }


def _scan_summary(data: bytes) -> dict[str, Any]:
    scanned = scan_lines(io.BytesIO(data))
    loaded = scanned.loaded
    return {
        "valid": loaded.valid,
        "header": loaded.header,
        "parsed": loaded.parsed_line_count if loaded.valid else None,
        "entries": [(e.id, e.parent_id, e.type) for e in scanned.entries],
        "lines": list(scanned.line_numbers),
        "skipped": [(s.line_no, s.reason) for s in loaded.skipped.lines],
        "missing_newline": loaded.missing_final_newline,
    }


def _assert_scan_agrees(data: bytes) -> None:
    ours, streamed = _load_summary(data), _scan_summary(data)
    if ours["valid"]:
        assert streamed == ours
    else:
        assert not streamed["valid"]


@FUZZ
@given(session_files(version=3), st.lists(garbage_lines(), max_size=4), st.booleans())
def test_streaming_scan_agrees_with_full_load(file: SessionFile, extra: list[bytes], bom: bool) -> None:
    data = b"\n".join([file.data, *extra])
    _assert_scan_agrees(b"\xef\xbb\xbf" + data if bom else data)


@FUZZ
@given(st.lists(garbage_lines(), max_size=6), st.binary(max_size=200))
def test_streaming_scan_agrees_on_garbage(lines: list[bytes], tail: bytes) -> None:
    _assert_scan_agrees(b"\n".join([*lines, tail]))


# -- deep trees, built directly (hypothesis would never reach these sizes) ------------------------------

DEEP = 50_000


def _chain(n: int, *, cycle: bool = False) -> str:
    lines = ['{"type":"session","version":3,"id":"deep","cwd":"/"}']
    for i in range(n):
        parent = "null" if i == 0 else f'"e{i - 1}"'
        lines.append(
            f'{{"type":"message","id":"e{i}","parentId":{parent},'
            f'"message":{{"role":"{"user" if i % 2 == 0 else "assistant"}","content":"m{i}"}}}}'
        )
    if cycle:
        # A duplicate of the root hanging under the deepest entry closes one 50k-long cycle.
        lines.append(f'{{"type":"message","id":"e0","parentId":"e{n - 1}","message":{{"role":"user"}}}}')
    return "\n".join(lines) + "\n"


def test_fifty_thousand_deep_chain_walks_without_recursion() -> None:
    session = load_session(_chain(DEEP))
    tree = session.tree
    path = tree.path(f"e{DEEP - 1}")
    assert [e.id for e in path[:2]] == ["e0", "e1"] and len(path) == DEEP
    facts, segments = tree.path_facts()
    assert facts[DEEP - 1].depth == DEEP - 1 and len(segments) == 1
    projection = project(path)
    assert len(projection.messages) == DEEP
    assert estimate_context_tokens(projection.messages).tokens > 0
    scanned = scan_lines(io.BytesIO(_chain(DEEP).encode()))
    assert len(scanned.entries) == DEEP


def test_fifty_thousand_long_cycle_is_cut_and_every_walk_ends() -> None:
    tree = load_session(_chain(DEEP, cycle=True)).tree
    # The duplicate "e0" wins the id, so e1's parent is the last line, itself under e49999: one long loop.
    assert len(tree.broken_cycles) == 1
    path = tree.path(f"e{DEEP - 1}")
    assert len(path) == len({e.seq for e in path})
    assert tree.parent[path[0].seq] == -1
    tree.path_facts()
    project(path)


def test_deeply_nested_json_line_is_skipped_not_fatal() -> None:
    nested = "[" * 200_000 + "]" * 200_000
    text = (
        '{"type":"session","version":3,"id":"s"}\n'
        + nested
        + '\n{"type":"custom","id":"a","parentId":null}\n'
    )
    loaded = load_text(text)
    assert loaded.valid and [p.value["id"] for p in loaded.entries if isinstance(p.value, dict)] == ["a"]
    deep_value: Any = "leaf"
    for _ in range(100_000):
        deep_value = {"k": [deep_value]}
    assert js_stringify(deep_value).startswith('{"k":[{"k":[')


# -- JSON spelled as JavaScript spells it ---------------------------------------------------------------


def _as_js(value: Any) -> Any:
    """Return ``value`` as a JavaScript round trip sees it (numbers are doubles: -0 and big ints change)."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        return value if abs(value) <= 2**53 else float(value)
    if isinstance(value, float):
        return 0 if value == 0 else value
    if isinstance(value, list):
        return [_as_js(v) for v in value]
    return {k: _as_js(v) for k, v in value.items()}


@FUZZ
@given(json_values())
def test_js_stringify_round_trips(value: Any) -> None:
    text = js_stringify(value)
    assert "\n" not in text  # one value per line, whatever it holds
    text.encode("utf-8")  # lone surrogates are escaped, so the line is valid UTF-8
    back = parse_json(text)
    assert back is not INVALID
    assert back == _as_js(value)
    assert js_stringify(back) == text
    json.loads(text)  # strict JSON, whatever the value holds


@FUZZ
@given(json_values(max_leaves=40))
def test_the_quick_spelling_equals_the_walk(value: Any) -> None:
    # Plain payloads are spelled by Python's encoder; whatever it would spell otherwise takes the walk.
    assert js_stringify(value) == stringify_walk(value)


def test_the_quick_spelling_leaves_what_python_spells_otherwise_to_the_walk() -> None:
    awkward = [{"2": 1, "a": 1.0}, {"cost": 1e-7}, {"n": 2**60}, {"big": 1e16}, {"s": "a\udfffb"}, [-0.0]]
    assert [js_stringify(v) for v in awkward] == [
        '{"2":1,"a":1}',
        '{"cost":1e-7}',
        '{"n":1152921504606847000}',
        '{"big":10000000000000000}',
        '{"s":"a\\udfffb"}',
        "[0]",
    ]
    assert (
        js_stringify({"cost": {"input": 0.0003, "total": 12.5}}) == '{"cost":{"input":0.0003,"total":12.5}}'
    )


def test_numbers_and_keys_are_spelled_as_javascript_does() -> None:
    assert [js_number(v) for v in (1e21, 1e20, 1e-7, 1e-6, -0.0, 1.0, 2**53 + 1, 2**64, 0.1 + 0.2)] == [
        "1e+21",
        "100000000000000000000",
        "1e-7",
        "0.000001",
        "0",
        "1",
        "9007199254740992",
        "18446744073709552000",
        "0.30000000000000004",
    ]
    assert js_stringify({"b": 1, "10": 2, "2": 3, "01": 4, "-1": 5}) == '{"2":3,"10":2,"b":1,"01":4,"-1":5}'
    assert js_stringify("\ud800x\u2028") == '"\\ud800x\u2028"'
    assert parse_json("123456789012345678901") == 1.2345678901234568e20
    assert parse_json("NaN") is INVALID and parse_json("[1,]") is INVALID
