"""The client's memory of each local file: how far the server has acknowledged it, and how it went.

Progress is the local file's own: bytes and lines acknowledged and the last local entry id among them.
It is saved after every acknowledged batch, atomically, so a crash leaves the old state or the new one.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

__all__ = ["FileState", "StateStore"]


@dataclass(slots=True)
class FileState:
    session_id: str = ""  # the Pi session id of the header
    server_session: int | None = None  # the server's session number
    bytes: int = 0  # file offset just past the last acknowledged line (0: nothing yet)
    lines: int = 0  # complete lines after the header acknowledged
    last_id: str | None = None  # newest entry id among them
    digest: str = ""  # sha256 of the file's first ``bytes`` bytes
    status: str = "new"  # synced | behind | conflict | error | new
    reason: str = ""  # why, for conflict and error
    reset: bool = False  # the next batch restarts the file: the server drops lines it already holds
    size_at_failure: int = -1  # file size when the conflict or error was seen (retry only once it changes)
    # The last pull's answer: its ETag, what it asked (the leaf) and the file's size right after it. A pull
    # asking the same of an unchanged file sends the tag, and a 304 means there is nothing to write.
    pull_etag: str = ""
    pull_query: str = ""
    pull_size: int = -1


@dataclass(slots=True)
class StateStore:
    """Per-server, per-file states in one JSON file."""

    path: Path
    server: str
    files: dict[str, FileState] = field(default_factory=dict)
    _all: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def load(cls, path: Path, server: str) -> StateStore:
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
        except (FileNotFoundError, ValueError):
            raw = {}
        if not isinstance(raw, dict):
            raw = {}
        known = {f.name for f in fields(FileState)}
        mine = (raw.get("servers") or {}).get(server) or {}
        files = {
            key: FileState(**{k: v for k, v in value.items() if k in known})
            for key, value in (mine.get("files") or {}).items()
            if isinstance(value, dict)
        }
        return cls(path=path, server=server, files=files, _all=raw)

    def get(self, key: str) -> FileState:
        if key not in self.files:
            # Another process (a ``pull`` beside a running ``push``) may have recorded it since.
            fresh = StateStore.load(self.path, self.server)
            self.files[key] = fresh.files.get(key) or FileState()
        return self.files[key]

    def save(self) -> None:
        """Write our files over what is on disk now, keeping the files other processes recorded."""
        on_disk = StateStore.load(self.path, self.server)
        self._all = on_disk._all
        files = {key: asdict(value) for key, value in on_disk.files.items()}
        files.update({key: asdict(value) for key, value in self.files.items()})
        servers = dict(self._all.get("servers") or {})
        servers[self.server] = {"files": files}
        self._all = {"version": 1, "servers": servers}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".state-")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(self._all, handle)
            os.replace(tmp, self.path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
