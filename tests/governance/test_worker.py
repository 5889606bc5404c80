"""In real workers (``python -m piweb.workers``, beat included): the beat's retention task deletes and
purges an old session and spares a held one, and a bulk import's secret scan runs off the request path."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings as django_settings
from django.utils import timezone

from actionlog.models import ActionLog
from governance.models import LegalHold, PendingScan, SecretFinding
from governance.scanning import INLINE_ENTRIES
from sessions_app import services
from sessions_app.models import ChatSession
from tests.compaction.test_worker_kill import ROOT
from tests.factories import HEADER, session_file, small_tree, user_message
from tests.procs import database_url, wait_until

pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(180),
    pytest.mark.skipif(
        not str(django_settings.CELERY_BROKER_URL).startswith("redis"), reason="needs the Redis broker"
    ),
]


@pytest.fixture
def start_workers(tmp_path: Path, transactional_db: None) -> Iterator[Callable[[], subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []

    def start() -> subprocess.Popen[bytes]:
        env = {
            **os.environ,
            "DATABASE_URL": database_url(),
            "REDIS_URL": str(django_settings.CELERY_BROKER_URL),
            "PIWEB_WORKER_CONCURRENCY": "1",
            "PIWEB_RUN_CONCURRENCY": "1",
            "PIWEB_RETENTION_DAYS": "30",
            "PIWEB_RETENTION_EVERY_SECONDS": "3",  # the beat task every 3 s instead of daily
            "PIWEB_BEAT_SCHEDULE": str(tmp_path / "beat-schedule"),
            "DJANGO_SETTINGS_MODULE": "piweb.settings",
        }
        log = open(tmp_path / "workers.log", "wb")  # noqa: SIM115 - closed with the process
        process = subprocess.Popen(
            [sys.executable, "-m", "piweb.workers"], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT
        )
        started.append(process)
        return process

    yield start
    for process in started:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def aged(owner: Any, name: str, days: int) -> ChatSession:
    data = session_file(small_tree(), {**HEADER, "id": name})
    session = services.import_jsonl(actor=owner, data=data, filename=f"{name}.jsonl").session
    ChatSession.objects.filter(pk=session.pk).update(updated_at=timezone.now() - timedelta(days=days))
    return session


def test_beat_runs_retention_in_a_real_worker_and_a_bulk_import_is_scanned_there(
    user: Callable[..., Any], start_workers: Callable[[], subprocess.Popen[bytes]]
) -> None:
    owner = user("owner")
    old = aged(owner, "old", 90)
    held = aged(owner, "held", 90)
    LegalHold.objects.create(session=held, reason="kept for an audit")
    fresh = aged(owner, "fresh", 3)
    # An import too large to scan in its request: the scan is queued for the worker.
    size = INLINE_ENTRIES + 50
    chain = [user_message(f"m{i}", f"m{i - 1}" if i else None, f"line {i}") for i in range(size)]
    chain.append(user_message("leak", chain[-1]["id"], "token ghp_" + "Q" * 36))
    bulk = services.import_jsonl(
        actor=owner, data=session_file(chain, {**HEADER, "id": "bulk"}), filename="bulk.jsonl"
    ).session
    assert not SecretFinding.objects.filter(session=bulk).exists()  # not in the request
    assert PendingScan.objects.filter(session=bulk).exists()

    started = time.monotonic()
    process = start_workers()
    wait_until(lambda: SecretFinding.objects.filter(session=bulk).exists(), 90, "the bulk import's scan")
    [finding] = SecretFinding.objects.filter(session=bulk)
    assert (finding.entry_id, finding.kind) == ("leak", "github-token")
    wait_until(lambda: not PendingScan.objects.exists(), 10, "the pending scan's row to go")

    wait_until(lambda: not ChatSession.with_deleted.filter(pk=old.pk).exists(), 90, "the old session's purge")
    assert process.poll() is None
    assert ChatSession.objects.filter(pk__in=[held.pk, fresh.pk, bulk.pk]).count() == 3
    deleted = ActionLog.objects.get(action="delete", session_number=old.pk)
    assert (deleted.actor_kind, deleted.actor_name) == ("system", "retention-worker")
    purged = ActionLog.objects.get(action="purge", session_number=old.pk)
    assert purged.actor_name == "purge-worker"
    assert time.monotonic() - started < 120
