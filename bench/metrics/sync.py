"""Sync throughput: ``piweb-sync push --once`` of a 50k-entry file against importing the same file.

Both go through the same gunicorn server over loopback, as a Pi user's machine would: the import is one
``POST /api/sessions/import/`` of the file (``application/x-ndjson``), the push is the real client in
its own process (state file, batches, cursor). Each file gets its own header id so neither is taken as
a re-send of the other. Rounds alternate (import, push) and the best of each counts, so both see the
same load on a shared machine. Goal: the push costs at most 1.25× the import.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench import generate
from bench.django_env import bench_user
from bench.metrics import Context, Result, metric, ratio_at_most
from bench.metrics.db import require_db
from bench.metrics.procs import REPO_DIR, free_port, stop, wait_for_port
from bench.metrics.serve import bench_token, server_env

ENTRIES = 50_000
QUICK_ENTRIES = 10_000
CLIENT_SRC = REPO_DIR / "clients" / "piweb-sync" / "src"


def _copy_with_id(source: Path, target: Path, pi_id: str) -> None:
    """Write ``source`` to ``target`` with the header's session id replaced (the first line only)."""
    import orjson

    with source.open("rb") as src, target.open("wb") as dst:
        header = orjson.loads(src.readline())
        header["id"] = pi_id
        dst.write(orjson.dumps(header) + b"\n")
        while chunk := src.read(1 << 20):
            dst.write(chunk)


def _serve(port: int) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [
            str(Path(sys.executable).parent / "gunicorn"),
            "piweb.wsgi:application",
            "-k",
            "gthread",
            "--workers",
            "1",
            "--threads",
            "4",
            "--timeout",
            "600",
            "--bind",
            f"127.0.0.1:{port}",
            "--log-level",
            "warning",
        ],
        cwd=REPO_DIR,
        env=server_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def _import(url: str, token: str, path: Path) -> float:
    import httpx

    started = time.perf_counter()
    with path.open("rb") as body:
        response = httpx.post(
            f"{url}/api/sessions/import/",
            content=body,
            params={"filename": path.name},
            headers={"Authorization": f"Bearer {token}", "Content-Type": "application/x-ndjson"},
            timeout=600,
        )
    elapsed = time.perf_counter() - started
    if response.status_code not in (200, 201):
        raise RuntimeError(f"import answered {response.status_code}: {response.text[:200]}")
    return elapsed


def _push(url: str, token: str, folder: Path, state: Path) -> float:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PI_", "PIWEB_"))}
    env.update(
        {
            "PIWEB_URL": url,
            "PIWEB_TOKEN": token,
            "XDG_STATE_HOME": str(state),
            "XDG_CONFIG_HOME": str(state / "config"),
            "PYTHONPATH": str(CLIENT_SRC),
        }
    )
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "piweb_sync", "push", "--once", str(folder)],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"piweb-sync push failed: {done.stderr[-500:]}")
    return elapsed


@metric("sync_push")
def sync_push(ctx: Context) -> list[Result]:
    """A 50k-entry push with the client vs importing the same file, through one server."""
    require_db(ctx)
    from actionlog.models import ActionLog
    from sessions_app.models import ChatSession, Entry

    entries = QUICK_ENTRIES if ctx.quick else ENTRIES
    source = ctx.session(generate.SessionSpec(entries=entries))
    rounds = 1 if ctx.quick else 2
    imports: list[float] = []
    pushes: list[float] = []
    stored: list[int] = []
    port = free_port()
    proc = _serve(port)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for_port(port, proc)
        with bench_token("sync") as token, tempfile.TemporaryDirectory(prefix="bench-sync-") as tmp:
            for index in range(rounds):
                ids = {"import": f"bench-sync-import-{index}", "push": f"bench-sync-push-{index}"}
                ChatSession.objects.filter(owner=bench_user(), pi_id__in=ids.values()).delete()
                imported = Path(tmp) / f"import-{index}.jsonl"
                _copy_with_id(source.path, imported, ids["import"])
                folder = Path(tmp) / f"sessions-{index}"
                folder.mkdir()
                _copy_with_id(source.path, folder / "s.jsonl", ids["push"])
                imports.append(_import(url, token, imported))
                pushes.append(_push(url, token, folder, Path(tmp) / f"state-{index}"))
                pushed = ChatSession.objects.get(owner=bench_user(), pi_id=ids["push"])
                twin = ChatSession.objects.get(owner=bench_user(), pi_id=ids["import"])
                stored.append(Entry.objects.filter(session=pushed).count())
                expected = Entry.objects.filter(session=twin).count()
                requests = ActionLog.objects.filter(session=pushed, action="sync").count()
                ChatSession.objects.filter(owner=bench_user(), pi_id__in=ids.values()).delete()
    finally:
        stop(proc)
    if any(count != expected for count in stored):
        raise RuntimeError(f"the push stored {stored} entries, the import {expected}")
    push, imp = min(pushes), min(imports)
    load = os.getloadavg()[0]
    return [
        ratio_at_most(
            f"sync_push.{entries // 1000}k",
            push,
            "s",
            baseline=imp,
            limit=1.25,
            against="import of the same file",
            note=f"piweb-sync push --once ({requests} requests) vs POST /api/sessions/import/, one gunicorn "
            f"worker; best of {rounds} (push {', '.join(f'{p:.1f}' for p in pushes)} s, import "
            f"{', '.join(f'{i:.1f}' for i in imports)} s); load {load:.1f}",
        )
    ]
