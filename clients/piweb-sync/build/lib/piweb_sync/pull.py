"""Write a piweb session into Pi's own folder layout and file naming, so ``pi --resume`` lists it.

A file that is already there (a session pushed from this machine) is merged, not overwritten: the lines
the server has and the file lacks are appended in the server's order, and Pi resumes at the last one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

import httpx

from .config import pi_session_dir_for
from .files import complete_lines, digest, find_header, line_id
from .state import StateStore

__all__ = ["PullError", "PullResult", "pi_file_name", "pull"]


class PullError(Exception):
    """The session could not be fetched or would overwrite different local work."""


@dataclass(frozen=True, slots=True)
class PullResult:
    path: Path
    written: int  # lines written (all of them for a new file, the missing ones for a merge)
    created: bool


def pi_file_name(timestamp: str, session_id: str) -> str:
    """Pi's name for a session file: the header timestamp with ``:`` and ``.`` as ``-``, then the id."""
    return f"{re.sub(r'[:.]', '-', timestamp)}_{session_id}.jsonl"


def _session_number(http: httpx.Client, session: str) -> int:
    """Accept a server session number, a page or API URL holding one, or a Pi session id."""
    if session.isdigit():
        return int(session)
    if "://" in session:
        match = re.search(r"/sessions/(\d+)", urlparse(session).path)
        if match:
            return int(match.group(1))
        raise PullError(f"no session number in {session}")
    response = http.get("/api/sync/", params={"piId": session})
    if response.status_code != 200 or not response.json().get("sessionId"):
        raise PullError(f"the server has no session of yours with Pi id {session}")
    return int(response.json()["sessionId"])


def pull(
    http: httpx.Client, session: str, *, target_dir: Path | None, at: str | None, store: StateStore
) -> PullResult:
    number = _session_number(http, session)
    params = {"leaf": at} if at else {}
    try:
        response = http.get(f"/api/sessions/{number}/export/", params=params)
    except httpx.HTTPError as exc:
        raise PullError(f"cannot reach {http.base_url}: {exc}") from exc
    if response.status_code != 200:
        try:
            detail = response.json().get("error")
        except ValueError:
            detail = response.reason_phrase
        raise PullError(f"session {number}: {detail or response.status_code}")
    data = response.content
    header = find_header(data)
    if header is None:
        raise PullError(f"session {number}: the server sent no session header")
    folder = target_dir if target_dir is not None else pi_session_dir_for(header.cwd)
    path = folder / pi_file_name(header.timestamp, header.session_id)
    folder.mkdir(parents=True, exist_ok=True)
    if not path.exists():
        tmp = path.with_name(f".{path.name}.part")
        tmp.write_bytes(data)
        tmp.replace(path)  # Pi never sees half a file
        _record(store, path, data)
        return PullResult(path, sum(1 for _ in complete_lines(data, header.end)), True)
    return _merge(path, data, store)


def _merge(path: Path, server: bytes, store: StateStore) -> PullResult:
    local = path.read_bytes()
    local_header, server_header = find_header(local), find_header(server)
    assert server_header is not None
    if local_header is None or local_header.session_id != server_header.session_id:
        raise PullError(f"{path} holds another session; pull into another folder with --dir")
    if not local.endswith(b"\n") and local:
        raise PullError(f"{path} ends in a line Pi is still writing; try again when Pi is idle")
    local_lines = {}
    local_raw = set()
    for start, end in complete_lines(local, local_header.end):
        raw = local[start:end].rstrip(b"\r\n")
        local_raw.add(raw)
        entry_id = line_id(raw)
        if entry_id is not None:
            local_lines[entry_id] = raw
    missing: list[bytes] = []
    for start, end in complete_lines(server, server_header.end):
        raw = server[start:end].rstrip(b"\r\n")
        entry_id = line_id(raw)
        if entry_id is None:
            if raw not in local_raw:
                missing.append(raw)
        elif entry_id not in local_lines:
            missing.append(raw)
        elif local_lines[entry_id] != raw:
            raise PullError(f"{path}: entry {entry_id} differs from the server's copy; nothing was written")
    if missing:
        before = store.get(str(path.resolve()))
        was_synced = before.status == "synced" and before.bytes == len(local)
        with path.open("ab") as handle:
            handle.write(b"".join(raw + b"\n" for raw in missing))
        if was_synced:
            _record(store, path, path.read_bytes())
    return PullResult(path, len(missing), False)


def _record(store: StateStore, path: Path, data: bytes) -> None:
    """Remember the pulled file as acknowledged, so ``push`` sends only what Pi writes next."""
    header = find_header(data)
    if header is None:
        return
    spans = list(complete_lines(data, header.end))
    state = store.get(str(path.resolve()))
    state.session_id = header.session_id
    state.bytes = spans[-1][1] if spans else header.end
    state.lines = len(spans)
    state.last_id = next((i for s, e in reversed(spans) if (i := line_id(data[s:e]))), None)
    state.digest = digest(data[: state.bytes])
    state.reset = True  # the server's own cursor for this session may count other lines
    state.status, state.reason, state.size_at_failure = "synced", "", -1
    store.save()
