"""The sync client: follows local Pi session files and pushes their new complete lines to a piweb server.

State (per file: bytes consumed and the last entry id the server acknowledged) is saved after every
acknowledged batch. A torn last line is left for the next poll. After a crash between the server's
acknowledgement and the state save, the server's cursor tells the client where to resume.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

log = logging.getLogger(__name__)

__all__ = ["FileState", "SyncClient"]

MAX_BATCH_LINES = 500
MAX_BATCH_BYTES = 4 * 1024 * 1024


@dataclass(slots=True)
class FileState:
    offset: int = 0  # bytes of the file already acknowledged (always at a line boundary)
    last_id: str | None = None
    header: str | None = None


class SyncClient:
    """Push new lines of every ``*.jsonl`` under ``root`` to ``server`` with an API token."""

    def __init__(
        self, *, server: str, token: str, root: Path, state_path: Path, client: httpx.Client | None = None
    ):
        self.root = root
        self.state_path = state_path
        self.http = client or httpx.Client(base_url=server.rstrip("/"), timeout=30.0)
        self.http.headers["Authorization"] = f"Token {token}"
        self.state: dict[str, FileState] = self._load_state()

    # -- state -------------------------------------------------------------------------------------

    def _load_state(self) -> dict[str, FileState]:
        try:
            raw = json.loads(self.state_path.read_text(encoding="utf-8"))
        except (FileNotFoundError, ValueError):
            return {}
        return {path: FileState(**value) for path, value in raw.items()}

    def _save_state(self) -> None:
        data = {
            path: {"offset": s.offset, "last_id": s.last_id, "header": s.header}
            for path, s in self.state.items()
        }
        self.state_path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.state_path.parent, prefix=".pi-sync-")
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(data, handle)
        os.replace(tmp, self.state_path)  # atomic: a crash leaves the old state or the new one

    # -- syncing -------------------------------------------------------------------------------------

    def files(self) -> list[Path]:
        return sorted(p for p in self.root.rglob("*.jsonl") if p.is_file())

    def sync_once(self) -> int:
        """Push what is new in every file; return the number of lines the server accepted."""
        return sum(self.sync_file(path) for path in self.files())

    def run(self, *, interval: float = 1.0, stop: threading.Event | None = None) -> None:
        """Poll until ``stop`` is set."""
        stop = stop or threading.Event()
        while not stop.is_set():
            try:
                self.sync_once()
            except httpx.HTTPError as exc:
                log.warning("sync failed, will retry: %s", exc)
            stop.wait(interval)

    def sync_file(self, path: Path) -> int:
        key = str(path.resolve())
        state = self.state.setdefault(key, FileState())
        data = path.read_bytes()
        if len(data) < state.offset:
            log.warning("%s shrank; starting over from the server's cursor", path)
            state.offset = 0
        if state.header is None:
            header, body_start = _find_header(data)
            if header is None:
                return 0  # no complete header line yet
            state.header, state.offset = header, max(state.offset, body_start)
        accepted = 0
        for batch, end in _batches(data, state.offset):
            response = self.http.post(
                "/api/sync/", json={"header": state.header, "after": state.last_id, "lines": batch}
            )
            if response.status_code == 409:
                server_last = response.json().get("lastEntryId")
                state.offset, state.last_id = _position_after(data, server_last)
                self._save_state()
                return accepted + self.sync_file(path)
            response.raise_for_status()
            body = response.json()
            accepted += int(body.get("appended", 0))
            state.offset, state.last_id = end, body.get("lastEntryId")
            self._save_state()
        return accepted


def _find_header(data: bytes) -> tuple[str | None, int]:
    """Return the first complete line that parses to a value (it must be the header) and its end offset."""
    pos = 0
    while True:
        end = data.find(b"\n", pos)
        if end < 0:
            return None, 0
        text = data[pos:end].decode("utf-8", errors="replace")
        if text.strip():
            try:
                json.loads(text)
            except ValueError:
                pos = end + 1
                continue
            return text.rstrip("\r"), end + 1
        pos = end + 1


def _batches(data: bytes, offset: int) -> Iterator[tuple[list[str], int]]:
    """Yield (complete lines, end offset) after ``offset``; a torn last line is not included."""
    batch: list[str] = []
    size = 0
    pos = offset
    while True:
        end = data.find(b"\n", pos)
        if end < 0:
            break
        batch.append(data[pos:end].decode("utf-8", errors="replace"))
        size += end - pos
        pos = end + 1
        if len(batch) >= MAX_BATCH_LINES or size >= MAX_BATCH_BYTES:
            yield batch, pos
            batch, size = [], 0
    if batch:
        yield batch, pos


def _position_after(data: bytes, entry_id: str | None) -> tuple[int, str | None]:
    """Return the offset just after the line holding ``entry_id`` (or after the header when None)."""
    _, body_start = _find_header(data)
    if entry_id is None:
        return body_start, None
    pos = body_start
    found: tuple[int, str | None] | None = None
    while True:
        end = data.find(b"\n", pos)
        if end < 0:
            break
        try:
            value: Any = json.loads(data[pos:end])
        except ValueError:
            value = None
        if isinstance(value, dict) and value.get("id") == entry_id and value.get("type") != "session":
            found = (end + 1, entry_id)
        pos = end + 1
    if found is None:
        raise RuntimeError(
            f"the server's last entry {entry_id!r} is not in the local file; refusing to guess"
        )
    return found
