"""A worker killed in the middle of a purge: the session stays hidden; the redelivered task finishes it."""

from __future__ import annotations

import signal
import time
import uuid
from typing import Any

import pytest
from django.conf import settings as django_settings
from django.db import transaction

from piweb.celery import app as celery_app
from sessions_app import services
from sessions_app.models import ChatSession, Entry, Segment
from sessions_app.tasks import purge_deleted_session
from tests.compaction.test_worker_kill import VISIBILITY_TIMEOUT, workers  # noqa: F401
from tests.factories import conversation, store
from tests.procs import wait_until

pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(120),
    pytest.mark.skipif(
        not str(django_settings.CELERY_BROKER_URL).startswith("redis"), reason="needs the Redis broker"
    ),
]
BATCH = 4


@pytest.mark.django_db(transaction=True)
def test_a_worker_killed_mid_purge_leaves_it_hidden_and_the_task_comes_back(user: Any, workers: Any) -> None:  # noqa: F811
    owner = user()
    session = store(owner, conversation(10))  # 21 entries
    queue = f"piweb-test-purge-{uuid.uuid4().hex}"
    routes = celery_app.conf.task_routes
    celery_app.conf.task_routes = {**routes, "sessions.*": {"queue": queue}}
    celery_app.amqp.flush_routes()
    celery_app.amqp.router = celery_app.amqp.Router()
    try:
        services.delete_session(session=session, actor=owner)
        with celery_app.connection_for_write() as broker:
            broker.default_channel.queue_purge(
                queue
            )  # the delete's own purge: sent again below in small batches
        purge_deleted_session.apply_async((session.pk,), {"batch": BATCH}, queue=queue)

        with transaction.atomic():
            # Hold the third batch's rows, so the worker stops there with two batches committed.
            list(
                Entry.objects.select_for_update().filter(
                    session_id=session.pk, seq__gte=2 * BATCH, seq__lt=3 * BATCH
                )
            )
            first = workers(queue)
            wait_until(
                lambda: Entry.objects.filter(session_id=session.pk).count() == 21 - 2 * BATCH,
                45,
                "two batches",
            )
            time.sleep(0.5)  # the worker is waiting for the held rows
            first.send_signal(signal.SIGKILL)
            first.wait(timeout=10)

        assert Entry.objects.filter(session_id=session.pk).count() == 21 - 2 * BATCH
        assert not ChatSession.objects.filter(pk=session.pk).exists()  # still gone for everyone
        assert ChatSession.with_deleted.filter(pk=session.pk).exists()
        time.sleep(VISIBILITY_TIMEOUT + 1)  # then the broker hands the unacknowledged task out again
        workers(queue)
        wait_until(
            lambda: not ChatSession.with_deleted.filter(pk=session.pk).exists(), 45, "the redelivered task"
        )
    finally:
        celery_app.conf.task_routes = routes
        celery_app.amqp.flush_routes()
        celery_app.amqp.router = celery_app.amqp.Router()
        with celery_app.connection_for_write() as broker:
            broker.default_channel.queue_delete(queue)

    assert not Entry.objects.filter(session_id=session.pk).exists()
    assert not Segment.objects.filter(session_id=session.pk).exists()
