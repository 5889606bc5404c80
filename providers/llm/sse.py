"""Server-sent events: split a line stream into (event, data) pairs."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import cast


@dataclass(frozen=True, slots=True)
class SseEvent:
    event: str  # "message" when the server names none
    data: str


def iter_sse(lines: Iterable[str], *, skipped: list[str] | None = None) -> Iterator[SseEvent]:
    """Yield each event; lines that are not SSE fields go to ``skipped`` so callers can report them."""
    event, data = "", cast("list[str]", [])
    for raw in lines:
        line = raw.rstrip("\r\n")
        if not line:
            if data:
                yield SseEvent(event or "message", "\n".join(data))
            event, data = "", []
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "data":
            data.append(value)
        elif name == "event":
            event = value
        elif name not in ("id", "retry") and skipped is not None:
            skipped.append(line)
    # A final event without its blank line still counts: some servers close right after it.
    if data:
        yield SseEvent(event or "message", "\n".join(data))
