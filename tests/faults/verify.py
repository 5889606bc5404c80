"""Check a stored session against itself and against an in-memory replay of its exported file.

Run inside a process whose Django settings point at the database under test:
``python -m tests.faults.verify PK [PK ...]`` prints one JSON report per session.
"""

from __future__ import annotations

import json
import random
import sys
from typing import Any


def check_session(pk: int, *, sample: int = 60) -> dict[str, Any]:
    """Return the session's rows by id and every inconsistency found (an empty list when sound)."""
    from pitree.entries import entry_from_value
    from pitree.jsjson import parse_json
    from pitree.tree import SessionTree
    from sessions_app import queries, services
    from sessions_app.models import ChatSession, Entry, Segment

    session = ChatSession.objects.get(pk=pk)
    rows = list(
        Entry.objects.filter(session=session)
        .order_by("seq")
        .values_list("seq", "entry_id", "parent_id", "parent_seq", "depth", "segment", "type")
    )
    problems: list[str] = []
    seqs = [r[0] for r in rows]
    if seqs != list(range(len(rows))):
        problems.append(f"seq is not gapless 0..{len(rows) - 1}")
    if (session.next_seq, session.entry_count) != (len(rows), len(rows)):
        problems.append(f"counters {session.next_seq}/{session.entry_count} but {len(rows)} rows")
    seq_of: dict[str, int] = {}
    occurrences: dict[str, list[int]] = {}
    for seq, entry_id, *_ in rows:
        if entry_id is not None:
            occurrences.setdefault(entry_id, []).append(seq)
            seq_of[entry_id] = seq
    problems += [f"id {i} stored at seqs {s}" for i, s in occurrences.items() if len(s) > 1]
    depth_of = {row[0]: row[4] for row in rows}
    for _, entry_id, parent_id, parent_seq, depth, *_ in rows:
        expected_parent = seq_of.get(parent_id) if parent_id is not None else None
        if parent_seq != expected_parent:
            problems.append(
                f"{entry_id}: parent_seq {parent_seq}, parent {parent_id} is at {expected_parent}"
            )
        expected_depth = 0 if parent_seq is None else depth_of.get(parent_seq, -2) + 1
        if depth != expected_depth:
            problems.append(f"{entry_id}: depth {depth}, expected {expected_depth}")
    if session.leaf_entry_id is not None and session.leaf_entry_id not in seq_of:
        problems.append(f"leaf {session.leaf_entry_id} is not an entry")

    # Replay the exported file in memory: same depths, segments and paths as the stored columns.
    lines = b"".join(services.export_jsonl(session)).decode().splitlines()
    tree = SessionTree([entry_from_value(i, parse_json(line)) for i, line in enumerate(lines[1:])])
    facts, segments = tree.path_facts()
    # Segment numbers depend on the order they were created in, so compare the two tables up to renaming.
    renamed: dict[int | None, int | None] = {None: None}
    for (_, entry_id, _, _, depth, segment, _), fact in zip(rows, facts, strict=True):
        if depth != fact.depth or renamed.setdefault(segment, fact.segment) != fact.segment:
            problems.append(f"{entry_id}: stored depth/segment {(depth, segment)}, replay {fact}")
    if len(set(renamed.values())) != len(renamed):
        problems.append("two stored segments replay as one")
    stored_segments = {
        renamed.get(index, -1): (renamed.get(parent, -1), start)
        for index, parent, start in Segment.objects.filter(session=session).values_list(
            "index", "parent_index", "start_depth"
        )
    }
    replayed = {s.index: (s.parent_segment, s.start_depth) for s in segments}
    if stored_segments != replayed:
        problems.append(f"segment table differs from the replay: {len(stored_segments)} vs {len(replayed)}")
    children = {r[3] for r in rows if r[3] is not None}
    leaves = [r for r in rows if r[0] not in children and r[1] is not None]
    picked = random.Random(pk).sample(leaves, min(sample, len(leaves)))
    for seq, entry_id, *_ in picked:
        stored = queries.path_seqs(session, Entry.objects.get(session=session, seq=seq))
        if stored != tree.path_positions(entry_id):
            problems.append(f"path to {entry_id} differs between the database and the replay")
    return {
        "session": pk,
        "rows": len(rows),
        "ids": {entry_id: seqs for entry_id, seqs in occurrences.items()},
        "types": {row[1]: row[6] for row in rows},
        "leavesChecked": len(picked),
        "segments": len(stored_segments),
        "problems": problems[:50],
    }


def main(argv: list[str]) -> None:
    import django

    django.setup()
    print(json.dumps([check_session(int(pk)) for pk in argv]))


if __name__ == "__main__":
    main(sys.argv[1:])
