"""Push new complete lines of local Pi session files to piweb's ``/api/sync/``.

Each file keeps its own progress (bytes, lines, last local id acknowledged), so what the web adds to a
session (labels, summaries, forks, runs) never stands in the way of Pi's next lines. Each file fails
alone: a conflict or a refused file is reported for that file and the others go on.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from . import __version__
from .files import Header, complete_lines, digest, find_header, line_id, parse_line
from .gitinfo import git_state
from .state import FileState, StateStore

log = logging.getLogger("piweb_sync")

__all__ = ["FileReport", "Pusher", "session_files"]

# ``status`` asks in JSON batches (the server takes up to 5,000 lines and a body of 8 MiB, which these
# lines fill to about 5 MiB once JSON-escaped). A push streams the file's bytes as they are, in requests
# of up to 64 MiB (the server's import limit is 256 MiB): a 50k-line file goes in one or two.
MAX_BATCH_LINES = 5000
MAX_BATCH_BYTES = 4 * 1024 * 1024
MAX_STREAM_BYTES = 64 * 1024 * 1024


class ServerUnavailable(Exception):
    """The server could not be reached or failed; the pass is retried later."""


@dataclass(frozen=True, slots=True)
class FileReport:
    path: Path
    status: str  # synced | behind | conflict | error | waiting
    pushed: int = 0
    reason: str = ""
    pending: int = 0  # complete lines not yet acknowledged


def session_files(root: Path) -> list[Path]:
    """Every ``*.jsonl`` under ``root`` (Pi keeps one folder per working directory)."""
    if root.is_file():
        return [root]
    return sorted(p for p in root.rglob("*.jsonl") if p.is_file())


class Pusher:
    """Push what is new in every session file under ``root``."""

    def __init__(self, *, http: httpx.Client, store: StateStore, root: Path) -> None:
        self.http = http
        self.store = store
        self.root = root
        self._seen: dict[str, tuple[int, int]] = {}  # path -> (size, mtime_ns) already handled

    # -- passes ---------------------------------------------------------------------------------------

    def push_once(self) -> list[FileReport]:
        """One pass over every file; a file that fails does not stop the others."""
        reports = []
        for path in session_files(self.root):
            try:
                reports.append(self.push_file(path))
            except ServerUnavailable:
                raise
            except OSError as exc:  # vanished or unreadable since the listing
                reports.append(FileReport(path, "error", reason=str(exc)))
        return reports

    def follow(self, *, interval: float = 1.0, stop: threading.Event | None = None) -> None:
        """Push every ``interval`` seconds until ``stop`` is set; an unreachable server is waited out."""
        stop = stop or threading.Event()
        down = False
        while not stop.is_set():
            try:
                self.push_once()
                if down:
                    log.warning("the server answers again")
                down = False
            except ServerUnavailable as exc:
                if not down:
                    log.warning("%s; retrying", exc)
                down = True
                self._seen.clear()
            stop.wait(interval)

    # -- one file -------------------------------------------------------------------------------------

    def push_file(self, path: Path) -> FileReport:
        key = str(path.resolve())
        state = self.store.get(key)
        info = path.stat()
        signature = (info.st_size, info.st_mtime_ns)
        if self._seen.get(key) == signature and state.status in ("synced", "conflict", "error"):
            return FileReport(path, state.status, reason=state.reason)
        if state.status in ("conflict", "error") and state.size_at_failure == info.st_size:
            self._seen[key] = signature
            return FileReport(path, state.status, reason=state.reason)
        data = path.read_bytes()
        header = find_header(data)
        if header is None:
            if any(parse_line(data[s:e]) for s, e in complete_lines(data, 0)):
                return self._fail(key, state, data, "error", "not a Pi session file (no session header)")
            return FileReport(path, "waiting")  # Pi has not written the header line yet
        self._place(state, data, header)
        fresh = state.lines == 0 and not state.reset and header.version >= 3
        if fresh and self._ask_cursor(path, state, data, header):
            self.store.save()  # the server's cursor is ours again: status reads it from the state
        if header.version < 3:
            report = self._push_whole(path, key, state, data, header)
        else:
            report = self._push_lines(path, key, state, data, header)
        if report.status == "synced":
            self._seen[key] = signature
        return report

    def check_file(self, path: Path) -> FileReport:
        """Ask the server what a push of the whole file would store, storing nothing (for ``status``).

        Used when this machine holds no progress for the file (state lost, or a file copied from another
        machine): the server matches every line by id, so the answer is exact whoever pushed last.
        """
        data = path.read_bytes()
        header = find_header(data)
        if header is None:
            return FileReport(path, "waiting")
        spans = list(complete_lines(data, header.end))
        new, conflicts = 0, []
        for first in range(0, max(len(spans), 1), MAX_BATCH_LINES):
            batch = spans[first : first + MAX_BATCH_LINES] if header.version >= 3 else spans
            start = batch[0][0] if batch else header.end
            body = {
                "header": header.text,
                "from": {"lines": first, "bytes": start, "lastId": None},
                "to": {"lines": first + len(batch), "bytes": batch[-1][1] if batch else header.end},
                "lines": [_text(data[s:e]) for s, e in batch],
                "reset": True,
                "dryRun": True,
            }
            response = self._request("POST", "/api/sync/", json=body)
            payload = _json(response)
            if response.status_code == 409 and payload.get("kind") == "cursor":
                return FileReport(path, "behind", reason="new file", pending=len(spans))
            if response.status_code != 200:
                return FileReport(path, "error", reason=str(payload.get("error") or response.status_code))
            new += int(payload.get("appended") or 0)
            conflicts += [str(i) for i in payload.get("conflicts") or []]
            if header.version < 3:
                break
        if conflicts:
            more = f" (and {len(conflicts) - 1} more)" if len(conflicts) > 1 else ""
            reason = f"entry {conflicts[0]} is stored on the server with different content{more}"
            return FileReport(path, "conflict", reason=reason, pending=new)
        return FileReport(path, "behind" if new else "synced", pending=new)

    def _place(self, state: FileState, data: bytes, header: Header) -> None:
        """Make the state's offset point at a line boundary of this file, noticing rewrites."""
        if state.session_id != header.session_id:
            if state.session_id:
                log.info("a different session now lives in this file; starting it from the top")
            _reset(state, header, rewind=False)
            return
        if state.bytes and state.bytes <= len(data) and digest(data[: state.bytes]) == state.digest:
            return
        if state.bytes:
            # Rewritten in place (Pi migrates old files when it opens them): find the last line we
            # sent by its id and go on after it; the server drops what it already holds.
            found = _position_after_id(data, header, state.last_id) if state.last_id else None
            if found is not None:
                state.bytes, state.lines = found
                state.digest = digest(data[: state.bytes])
                state.reset = True
                return
        _reset(state, header, rewind=bool(state.bytes))

    def _ask_cursor(self, path: Path, state: FileState, data: bytes, header: Header) -> bool:
        """A file we hold no progress for may be known to the server (state lost, or another machine).

        When the server's cursor is not a point of this file (another machine pushed last), the whole
        file is sent as a restart: the server recognises every line it holds by id and stores the rest.
        """
        response = self._request("GET", "/api/sync/", params={"piId": header.session_id})
        payload = _json(response) if response.status_code == 200 else {}
        cursor = payload.get("cursor")
        if isinstance(cursor, dict) and cursor.get("lines") and _at_cursor(state, data, header, cursor):
            log.info("%s: resuming at line %d as the server says", path, state.lines)
            return True
        if payload.get("sessionId"):
            state.reset = True
        return False

    def _push_whole(self, path: Path, key: str, state: FileState, data: bytes, header: Header) -> FileReport:
        """An old-version file goes in one request; the server migrates it as an import does."""
        spans = list(complete_lines(data, header.end))
        end = spans[-1][1] if spans else header.end
        if state.bytes >= end and state.status == "synced":
            return FileReport(path, "synced")
        lines = [_text(data[s:e]) for s, e in spans]
        return self._post(path, key, state, data, header, lines, end, len(spans), None)

    def _push_lines(self, path: Path, key: str, state: FileState, data: bytes, header: Header) -> FileReport:
        pushed = 0
        batch: list[tuple[int, int]] = []
        size = 0
        spans = list(complete_lines(data, state.bytes))
        if not spans:
            if state.status not in ("conflict", "error"):
                state.status, state.reason = "synced", ""
                self.store.save()
            return FileReport(path, state.status, reason=state.reason)
        # One running digest of the acknowledged prefix, not one hash of the whole prefix per batch.
        hasher = hashlib.sha256(data[: state.bytes])
        for index, span in enumerate(spans):
            batch.append(span)
            size += span[1] - span[0]
            if size < MAX_STREAM_BYTES and index < len(spans) - 1:
                continue
            last_id = next((i for s, e in reversed(batch) if (i := line_id(data[s:e]))), None)
            raw = data[batch[0][0] : batch[-1][1]]
            hasher.update(raw)
            report = self._post(
                path, key, state, data, header, raw, batch[-1][1], state.lines + len(batch), last_id,
                digest_after=hasher.copy().hexdigest(),
            )  # fmt: skip
            if report.status != "synced":
                return FileReport(path, report.status, pushed + report.pushed, report.reason, report.pending)
            pushed += report.pushed
            batch, size = [], 0
        return FileReport(path, "synced", pushed)

    def _post(
        self,
        path: Path,
        key: str,
        state: FileState,
        data: bytes,
        header: Header,
        lines: list[str] | bytes,
        end: int,
        end_lines: int,
        last_id: str | None,
        *,
        retried: bool = False,
        digest_after: str | None = None,
    ) -> FileReport:
        """Send lines (a list in JSON, or the file's bytes streamed after one JSON line of the rest)."""
        body: dict[str, Any] = {
            "header": header.text,
            "from": {"lines": state.lines, "bytes": state.bytes, "lastId": state.last_id},
            "to": {"lines": end_lines, "bytes": end},
            "reset": state.reset,
            "path": key,  # named by forks as their parentSession, as Pi names a source file
        }
        workspace = git_state(header.cwd) if header.cwd else None
        if workspace is not None:
            body["workspace"] = workspace  # the repository, branch and HEAD the session works in
        count = end_lines - state.lines
        if isinstance(lines, bytes):
            # The server answers once every line is stored: allow it time in proportion to the body.
            wait = httpx.Timeout(30.0, read=30.0 + 10.0 * len(lines) / (1024 * 1024))
            response = self._request(
                "POST",
                "/api/sync/",
                content=json.dumps(body).encode() + b"\n" + lines,
                headers={"Content-Type": "application/x-ndjson"},
                timeout=wait,
            )
        else:
            response = self._request("POST", "/api/sync/", json={**body, "lines": lines})
        payload = _json(response)
        if response.status_code == 200:
            state.session_id = header.session_id
            state.server_session = payload.get("sessionId")
            state.bytes, state.lines = end, end_lines
            cursor = payload.get("cursor") or {}
            state.last_id = cursor.get("lastId") if header.version < 3 else (last_id or state.last_id)
            state.digest = digest_after or digest(data[:end])
            state.reset = False
            state.status, state.reason, state.size_at_failure = "synced", "", -1
            self.store.save()
            appended = int(payload.get("appended") or 0)
            log.info("%s: %d new line(s) stored, %d already there", path, appended, count - appended)
            listed = payload.get("skippedLines") or []
            for skipped in listed:
                log.info("%s: line %s skipped: %s", path, skipped.get("line"), skipped.get("reason"))
            unlisted = int(payload.get("skippedCount") or 0) - len(listed)
            if unlisted > 0:
                log.info("%s: %d more line(s) skipped", path, unlisted)
            return FileReport(path, "synced", appended)
        if response.status_code == 409 and payload.get("kind") == "cursor" and not retried:
            # The server holds a different amount of this file than we think: go by its cursor.
            cursor = payload.get("cursor") or {}
            if not _at_cursor(state, data, header, cursor):
                _reset(state, header, rewind=True)
            log.info("%s: resuming at line %d as the server says", path, state.lines)
            spans = list(complete_lines(data, state.bytes))
            if header.version < 3 or not spans:
                return self._post(
                    path, key, state, data, header, lines, end, end_lines, last_id, retried=True
                )
            self.store.save()
            return self._push_lines(path, key, state, data, header)
        reason = str(payload.get("error") or f"HTTP {response.status_code}")
        status = "conflict" if response.status_code == 409 else "error"
        return self._fail(key, state, data, status, reason)

    def _fail(self, key: str, state: FileState, data: bytes, status: str, reason: str) -> FileReport:
        if (state.status, state.reason) != (status, reason):
            log.warning("%s: %s: %s", key, status, reason)
        state.status, state.reason, state.size_at_failure = status, reason, len(data)
        self.store.save()
        pending = sum(1 for _ in complete_lines(data, max(state.bytes, 0)))
        return FileReport(Path(key), status, reason=reason, pending=pending)

    def _request(self, method: str, url: str, **kwargs: Any) -> httpx.Response:
        try:
            response = self.http.request(method, url, **kwargs)
        except httpx.HTTPError as exc:
            raise ServerUnavailable(f"cannot reach {self.http.base_url}: {exc}") from exc
        if response.status_code >= 500 or response.status_code in (401, 403, 429):
            detail = _json(response).get("error") or response.reason_phrase
            raise ServerUnavailable(f"{self.http.base_url} answered {response.status_code}: {detail}")
        return response


