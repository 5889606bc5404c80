"""Deleting a 1M-entry session: what the owner waits for, and the purge a worker does afterwards.

The session is imported fresh each run (``import_stream``, COPY-based, in a child process) for the user
"bench-delete". The delete is timed as ``DELETE /api/sessions/<pk>/`` runs it (``services.delete_session``,
commit and after-commit work included). The purge it queues runs in a real Celery worker (solo pool, so the
worker process is the one deleting) on a private queue; the row reports the task's own runtime from the
worker's log, and the worker's peak RSS (VmHWM) against its RSS once ready.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from bench import generate
from bench.metrics import Context, Result, at_most, metric
from bench.metrics.db import require_db, run_import_child
from bench.metrics.procs import REPO_DIR, status_kb, stop, wait_until

DELETE_USER = "bench-delete"
# Its own seed, so its header id differs from the other bench sessions' (same seed, same id).
DELETE_SEED = generate.DEFAULT_SEED + 900
USER_LIMIT_S = 5.0
RSS_GROWTH_LIMIT_MB = 100.0
PURGE_TIMEOUT_S = 900
TASK_DONE = re.compile(r"Task sessions\.purge_deleted_session\[[^\]]+\] succeeded in ([0-9.]+)s: True")


def _clear_leftovers(owner: Any) -> None:
    """Finish what an interrupted earlier run left: sessions of the delete user, deleted or not."""
    from core.actors import PURGE_WORKER
    from sessions_app.models import ChatSession
    from sessions_app.services import delete_session, purge_session

    for session in ChatSession.objects.filter(owner=owner):
        delete_session(session=session, actor=session.owner)
    for pk in ChatSession.with_deleted.filter(owner=owner).values_list("pk", flat=True):
        purge_session(pk, actor=PURGE_WORKER)


@metric("db_delete")
def db_delete(ctx: Context) -> list[Result]:
    """Delete a 1M-entry session (100k with --quick): the owner's wait, the background purge, its memory."""
    require_db(ctx)
    from django.contrib.auth import get_user_model
    from django.db import connections

    from piweb.celery import app as celery_app
    from sessions_app.models import ChatSession
    from sessions_app.services import delete_session
    from sessions_app.services.purging import ENTRY_BATCH

    entries = 100_000 if ctx.quick else 1_000_000
    label = "100k" if ctx.quick else "1M"
    session_file = ctx.session(generate.SessionSpec(entries=entries, seed=DELETE_SEED))
    owner, _ = get_user_model().objects.get_or_create(username=DELETE_USER)
    _clear_leftovers(owner)
    imported, _, import_wall = run_import_child(session_file.path, DELETE_USER, timeout=1800)
    session = ChatSession.objects.get(pk=int(imported["session"]))

    queue = f"bench-purge-{uuid.uuid4().hex[:8]}"
    routes = celery_app.conf.task_routes
    celery_app.conf.task_routes = {**routes, "sessions.*": {"queue": queue}}
    celery_app.amqp.flush_routes()
    celery_app.amqp.router = celery_app.amqp.Router()
    log_path = ctx.data_dir / "db_delete_worker.log"
    command = [str(Path(sys.executable).with_name("celery")), "-A", "piweb", "worker", "-Q", queue]
    command += [
        "--pool=solo",
        "--without-gossip",
        "--without-mingle",
        "--without-heartbeat",
        "--loglevel=INFO",
    ]
    connections.close_all()
    with log_path.open("wb") as log:
        worker = subprocess.Popen(command, cwd=REPO_DIR, env=dict(os.environ), stdout=log, stderr=log)
    try:
        wait_until(lambda: b" ready." in log_path.read_bytes(), 60, "the worker", worker)
        ready_kb = status_kb(worker.pid, "VmRSS")
        t0 = time.perf_counter()
        delete_session(session=session, actor=owner)
        user_s = time.perf_counter() - t0
        wait_until(
            lambda: not ChatSession.with_deleted.filter(pk=session.pk).exists(),
            PURGE_TIMEOUT_S,
            "the purge",
            worker,
        )
        gone_s = time.perf_counter() - t0 - user_s
        wait_until(
            lambda: TASK_DONE.search(log_path.read_text(errors="replace")), 10, "the task's log", worker
        )
        peak_kb = status_kb(worker.pid, "VmHWM")
    finally:
        stop(worker, timeout=30)
        celery_app.conf.task_routes = routes
        celery_app.amqp.flush_routes()
        celery_app.amqp.router = celery_app.amqp.Router()
        with celery_app.connection_for_write() as broker:
            broker.default_channel.queue_delete(queue)
    found = TASK_DONE.search(log_path.read_text(errors="replace"))
    task_s = float(found.group(1)) if found else gone_s
    stored = int(imported["entries"])
    load = "load average {:.2f} {:.2f} {:.2f}".format(*os.getloadavg())
    return [
        at_most(
            f"delete session {label}, owner waits",
            user_s,
            "s",
            USER_LIMIT_S,
            note=f"{stored} entries ({int(session_file.meta['bytes']) / 1e6:.0f} MB file, imported in "
            f"{import_wall:.0f} s); services.delete_session as DELETE /api/sessions/<pk>/ calls it: hide, "
            f"action log, commit, event and queued purge; {load}",
        ),
        Result(
            metric=f"purge deleted session {label} (worker)",
            value=task_s,
            unit="s",
            goal="reference",
            note=f"the task's runtime in a solo-pool worker: entries by seq ranges of {ENTRY_BATCH}, one "
            f"transaction each, then segments and dependents; {gone_s:.1f} s from the delete's commit to "
            f"the session row gone; {load}",
        ),
        at_most(
            f"purge deleted session {label}, worker peak RSS growth",
            (peak_kb - ready_kb) / 1024,
            "MB",
            RSS_GROWTH_LIMIT_MB,
            note=f"VmHWM {peak_kb / 1024:.0f} MB vs VmRSS {ready_kb / 1024:.0f} MB once the worker was ready "
            "(flat: no entry is read into memory)",
        ),
    ]
