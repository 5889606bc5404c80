"""Redis restarted under subscribed viewers: their sockets come back and they end with every entry.

Each viewer speaks the session page's protocol over a real WebSocket to a real ASGI server: it keeps the
highest seq it holds, fetches ``entries?since=<last id>`` whenever a ``state`` or ``event`` message
names a later seq, and reconnects with doubling backoff when the socket closes. It never polls on a
timer, so it only converges if live events flow again after the restart.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from dataclasses import dataclass, field

import httpx
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import WebSocketException

from tests.procs import wait_until

from .stack import Stack

pytestmark = [pytest.mark.slow, pytest.mark.background, pytest.mark.timeout(240)]

PASSWORD = "pw-for-faults"
VIEWERS = 3


@dataclass(slots=True)
class Viewer:
    """One browser tab's view of a session, driven by the socket as the page's script drives it."""

    name: str
    base_url: str
    cookies: httpx.Cookies
    pk: int
    last_seq: int = -1
    cursor: str | None = None
    entries: list[str] = field(default_factory=list)
    connects: int = 0
    events: int = 0
    last_event_at: float = 0.0
    catching: asyncio.Lock = field(default_factory=asyncio.Lock)

    async def catch_up(self, http: httpx.AsyncClient) -> None:
        async with self.catching:
            while True:
                params = {"limit": "200", **({"since": self.cursor} if self.cursor else {})}
                body = (await http.get(f"/api/sessions/{self.pk}/entries/", params=params)).json()
                for row in body["entries"]:
                    self.entries.append(row["id"])
                    self.cursor = row["id"]
                    self.last_seq = max(self.last_seq, row["seq"])
                if not body["hasMore"]:
                    return

    async def run(self, stop: asyncio.Event) -> None:
        ws_url = self.base_url.replace("http", "ws", 1) + f"/ws/sessions/{self.pk}/"
        cookie = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        delay = 0.25
        async with httpx.AsyncClient(base_url=self.base_url, cookies=self.cookies, timeout=5) as http:
            while not stop.is_set():
                try:
                    async with connect(
                        ws_url, origin=self.base_url, additional_headers={"Cookie": cookie}, open_timeout=3
                    ) as socket:
                        self.connects += 1
                        delay = 0.25
                        async for raw in socket:
                            message = json.loads(raw)
                            if message["type"] == "event":
                                self.events += 1
                                self.last_event_at = time.monotonic()
                            seq = message.get("seq")
                            if (
                                message["type"] in ("state", "event")
                                and isinstance(seq, int)
                                and seq > self.last_seq
                            ):
                                await self.catch_up(http)
                            if stop.is_set():
                                return
                except (OSError, WebSocketException, httpx.HTTPError, TimeoutError):
                    pass
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), delay)
                delay = min(delay * 2, 4.0)


def login(stack: Stack) -> httpx.Cookies:
    """Log in through the login form and return the session cookies a browser would hold."""
    with httpx.Client(base_url=stack.base_url, timeout=5) as http:
        http.get("/accounts/login/")
        response = http.post(
            "/accounts/login/",
            data={
                "username": "writer",
                "password": PASSWORD,
                "csrfmiddlewaretoken": http.cookies["csrftoken"],
            },
            headers={"Referer": stack.base_url + "/accounts/login/"},
        )
        assert response.status_code in (200, 302) and "sessionid" in http.cookies, response.text[:300]
        return http.cookies


def server_ids(stack: Stack, pk: int) -> list[str]:
    ids: list[str] = []
    with stack.client() as http:
        cursor: str | None = None
        while True:
            params = {"limit": "500", **({"since": cursor} if cursor else {})}
            body = http.get(f"/api/sessions/{pk}/entries/", params=params).json()
            ids += [row["id"] for row in body["entries"]]
            cursor = ids[-1] if ids else None
            if not body["hasMore"]:
                return ids


async def append_steadily(stack: Stack, pk: int, stop: asyncio.Event, acked: list[str]) -> None:
    """Append one entry every 50 ms until stopped; failures while Redis is down must not happen."""
    async with httpx.AsyncClient(
        base_url=stack.base_url, headers={"Authorization": f"Token {stack.token}"}, timeout=5
    ) as http:
        n = 0
        while not stop.is_set():
            entry = {"type": "custom", "customType": "tick", "id": f"t{n}", "data": {"n": n}}
            response = await http.post(f"/api/sessions/{pk}/append/", json={"entries": [entry]})
            assert response.status_code == 201, response.text
            acked.append(f"t{n}")
            n += 1
            await asyncio.sleep(0.05)


def test_viewers_reconnect_and_converge_after_redis_restarts(stack: Stack) -> None:
    stack.start_web()
    with stack.client() as http:
        pk = http.post("/api/sessions/", json={"cwd": "/repo"}).json()["id"]
    cookies = login(stack)
    viewers = [Viewer(f"v{i}", stack.base_url, cookies, pk) for i in range(VIEWERS)]
    acked: list[str] = []
    timings: dict[str, float] = {}

    async def scenario() -> None:
        stop_viewers, stop_writer = asyncio.Event(), asyncio.Event()
        tasks = [asyncio.create_task(v.run(stop_viewers)) for v in viewers]
        await asyncio.to_thread(
            wait_until, lambda: all(v.connects for v in viewers), 15, "viewers to connect"
        )
        writer = asyncio.create_task(append_steadily(stack, pk, stop_writer, acked))
        for restart in range(2):
            await asyncio.sleep(1.5)
            killed = time.monotonic()
            await asyncio.to_thread(stack.redis.service.crash_and_restart)
            # Live events must flow again: every viewer sees one after the restart, without polling.
            await asyncio.to_thread(
                wait_until,
                lambda since=killed: all(v.last_event_at > since for v in viewers),
                30,
                "events after the restart",
            )
            timings[f"restart{restart}"] = time.monotonic() - killed
        await asyncio.sleep(1.0)
        stop_writer.set()
        await writer
        final = await asyncio.to_thread(server_ids, stack, pk)
        await asyncio.to_thread(
            wait_until, lambda: all(v.entries == final for v in viewers), 15, "viewers to converge"
        )
        stop_viewers.set()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        assert final == acked

    asyncio.run(scenario())
    for viewer in viewers:
        assert len(viewer.entries) == len(set(viewer.entries)), "a viewer holds an entry twice"
    print(
        f"\n{len(acked)} appends across 2 Redis restarts; live events again after "
        + ", ".join(f"{t:.2f}s" for t in timings.values())
        + "; connects per viewer "
        + str([v.connects for v in viewers])
        + "; events per viewer "
        + str([v.events for v in viewers])
    )
