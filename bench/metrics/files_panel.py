"""The files panel's request at the leaf of a large session: time and size.

The request is the panel's own (`GET /api/sessions/<pk>/files/?leaf=…`) through Django's test client,
signed in as the bench user, at the leaf of the uncompacted session `context_page` uses (100k entries, 10k
with `--quick`; its tool-heavy turns read, edit, write and run commands). Each timed request is built anew
(the shared cache emptied), as for the first reader of a leaf; the note adds the next readers' time, one
file's diffs (the file with the most changes) and how many files and commands the branch has.
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
    label = f"{big // 1000}k"
    note = (
        f"{len(body['files'])} files, {body['commandCount']:,} commands on the branch; median of {REPEAT}, "
        f"each built anew (cache emptied); the next readers: {again_ms:.1f} ms{one}"
    )
    return [
        at_most(f"files panel at the leaf ({label} uncompacted)", ms, "ms", TIME_GOAL_MS, note=note),
        at_most(f"files panel size at the leaf ({label} uncompacted)", size / 1024, "KB", SIZE_GOAL_KB),
    ]


__all__ = ["files_panel"]
