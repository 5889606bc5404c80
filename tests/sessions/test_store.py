"""The session store: lossless import/export, idempotent re-import, safe appends, cheap projections."""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from pitree.session import load_session
from sessions_app import queries, services
from sessions_app.models import ChatSession, Entry
from tests.conformance.compare import conformance_dir
from tests.factories import assert_one_gapless_chain, run_writers

pytestmark = pytest.mark.django_db

HEADER = '{"type":"session","version":3,"id":"%s","timestamp":"2026-03-01T10:00:00.000Z","cwd":"/home/demo"}'


def _line(entry_id: str, parent: str | None, text: str, role: str = "user", **extra: Any) -> str:
    message: dict[str, Any] = {"role": role, "content": [{"type": "text", "text": text}], "timestamp": 1}
    if role == "assistant":
        message.update(
            provider="anthropic",
            model="claude-x",
            stopReason="stop",
            usage={"input": 10, "output": 5, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 15},
        )
    entry = {
        "type": "message",
        "id": entry_id,
        "parentId": parent,
        "timestamp": "2026-03-01T10:00:01.000Z",
        "message": message,
        **extra,
    }
    return json.dumps(entry, separators=(",", ":"))


def _session_file(session_id: str, lines: list[str]) -> bytes:
    return ("\n".join([HEADER % session_id, *lines]) + "\n").encode()


def _export(session: ChatSession) -> bytes:
    return b"".join(services.export_jsonl(session))


def _valid_case_files() -> list[Path]:
    cases = conformance_dir()
    if cases is None:
        return []
    return [p for p in sorted((cases / "sessions").glob("*.jsonl")) if load_session(p.read_text()).file.valid]


@pytest.mark.parametrize("path", _valid_case_files(), ids=lambda p: p.stem)
def test_export_keeps_every_valid_line_byte_for_byte(path: Path, user: Callable[..., Any]) -> None:
    data = path.read_bytes()
    result = services.import_jsonl(actor=user(), data=data, filename=path.name)
    exported = _export(result.session)
    if not result.migrated:
        # Independent of our loader: every line that JSON-parses to a truthy value, verbatim, in order.
        kept = []
        for line in data.decode().split("\n"):
            try:
                value = json.loads(line)
            except ValueError:
                continue
            if value not in (None, 0, False, ""):
                kept.append(line)
        assert exported == ("\n".join(kept) + "\n").encode()
    # Import → export → import is lossless.
    again = services.import_jsonl(actor=user(), data=exported, filename=path.name)
    assert _export(again.session) == exported
    assert again.session.leaf_entry_id == result.session.leaf_entry_id


def test_unknown_types_and_fields_round_trip(user: Callable[..., Any]) -> None:
    odd = '{"type":"future_thing","id":"f1","parentId":"u1","timestamp":"x","payload":{"z":1.50,"a":[1e5]}}'
    data = _session_file("odd", [_line("u1", None, "hi", extraField={"kept": True}), odd])
    session = services.import_jsonl(actor=user(), data=data).session
    assert _export(session) == data
    assert session.leaf_entry_id == "f1"


def test_reimport_is_idempotent_and_appends_only_new_lines(user: Callable[..., Any]) -> None:
    owner = user()
    lines = [_line("u1", None, "one"), _line("a1", "u1", "two", role="assistant")]
    first = services.import_jsonl(actor=owner, data=_session_file("same", lines))
    second = services.import_jsonl(actor=owner, data=_session_file("same", lines))
    assert (first.created, second.created, second.appended) == (True, False, 0)
    assert ChatSession.objects.filter(owner=owner).count() == 1
    grown = services.import_jsonl(
        actor=owner, data=_session_file("same", [*lines, _line("u2", "a1", "three")])
    )
    assert (grown.created, grown.appended) == (False, 1)
    session = ChatSession.objects.get(owner=owner)
    assert (session.entry_count, session.leaf_entry_id) == (3, "u2")
    assert list(session.entries.order_by("seq").values_list("entry_id", flat=True)) == ["u1", "a1", "u2"]


def test_reimport_of_a_different_file_with_the_same_id_is_refused(user: Callable[..., Any]) -> None:
    owner = user()
    services.import_jsonl(actor=owner, data=_session_file("clash", [_line("u1", None, "one")]))
    with pytest.raises(services.InvalidSessionFile, match="already stored"):
        services.import_jsonl(actor=owner, data=_session_file("clash", [_line("u1", None, "changed")]))
    assert Entry.objects.filter(session__owner=owner).count() == 1


