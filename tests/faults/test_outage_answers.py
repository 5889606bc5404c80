"""What clients are told while a service is down: never a server error.

- PostgreSQL killed under appending writers: each append is stored (201) or refused with 503, a JSON
  body and ``Retry-After``, which sync clients and scripts retry; never a 500 HTML page.
- Redis restarted: the first socket a web process opens afterwards is accepted (or refused cleanly),
  never answered with a 500.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
from collections import Counter

import httpx
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus
from websockets.typing import Subprotocol

from tests.procs import wait_until

from .stack import Stack

pytestmark = [pytest.mark.slow, pytest.mark.background, pytest.mark.timeout(150)]

WRITERS = 4


def append_until(
    stack: Stack, pk: int, name: str, stop: threading.Event, answers: list[httpx.Response]
) -> None:
    with stack.client(timeout=10) as http:
        n = 0
        while not stop.is_set():
            entry = {"type": "custom", "customType": "tick", "id": f"{name}-{n}", "data": {"n": n}}
            n += 1
            with contextlib.suppress(httpx.HTTPError):  # a connection closed on us: no answer to judge
                answers.append(http.post(f"/api/sessions/{pk}/append/", json={"entries": [entry]}))
            stop.wait(0.02)


def test_appends_during_a_database_outage_answer_503_with_retry_after(stack: Stack) -> None:
    # Requests wait a second for a connection before giving up, so the outage is answered while it lasts.
    stack.env["PIWEB_DB_POOL_TIMEOUT"] = "1"
    stack.start_web()
    with stack.client() as http:
        pk = http.post("/api/sessions/", json={"cwd": "/repo"}).json()["id"]
    answers: list[httpx.Response] = []
    stop = threading.Event()
    writers = [
        threading.Thread(target=append_until, args=(stack, pk, f"w{i}", stop, answers))
        for i in range(WRITERS)
    ]
    for thread in writers:
        thread.start()
    try:
        for _ in range(2):
            time.sleep(1.0)
            stack.postgres.service.kill()
            time.sleep(3.0)
            stack.postgres.service.start()
            wait_until(stack.web_healthy, 30, "the web process after the database came back")
        time.sleep(0.5)
    finally:
        stop.set()
        for thread in writers:
            thread.join(timeout=30)

    statuses = Counter(answer.status_code for answer in answers)
    wrong = [
        (answer.status_code, answer.headers.get("content-type"), answer.text[:120])
        for answer in answers
        if answer.status_code != 201
        and not (
            answer.status_code == 503
            and answer.headers.get("content-type") == "application/json"
            and int(answer.headers.get("retry-after", "0")) > 0
            and "error" in answer.json()
        )
    ]
    assert wrong == [], f"{len(wrong)} answers of {len(answers)} ({dict(statuses)}): {wrong[:5]}"
    assert statuses[503] > 0, f"the outages went unnoticed: {dict(statuses)}"
    assert statuses[201] > 0
    print(f"\n{len(answers)} appends across two database outages: {dict(statuses)}")


async def first_handshake(stack: Stack, pk: int) -> int:
    """Open a socket as the session page does; return the HTTP status of the handshake (101 accepted)."""
    url = stack.base_url.replace("http", "ws", 1) + f"/ws/sessions/{pk}/"
    try:
        protocols = [Subprotocol(f"piweb.token.{stack.token}"), Subprotocol("piweb")]
        async with connect(url, subprotocols=protocols, open_timeout=10) as socket:
            message = json.loads(await asyncio.wait_for(socket.recv(), 10))
            assert message["type"] == "state"
            return 101
    except InvalidStatus as refused:
        return refused.response.status_code


def test_the_first_socket_after_a_redis_restart_is_not_a_server_error(stack: Stack) -> None:
    stack.start_web()
    with stack.client() as http:
        pk = http.post("/api/sessions/", json={"cwd": "/repo"}).json()["id"]
    assert asyncio.run(first_handshake(stack, pk)) == 101
    answers = []
    for _ in range(3):
        stack.redis.service.crash_and_restart()
        answers.append(asyncio.run(first_handshake(stack, pk)))
    assert 500 not in answers, answers
    # Failing cleanly would be allowed; accepting is what a page needs, and what it gets.
    assert answers == [101, 101, 101], answers
