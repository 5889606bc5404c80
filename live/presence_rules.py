"""Who has a session open, and which node each of them has selected.

Each open socket is one viewer, kept until it leaves or until its heartbeat lapses (``expires``): a
tab whose connection died without a goodbye disappears once its last heartbeat is older than the TTL.
Members of the session see every viewer; a share-link holder is shown to them as "link visitor" (never
with anything of the link) and sees no one: who is on the team is not the link's to know. A Pi writing
the session (the Pi package, through the sync API) is a viewer of kind "pi": its user's name, the device
it runs on, and the entry it wrote last as its node.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

__all__ = ["MAX_NODE_CHARS", "Viewer", "decode", "encode", "live", "roster", "split_expired"]

MAX_NODE_CHARS = 255  # the cap on entry ids


@dataclass(frozen=True, slots=True, kw_only=True)
class Viewer:
    """One open socket on a session."""

    key: str  # a random id of the socket (never its channel name or credentials)
    kind: str  # "user", "link" or "pi" (a Pi on a device writing the session as it works)
    user_id: int | None
    name: str  # the user's display name; "" for a link visitor
    node: str | None  # the entry selected in that tab
    expires: float  # seconds since the epoch: gone after this unless a heartbeat comes
    device: str = ""  # where a "pi" writer runs, as its package names it


def encode(viewer: Viewer) -> str:
    return json.dumps(asdict(viewer), separators=(",", ":"))


def decode(text: str | bytes) -> Viewer | None:
    """Return the stored viewer, or None for a value that is not one (skipped, never fatal)."""
    try:
        value = json.loads(text)
        return Viewer(**value) if isinstance(value, dict) else None
    except (ValueError, TypeError):
        return None


def split_expired(viewers: Iterable[Viewer], now: float) -> tuple[list[Viewer], list[Viewer]]:
    """Return (live, expired) viewers at ``now``."""
    alive: list[Viewer] = []
    expired: list[Viewer] = []
    for viewer in viewers:
        (alive if viewer.expires > now else expired).append(viewer)
    return alive, expired


def live(viewers: Iterable[Viewer], now: float) -> list[Viewer]:
    return split_expired(viewers, now)[0]


def roster(viewers: Iterable[Viewer]) -> list[dict[str, Any]]:
    """Return what members are shown: one item per open tab, people by name, link visitors last."""
    shown = [
        {
            "key": v.key,
            "kind": v.kind,
            "userId": v.user_id if v.kind != "link" else None,
            "name": v.name if v.kind != "link" else "link visitor",
            "node": v.node,
            **({"device": v.device} if v.kind == "pi" else {}),
        }
        for v in viewers
    ]
    order = {"user": 0, "pi": 1}
    return sorted(shown, key=lambda item: (order.get(item["kind"], 2), item["name"].casefold(), item["key"]))