def _reset(state: FileState, header: Header, *, rewind: bool) -> None:
    """Start the file over from the line after its header; ``rewind`` lets the server drop repeats."""
    state.session_id = header.session_id
    state.bytes, state.lines, state.last_id = header.end, 0, None
    state.digest = ""
    state.reset = rewind
    state.status, state.reason, state.size_at_failure = "behind", "", -1


def _at_cursor(state: FileState, data: bytes, header: Header, cursor: dict[str, Any]) -> bool:
    """Move to the server's cursor when it names a line boundary of this file holding its last id."""
    offset, lines, last = cursor.get("bytes"), cursor.get("lines"), cursor.get("lastId")
    if not isinstance(offset, int) or not isinstance(lines, int) or not header.end <= offset <= len(data):
        return False
    spans = [span for span in complete_lines(data, header.end) if span[1] <= offset]
    if (spans[-1][1] if spans else header.end) != offset or len(spans) != lines:
        return False
    ids = [i for s, e in spans if (i := line_id(data[s:e]))]
    if header.version >= 3 and (ids[-1] if ids else None) != last:
        return False
    state.bytes, state.lines, state.last_id = offset, lines, last
    state.digest = digest(data[:offset])
    state.reset = False
    return True


def _position_after_id(data: bytes, header: Header, entry_id: str) -> tuple[int, int] | None:
    found = None
    for count, (start, end) in enumerate(complete_lines(data, header.end), start=1):
        if line_id(data[start:end]) == entry_id:
            found = (end, count)
    return found


def _text(raw: bytes) -> str:
    return (
        raw[:-1].decode("utf-8", errors="replace") if raw.endswith(b"\n") else raw.decode("utf-8", "replace")
    )


def _json(response: httpx.Response) -> dict[str, Any]:
    try:
        value = response.json()
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def make_client(server: str, token: str, *, timeout: float = 30.0) -> httpx.Client:
    """An HTTP client for the server; the token goes in a header, never in a URL."""
    headers = {"Authorization": f"Bearer {token}", "User-Agent": f"piweb-sync/{__version__}"}
    return httpx.Client(base_url=server, headers=headers, timeout=timeout)