def test_bad_header_names_the_line_and_stores_nothing(user: Callable[..., Any]) -> None:
    owner = user()
    data = b"garbage\n" + _line("u1", None, "first").encode() + b"\n"
    with pytest.raises(services.InvalidSessionFile, match="line 2"):
        services.import_jsonl(actor=owner, data=data)
    assert not ChatSession.objects.filter(owner=owner).exists()


def test_malformed_lines_are_reported_with_line_numbers(user: Callable[..., Any]) -> None:
    data = _session_file("bad-lines", [_line("u1", None, "ok"), "{not json", "", _line("a1", "u1", "fine")])
    data += b'{"type":"message","id":"torn"'  # a torn final line, as a crash mid-write leaves it
    result = services.import_jsonl(actor=user(), data=data)
    skipped = [(s.line_no, s.reason) for s in result.skipped.lines]
    assert skipped == [(3, "not valid JSON"), (6, "not valid JSON")]
    assert result.session.entry_count == 2


def test_orphans_and_cycles_load_as_extra_roots(user: Callable[..., Any]) -> None:
    lines = [
        _line("u1", None, "root"),
        _line("o1", "missing", "orphan"),
        # Duplicate ids make a parent cycle: c2 → c1 → c2. Pi would hang; we cut it and keep both.
        _line("c1", "c2", "cycle a"),
        _line("c2", "c1", "cycle b"),
    ]
    session = services.import_jsonl(actor=user(), data=_session_file("odd-tree", lines)).session
    assert [e.id for e in queries.context_for_leaf(session, "c2").path] == ["c1", "c2"]
    assert [e.id for e in queries.context_for_leaf(session, "c1").path] == ["c1"]
    assert [e.id for e in queries.context_for_leaf(session, "o1").path] == ["o1"]


def test_appends_are_validated(user: Callable[..., Any]) -> None:
    session = services.import_jsonl(
        actor=user(), data=_session_file("app", [_line("u1", None, "hi")])
    ).session
    with pytest.raises(services.InvalidEntries, match="not an entry of this session"):
        services.append_entries(
            session=session, actor=session.owner, entries=[{"type": "label", "parentId": "nope"}]
        )
    with pytest.raises(services.InvalidEntries, match="already exists"):
        services.append_entries(
            session=session, actor=session.owner, entries=[{"type": "custom", "id": "u1", "customType": "x"}]
        )
    with pytest.raises(services.AppendConflict):
        services.append_entries(
            session=session,
            actor=session.owner,
            entries=[{"type": "custom", "customType": "x"}],
            expected_leaf="zz",
        )
    rows = services.append_entries(
        session=session,
        actor=session.owner,
        entries=[{"type": "custom", "customType": "x"}],
        expected_leaf="u1",
    )
    assert rows[0].parent_id == "u1" and rows[0].depth == 1
    assert json.loads(rows[0].raw).keys() >= {"type", "id", "parentId", "timestamp", "customType"}
    assert list(json.loads(rows[0].raw))[:4] == ["type", "id", "parentId", "timestamp"]


@pytest.mark.django_db(transaction=True)
def test_concurrent_writers_never_corrupt_the_tree(user: Callable[..., Any]) -> None:
    session = services.import_jsonl(
        actor=user(), data=_session_file("busy", [_line("u1", None, "hi")])
    ).session

    def writer(n: int) -> None:
        for i in range(15):
            services.append_entries(
                session=session,
                actor=session.owner,
                entries=[
                    {"type": "custom", "id": f"w{n}-{i}", "customType": "load", "data": {"n": n, "i": i}}
                ],
            )

    run_writers(8, writer)
    # Gapless, no duplicates, and one chain: every writer hung its entry under the leaf it found.
    assert_one_gapless_chain(session, 121)


