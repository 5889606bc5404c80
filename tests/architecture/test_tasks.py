"""Every background task is declared one way: late acknowledgement, no stored result, timed by name."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.utils.module_loading import autodiscover_modules
from prometheus_client import REGISTRY

from piweb.celery import app as celery_app

pytestmark = pytest.mark.django_db

OWN = ("agent.", "compaction_app.", "discussion.", "governance.", "sessions.")


def _own_tasks() -> dict[str, object]:
    autodiscover_modules("tasks")
    return {name: t for name, t in celery_app.tasks.items() if name.startswith(OWN)}


def test_every_task_survives_a_killed_worker_and_stores_no_result() -> None:
    tasks = _own_tasks()
    assert {
        "agent.run_agent",
        "sessions.purge_deleted_session",
        "compaction_app.tasks.run_compaction",
    } <= set(tasks)
    loose = [
        name
        for name, t in tasks.items()
        if not (t.acks_late and t.reject_on_worker_lost and t.ignore_result)  # type: ignore[attr-defined]
    ]
    assert loose == []


def test_a_task_run_is_timed_by_name_and_outcome() -> None:
    def count(outcome: str) -> float:
        labels = {"task": "sessions.sweep_deleted_sessions", "outcome": outcome}
        return REGISTRY.get_sample_value("piweb_task_duration_seconds_count", labels) or 0.0

    before = count("done")
    assert celery_app.tasks["sessions.sweep_deleted_sessions"].apply().get() == 0
    assert count("done") == before + 1


def test_services_queue_tasks_by_name_and_never_import_their_tasks_module() -> None:
    root = Path(__file__).resolve().parents[2]
    offenders = [
        str(path.relative_to(root))
        for app in ("agent", "compaction_app", "discussion", "governance", "sessions_app")
        for path in (root / app).rglob("*.py")
        if "tasks.py" not in path.name
        and "management" not in path.parts
        and any(
            line.strip().startswith((f"from {app}.tasks import", f"from {app} import tasks"))
            for line in path.read_text().splitlines()
        )
    ]
    assert offenders == []
