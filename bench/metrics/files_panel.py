"""The files panel's request at the leaf of a large session: time and size.

The request is the panel's own (`GET /api/sessions/<pk>/files/?leaf=…`) through Django's test client,
signed in as the bench user, at the leaf of the uncompacted session `context_page` uses (100k entries, 10k
with `--quick`; its tool-heavy turns read, edit, write and run commands). Each timed request is built anew
(the shared cache emptied), as for the first reader of a leaf; the note adds the next readers' time, one
file's diffs (the file with the most changes) and how many files and commands the branch has.

A second row appends one tool turn (an edit and its result) at the leaf, as a live session grows, and
times the first request at the new leaf: it goes on from the walk kept for the old leaf when that walk
holds few enough files' texts to keep (``branch_files.WALK_CHARS``), else walks from the root again.
"""

from __future__ import annotations

from typing import Any

from bench import generate
from bench.django_env import bench_user
from bench.metrics import Context, Result, at_most, metric
from bench.metrics.context_page import _time
from bench.metrics.db import load_session, session_pk

REPEAT = 5
TIME_GOAL_MS = 100.0
SIZE_GOAL_KB = 100.0


@metric("files_panel")
def files_panel(ctx: Context) -> list[Result]:
    """The files list at the leaf of a 100k uncompacted session (10k with --quick)."""
    from django.test import Client

    big = 10_000 if ctx.quick else 100_000
    client = Client()
    client.force_login(bench_user())
    pk = session_pk(ctx, generate.SessionSpec(entries=big, uncompacted=True))
    leaf = load_session(pk).leaf_entry_id
    url = f"/api/sessions/{pk}/files/"
    ms, size, body = _time(client, url, {"leaf": leaf}, REPEAT)
    again_ms, _, _ = _time(client, url, {"leaf": leaf}, REPEAT, cached=True)
    busiest: Any = max(body["files"], key=lambda f: f["changeCount"], default=None)
    one = ""
    if busiest is not None:
        file_ms, file_size, _ = _time(
            client, url, {"leaf": leaf, "path": busiest["path"]}, REPEAT, cached=True
        )
        one = f"; one file ({busiest['changeCount']} changes): {file_ms:.1f} ms, {file_size / 1024:.1f} KB"
    grown_ms, walk_note = _after_append(client, pk, leaf)
    label = f"{big // 1000}k"
    note = (
        f"{body['fileCount']:,} files (the newest {len(body['files'])} listed), {body['commandCount']:,} "
        f"commands on the branch; median of {REPEAT}, "
        f"each built anew (cache emptied); the next readers: {again_ms:.1f} ms{one}"
    )
    return [
        at_most(f"files panel at the leaf ({label} uncompacted)", ms, "ms", TIME_GOAL_MS, note=note),
        at_most(f"files panel size at the leaf ({label} uncompacted)", size / 1024, "KB", SIZE_GOAL_KB),
        at_most(
            f"files panel at a new leaf after an append ({label} uncompacted)",
            grown_ms,
            "ms",
            TIME_GOAL_MS,
            note=walk_note,
        ),
    ]


def _after_append(client: Any, pk: int, leaf: str) -> tuple[float, str]:
    """Time the first request at a leaf appended below ``leaf`` (the old leaf's answer built first)."""
    import time

    from django.core.cache import caches

    from sessions_app import branch_files, services

    caches["shared"].clear()
    url = f"/api/sessions/{pk}/files/"
    assert client.get(url, {"leaf": leaf}).status_code == 200  # as the panel had it before the append
    session = load_session(pk)
    call = {
        "type": "toolCall",
        "id": "bench-edit",
        "name": "edit",
        "arguments": {"path": "x.py", "oldText": "a", "newText": "b"},
    }
    turn = [
        {
            "type": "message",
            "message": {"role": "assistant", "content": [call], "stopReason": "toolUse", "timestamp": 1},
        },
        {
            "type": "message",
            "message": {
                "role": "toolResult",
                "toolCallId": "bench-edit",
                "toolName": "edit",
                "content": [],
                "isError": False,
                "timestamp": 2,
            },
        },
    ]
    rows = services.append_entries(session=session, entries=turn, actor=bench_user())
    started = time.perf_counter()
    answer = client.get(url, {"leaf": rows[-1].entry_id})
    ms = (time.perf_counter() - started) * 1000
    assert answer.status_code == 200, answer.content[:300]
    kept = caches["shared"].get(branch_files._seq_key(load_session(pk), rows[-1].seq, "walk")) is not None
    return (
        ms,
        "went on from the old leaf's walk"
        if kept
        else "walked from the root (the walk holds too much text to keep)",
    )


__all__ = ["files_panel"]