def test_path_facts_agree_with_an_in_memory_walk(user: Callable[..., Any]) -> None:
    rng = random.Random(7)
    lines = [_line("e0", None, "root")]
    ids = ["e0"]
    for i in range(1, 600):
        parent = ids[-1] if rng.random() < 0.9 else rng.choice(ids)  # mostly chains, some rewinds
        lines.append(_line(f"e{i}", parent, f"m{i}", role="assistant" if i % 2 else "user"))
        ids.append(f"e{i}")
        if i % 97 == 0:
            compaction = {
                "type": "compaction",
                "id": f"k{i}",
                "parentId": f"e{i}",
                "timestamp": "t",
                "summary": f"s{i}",
                "firstKeptEntryId": f"e{i - 3}",
                "tokensBefore": 100,
            }
            lines.append(json.dumps(compaction))
            ids.append(f"k{i}")
    data = _session_file("random", lines)
    session = services.import_jsonl(actor=user(), data=data).session
    tree = load_session(data.decode()).tree
    for leaf in rng.sample(ids, 40):
        expected = [e.id for e in tree.path(leaf)]
        row = queries.find_entry(session, leaf)
        got = list(
            Entry.objects.filter(seq__in=queries.path_seqs(session, row), session=session)
            .order_by("depth")
            .values_list("entry_id", flat=True)
        )
        assert got == expected


def test_context_of_a_100k_entry_session_reads_only_what_the_model_sees(user: Callable[..., Any]) -> None:
    n = 100_000
    cut = n - 40  # entries e0..e{cut-1} come before the compaction, e{cut}..e{n-1} after it
    lines = [_line("e0", None, "start")]
    lines += [
        _line(f"e{i}", f"e{i - 1}", f"message {i}", role="assistant" if i % 2 else "user")
        for i in range(1, cut)
    ]
    compaction = {
        "type": "compaction",
        "id": "k1",
        "parentId": f"e{cut - 1}",
        "timestamp": "t",
        "summary": "everything so far",
        "firstKeptEntryId": f"e{cut - 10}",
        "tokensBefore": 50000,
    }
    lines.append(json.dumps(compaction))
    lines.append(_line(f"e{cut}", "k1", "after compaction"))
    lines += [
        _line(f"e{i}", f"e{i - 1}", f"message {i}", role="assistant" if i % 2 else "user")
        for i in range(cut + 1, n)
    ]
    session = services.import_jsonl(actor=user(), data=_session_file("big", lines)).session
    assert session.entry_count == n + 1
    with CaptureQueriesContext(connection) as ctx:
        view = queries.context_for_leaf(session)
    context_ids = [pe.entry.id for pe in view.projection.entries]
    assert context_ids[:2] == ["k1", f"e{cut - 10}"] and context_ids[-1] == f"e{n - 1}"
    assert len(context_ids) == 1 + 10 + 40  # the compaction, its kept tail, everything after it
    assert view.rows_read <= len(context_ids) + 4  # the rows it projects plus O(1) lookups
    assert len(ctx.captured_queries) <= 8


def test_path_seqs_follow_the_path_when_branches_grow_in_turns(user: Callable[..., Any]) -> None:
    # Two branches appended alternately: their segments' seqs are not consecutive, the trunk's are.
    lines = [_line("r0", None, "root")] + [_line(f"r{i}", f"r{i - 1}", f"trunk {i}") for i in range(1, 30)]
    for i in range(40):
        lines.append(_line(f"a{i}", f"a{i - 1}" if i else "r29", f"left {i}"))
        lines.append(_line(f"b{i}", f"b{i - 1}" if i else "r9", f"right {i}"))
    data = _session_file("turns", lines)
    session = services.import_jsonl(actor=user(), data=data).session
    for _ in range(3):  # appends that continue the left branch and open a third one
        services.append_entries(
            session=session, actor=session.owner, entries=[{"type": "custom", "customType": "x", "data": 1}]
        )
    services.append_entries(
        session=session, actor=session.owner, entries=[{"type": "custom", "parentId": "b5", "data": 2}]
    )
    rows = dict(Entry.objects.filter(session=session).values_list("seq", "entry_id"))
    tree = load_session(b"".join(services.export_jsonl(session)).decode()).tree
    for leaf in ("a39", "b39", "r29", rows[max(rows)], *(rows[s] for s in sorted(rows)[-4:-1])):
        row = queries.find_entry(session, leaf)
        assert [rows[s] for s in queries.path_seqs(session, row)] == [e.id for e in tree.path(leaf)]
        assert [r.entry_id for r in queries.path_rows(session, row)] == [e.id for e in tree.path(leaf)]


