"""Two installations on one Redis, in two databases, never hear each other's live events.

Redis pub/sub channels belong to the server, not to a database, so the channel layer's prefix names the
database (``piweb.config``); without it a session's event would reach another installation's sockets.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from django.conf import settings

from piweb import config

pytestmark = pytest.mark.skipif(not str(settings.CELERY_BROKER_URL).startswith("redis"), reason="needs Redis")


def _layer(url: str) -> Any:
    from channels_redis.pubsub import RedisPubSubChannelLayer

    conf = config.channel_layers_config({"REDIS_URL": url}, base_dir=settings.BASE_DIR)["default"]
    return RedisPubSubChannelLayer(**conf["CONFIG"])


def test_a_group_event_reaches_only_its_own_database() -> None:
    base = str(settings.CELERY_BROKER_URL).rpartition("/")[0]

    async def scenario() -> tuple[dict[str, object], bool]:
        ours, theirs = _layer(f"{base}/2"), _layer(f"{base}/3")
        mine, other = await ours.new_channel(), await theirs.new_channel()
        await ours.group_add("session.1", mine)
        await theirs.group_add("session.1", other)
        await asyncio.sleep(0.2)  # both subscriptions are in place
        await ours.group_send("session.1", {"type": "session.event", "event": "leaf_moved"})
        heard = await asyncio.wait_for(ours.receive(mine), 5)
        try:
            await asyncio.wait_for(theirs.receive(other), 1)
            leaked = True
        except TimeoutError:
            leaked = False
        await ours.flush()
        await theirs.flush()
        return heard, leaked

    heard, leaked = asyncio.run(scenario())
    assert heard["event"] == "leaf_moved"
    assert leaked is False
