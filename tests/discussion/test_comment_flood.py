"""One person posting comment after comment that mention a teammate: the posts are limited, the mail batched.

Real servers: a daphne web process and a Celery worker on a private Redis, an SMTP server on loopback.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from discussion.models import Notification
from piweb.workers import ALL_QUEUES
from tests.faults.stack import VENV_BIN, PrivateRedis, Service, missing_tools
from tests.live.servers import AsgiServer, running, server_env, token_for

from .conftest import Crew
from .smtp import Inbox, smtp_server

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240), pytest.mark.django_db(transaction=True)]

BATCH_SECONDS = 4


@pytest.fixture(scope="module")
def servers(
    django_db_setup: None, django_db_blocker: Any, tmp_path_factory: Any
) -> Iterator[tuple[AsgiServer, Inbox]]:
    reason = missing_tools()
    if reason:
        pytest.skip(reason)
    tmp_path: Path = tmp_path_factory.mktemp("flood")
    redis = PrivateRedis(tmp_path)
    with smtp_server() as (smtp_port, inbox):
        with django_db_blocker.unblock():
            env = server_env(
                redis.url,
                EMAIL_HOST="127.0.0.1",
                EMAIL_PORT=str(smtp_port),
                PIWEB_MAIL_BATCH_SECONDS=str(BATCH_SECONDS),
                PIWEB_COMMENT_RATE="12/min",
            )
        web = AsgiServer(env, tmp_path)
        log = tmp_path / "worker.log"
        worker = Service(
            "worker",
            [
                *(str(VENV_BIN / "celery"), "-A", "piweb", "worker", "--pool=solo", "--loglevel=INFO"),
                *("-Q", ",".join(ALL_QUEUES), "--without-gossip", "--without-mingle", "--without-heartbeat"),
            ],
            env,
            log,
            lambda: log.exists() and b" ready." in log.read_bytes(),
        )
        with running(redis, web):
            try:
                worker.start()
                yield web, inbox
            finally:
                worker.stop()


def _post(http: httpx.Client, crew: Crew, body: str) -> httpx.Response:
    return http.post(f"/api/sessions/{crew.session.pk}/comments/", json={"entryId": "a2", "body": body})


def test_forty_mentions_in_seconds_are_limited_and_mailed_in_two_messages(
    crew: Crew, servers: tuple[AsgiServer, Inbox]
) -> None:
    web, inbox = servers
    inbox.messages.clear()
    http = httpx.Client(
        base_url=web.base_url, timeout=20, headers={"Authorization": f"Token {token_for(crew.editor)}"}
    )
    answers = [_post(http, crew, f"@vera look at this, number {n}") for n in range(40)]

    accepted = [a for a in answers if a.status_code == 201]
    refused = [a for a in answers if a.status_code == 429]
    assert len(accepted) == 12 and len(refused) == 28
    assert 1 <= int(refused[0].headers["Retry-After"]) <= 60
    assert refused[0].json()["retryAfter"] == int(refused[0].headers["Retry-After"])
    assert "Too many comments" in refused[0].json()["error"]
    assert Notification.objects.filter(recipient=crew.viewer).count() == 12

    # The first mention leaves at once; the other eleven wait for the batch and leave together. On a busy
    # machine the forty posts can outlast the batch window, so the two mails are told apart by what they say.
    both = inbox.wait(2, timeout=BATCH_SECONDS + 20)
    assert len(both) == 2
    single = [m for _, m in both if "eddie mentioned you" in m["Subject"]]
    batched = [(to, m) for to, m in both if "11 new comments for you" in m["Subject"]]
    assert len(single) == 1 and len(batched) == 1
    to, batch = batched[0]
    assert to == ["vera@example.test"]
    text = batch.get_payload(decode=True).decode()
    assert all(f"number {n}" in text for n in range(1, 12))
    assert "number 0" not in text  # the first mention was mailed alone, not again in the batch
    time.sleep(BATCH_SECONDS + 1)
    assert len(inbox.messages) == 2  # nothing sent twice


def test_a_comment_read_before_its_batch_leaves_is_not_mailed(
    crew: Crew, servers: tuple[AsgiServer, Inbox]
) -> None:
    web, inbox = servers
    inbox.messages.clear()
    http = httpx.Client(
        base_url=web.base_url, timeout=20, headers={"Authorization": f"Token {token_for(crew.owner)}"}
    )
    assert _post(http, crew, "@vera first").status_code == 201
    assert len(inbox.wait(1, timeout=20)) == 1
    assert _post(http, crew, "@vera second").status_code == 201
    assert _post(http, crew, "@vera third").status_code == 201
    # Vera reads her inbox before the batch is due: those lines are not mailed.
    vera = httpx.Client(
        base_url=web.base_url, timeout=20, headers={"Authorization": f"Token {token_for(crew.viewer)}"}
    )
    assert vera.post("/api/inbox/read/", json={"all": True}).json() == {"unread": 0}
    time.sleep(BATCH_SECONDS + 3)
    assert len(inbox.messages) == 1