def test_a_path_through_many_branch_points_reads_every_row_in_order(user: Callable[..., Any]) -> None:
    # Each step leaves a dead-end first child and goes on through a second one, so the path to the last
    # node crosses a segment per step: more ranges than one query's OR of them reads well.
    lines = [_line("s0", None, "root")]
    for i in range(1, 16):
        lines.append(_line(f"x{i}", f"s{i - 1}", f"dead end {i}"))
        lines.append(_line(f"s{i}", f"s{i - 1}", f"step {i}", role="assistant" if i % 2 else "user"))
    session = services.import_jsonl(actor=user(), data=_session_file("steps", lines)).session
    tree = load_session(_export(session).decode()).tree
    leaf = queries.find_entry(session, "s15")
    assert len(queries.path_ranges(session, leaf)) > 8
    assert [r.entry_id for r in queries.path_rows(session, leaf)] == [e.id for e in tree.path("s15")]
    assistants = queries.path_rows(session, leaf, fields=("entry_id",), roles=("assistant",))
    assert [entry_id for (entry_id,) in assistants] == [f"s{i}" for i in range(1, 16, 2)]


def test_appends_under_the_leaf_keep_segments_names_and_paths_right(user: Callable[..., Any]) -> None:
    owner = user()
    session = services.create_session(actor=owner, cwd="/w")

    def add(*kinds: str) -> list[Entry]:
        return services.append_entries(
            session=session, actor=session.owner, entries=[{"type": "custom", "customType": k} for k in kinds]
        )

    (root,) = add("first")  # a root in an empty session
    assert (root.parent_id, root.depth) == (None, 0)
    trunk = add("a", "b", "c")
    services.set_leaf(session=session, actor=session.owner, entry_id=trunk[0].entry_id)
    branch = add("x", "y")  # a branch: a new segment under "a"
    assert branch[0].parent_id == trunk[0].entry_id and branch[0].segment != trunk[0].segment
    named = services.append_entries(
        session=session, actor=session.owner, entries=[{"type": "session_info", "name": "  Named  "}]
    )
    session.refresh_from_db()
    assert (session.name, session.leaf_entry_id, session.next_seq) == ("Named", named[0].entry_id, 7)
    assert (session.entry_count, session.next_segment) == (7, 2)
    tree = load_session(b"".join(services.export_jsonl(session)).decode()).tree
    by_seq = dict(Entry.objects.filter(session=session).values_list("seq", "entry_id"))
    for leaf in [trunk[-1].entry_id, named[0].entry_id]:
        row = queries.find_entry(session, leaf)
        assert [by_seq[s] for s in queries.path_seqs(session, row)] == [e.id for e in tree.path(leaf)]
        assert row.depth == len(tree.path(leaf)) - 1


def test_the_original_file_imported_again_after_the_session_grew_on_the_server(
    user: Callable[..., Any],
) -> None:
    owner = user()
    lines = [_line("u1", None, "one"), _line("a1", "u1", "two")]
    services.import_jsonl(actor=owner, data=_session_file("grew", lines))
    session = ChatSession.objects.get(owner=owner)
    services.append_entries(
        actor=owner, session=session, entries=[json.loads(_line("u2", "a1", "asked in piweb"))]
    )

    again = services.import_jsonl(actor=owner, data=_session_file("grew", lines))
    assert (again.created, again.appended, again.server_only) == (False, 0, 1)

    # Meanwhile Pi went on from the same point: both continuations are kept, as branches of one tree.
    in_pi = services.import_jsonl(
        actor=owner, data=_session_file("grew", [*lines, _line("u3", "a1", "asked in Pi")])
    )
    assert (in_pi.appended, in_pi.server_only) == (1, 1)
    stored = list(session.entries.order_by("seq").values_list("entry_id", "parent_id"))
    assert stored == [("u1", None), ("a1", "u1"), ("u2", "a1"), ("u3", "a1")]
    assert Entry.objects.filter(session=session).count() == 4


def test_a_file_whose_shared_entry_was_changed_is_refused_whatever_else_it_adds(
    user: Callable[..., Any],
) -> None:
    owner = user()
    lines = [_line("u1", None, "one"), _line("a1", "u1", "two")]
    services.import_jsonl(actor=owner, data=_session_file("edit", lines))
    session = ChatSession.objects.get(owner=owner)
    services.append_entries(actor=owner, session=session, entries=[json.loads(_line("u2", "a1", "more"))])
    tampered = [lines[0], _line("a1", "u1", "rewritten"), _line("u9", "a1", "new")]
    with pytest.raises(services.InvalidSessionFile, match="entry 'a1'"):
        services.import_jsonl(actor=owner, data=_session_file("edit", tampered))
    assert Entry.objects.filter(session=session).count() == 3
