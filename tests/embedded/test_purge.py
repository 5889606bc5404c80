"""Deleting a session in the embedded setup (`make run` without services: SQLite, the file-based task queue,
a local worker): the web side only hides it and queues the purge; the worker deletes the rows, and when it
starts it also finishes a deleted session whose purge never reached the queue.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from piweb import workers
from tests.faults.stack import ROOT

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

SETUP = """
from django.contrib.auth import get_user_model
from django.utils import timezone
from sessions_app import services
from sessions_app.models import ChatSession
from tests.factories import HEADER, conversation, session_file

owner = get_user_model().objects.create_user("ada", password="pw")

def stored(turns, pi_id):
    data = session_file(conversation(turns), {**HEADER, "id": pi_id})
    return services.import_jsonl(actor=owner, data=data).session

queued, stranded, kept = stored(30, "one"), stored(20, "two"), stored(5, "three")
services.delete_session(session=queued, actor=owner)
# Hidden like a delete whose purge was never queued (the process died right after the commit).
ChatSession.objects.filter(pk=stranded.pk).update(deleted_at=timezone.now())
print(queued.pk, stranded.pk, kept.pk)
"""


def embedded_env(data_dir: Path) -> dict[str, str]:
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_", "REDIS_", "PIWEB_", "DJANGO_"))
    }
    return {**env, "PIWEB_DATA_DIR": str(data_dir), "PIWEB_LOG_LEVEL": "INFO"}


def manage(env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def counts(database: Path, pks: tuple[int, ...]) -> dict[int, tuple[int, int]]:
    """Return (session rows, entry rows) per session, read straight from the SQLite file."""
    with sqlite3.connect(database) as db:
        return {
            pk: (
                db.execute("SELECT count(*) FROM sessions_app_chatsession WHERE id = ?", [pk]).fetchone()[0],
                db.execute("SELECT count(*) FROM sessions_app_entry WHERE session_id = ?", [pk]).fetchone()[
                    0
                ],
            )
            for pk in pks
        }


def test_the_local_worker_purges_deleted_sessions_and_sweeps_when_it_starts(tmp_path: Path) -> None:
    env = embedded_env(tmp_path)
    manage(env, "migrate", "--verbosity=0")
    queued, stranded, kept = (int(pk) for pk in manage(env, "shell", "--verbosity=0", "-c", SETUP).split())
    database = tmp_path / "piweb.sqlite3"

    # Nothing purged yet: the delete only hid the session and put its purge in the queue folder.
    assert counts(database, (queued, stranded, kept)) == {queued: (1, 61), stranded: (1, 41), kept: (1, 11)}
    assert len(list((tmp_path / "celery" / "queue").iterdir())) == 1

    command = workers.worker_commands(env, loglevel="INFO")[1]
    command[command.index("--concurrency=2")] = "--concurrency=1"
    log_path = tmp_path / "worker.log"
    with log_path.open("wb") as log:
        worker = subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 120
        while counts(database, (queued, stranded)) != {queued: (0, 0), stranded: (0, 0)}:
            assert worker.poll() is None, log_path.read_text(errors="replace")[-3000:]
            assert time.monotonic() < deadline, log_path.read_text(errors="replace")[-3000:]
            time.sleep(0.5)
    finally:
        worker.terminate()
        worker.wait(timeout=30)
    assert counts(database, (kept,)) == {kept: (1, 11)}
    log = log_path.read_text(errors="replace")
    assert "sessions.purge_deleted_session" in log and "sessions.sweep_deleted_sessions" in log
