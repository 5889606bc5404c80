"""The embedded channel layer carries group events between processes through one SQLite file."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

from asgiref.sync import async_to_sync

from piweb.embedded_layer import EmbeddedChannelLayer


def test_events_sent_by_another_process_reach_this_ones_group_in_order(tmp_path: Path) -> None:
    path = str(tmp_path / "live.sqlite3")
    # Two layers on one file stand for the web process and the worker; the worker sends from its thread.
    web, worker = EmbeddedChannelLayer(path, poll_interval=0.01), EmbeddedChannelLayer(path)

    async def scenario() -> list[int]:
        channel = await web.new_channel()
        await web.group_add("session-1", channel)
        await worker.group_send("session-0", {"type": "session.event", "seq": -1})  # another session's

        def send_all() -> None:
            for seq in range(50):
                async_to_sync(worker.group_send)("session-1", {"type": "session.event", "seq": seq})

        sender = threading.Thread(target=send_all)
        sender.start()
        got = []
        async with asyncio.timeout(10):
            while len(got) < 50:
                got.append((await web.receive(channel))["seq"])
        sender.join()
        return got

    assert async_to_sync(scenario)() == list(range(50))


def test_a_process_that_joins_later_does_not_replay_old_events(tmp_path: Path) -> None:
    path = str(tmp_path / "live.sqlite3")
    web, worker = EmbeddedChannelLayer(path, poll_interval=0.01), EmbeddedChannelLayer(path)

    async def scenario() -> int:
        await worker.group_send("session-1", {"type": "session.event", "seq": 1})
        channel = await web.new_channel()
        await web.group_add("session-1", channel)
        await worker.group_send("session-1", {"type": "session.event", "seq": 2})
        async with asyncio.timeout(5):
            return int((await web.receive(channel))["seq"])

    assert async_to_sync(scenario)() == 2
