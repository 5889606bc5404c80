"""Server-sent events: split a line stream into (event, data) pairs."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import cast


@dataclass(frozen=True, slots=True)
class SseEvent:
    event: str  # "message" when the server names none
    data: str
    raw: tuple[str, ...] = ()  # every line of the event as received (Pi quotes them when one is unreadable)


def iter_sse(lines: Iterable[str]) -> Iterator[SseEvent]:
    """Yield each event: one with data, or only a name (its data is then empty), as Pi's readers do."""
    event, data, raw = "", cast("list[str]", []), cast("list[str]", [])
    for line in lines:
        line = line.rstrip("\r\n")
        if not line:
            if data or event:
                yield SseEvent(event or "message", "\n".join(data), tuple(raw))
            event, data, raw = "", [], []
            continue
        raw.append(line)
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "data":
            data.append(value)
        elif name == "event":
            event = value
    # A final event without its blank line still counts: some servers close right after it.
    if data or event:
        yield SseEvent(event or "message", "\n".join(data), tuple(raw))
