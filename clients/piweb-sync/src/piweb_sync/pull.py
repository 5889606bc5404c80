"""Write a piweb session into Pi's own folder layout and file naming, so ``pi --resume`` lists it.

A file that is already there (a session pushed from this machine) is merged, not overwritten: the lines
the server has and the file lacks are appended in the server's order, and the file ends at the server's
leaf (with a leaf marker when the leaf is not the last line), so Pi resumes where the session stands.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import httpx

from .config import pi_session_dir_for
from .files import complete_lines, digest, find_header, line_id, parse_line
from .state import FileState, StateStore

log = logging.getLogger("piweb_sync")

__all__ = ["PullError", "PullResult", "pi_file_name", "pull"]

LEAF_MARKER = "piweb.leaf"  # the custom entry type of a leaf marker (the server writes the same)


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
    query = at or ""
    known = _unchanged_since_pull(store, number, query)
    headers = {"If-None-Match": known[1].pull_etag} if known is not None else {}
    try:
        response = http.get(f"/api/sessions/{number}/export/", params=params, headers=headers)
    except httpx.HTTPError as exc:
        raise PullError(f"cannot reach {http.base_url}: {exc}") from exc
    if response.status_code == 304 and known is not None:
        log.info("%s is current: the server's copy has not changed since the last pull", known[0])
        return PullResult(known[0], 0, False)
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
        result = PullResult(path, sum(1 for _ in complete_lines(data, header.end)), True)
    else:
        result = _merge(path, data, store)
    _remember_answer(store, path, number, query, response.headers.get("ETag", ""))
    return result


def _unchanged_since_pull(store: StateStore, number: int, query: str) -> tuple[Path, FileState] | None:
    """The file a pull of the same session and leaf wrote last, if it has not changed since."""
    for key, state in store.files.items():
        if state.server_session != number or not state.pull_etag or state.pull_query != query:
            continue
        path = Path(key)
        try:
            size = path.stat().st_size
        except OSError:
            continue
        if size == state.pull_size:
            return path, state
    return None


def _remember_answer(store: StateStore, path: Path, number: int, query: str, etag: str) -> None:
    state = store.get(str(path.resolve()))
    state.server_session = state.server_session or number
    state.pull_etag, state.pull_query = etag, query
    state.pull_size = path.stat().st_size
    store.save()


def _merge(path: Path, server: bytes, store: StateStore) -> PullResult:
    """Append the server's lines the file lacks, then make the server's leaf the file's last line.

    Pi resumes a file at its last line. After the merge that is the server's last line, which need not
    be the session's leaf (a web run on another branch, a leaf moved in piweb, or Pi's own unpushed lines
    before it); a leaf marker under the leaf is then written last, as ``pull --at`` writes one.
    """
    local = path.read_bytes()
    local_header, server_header = find_header(local), find_header(server)
    assert server_header is not None
    if local_header is None or local_header.session_id != server_header.session_id:
        raise PullError(f"{path} holds another session; pull into another folder with --dir")
    if not local.endswith(b"\n") and local:
        raise PullError(f"{path} ends in a line Pi is still writing; try again when Pi is idle")
    local_lines: dict[str, bytes] = {}
    local_raw = set()
    markers: dict[str, str] = {}  # leaf markers of the file: their id -> the node they point at
    last_local: str | None = None
    for start, end in complete_lines(local, local_header.end):
        raw = local[start:end].rstrip(b"\r\n")
        local_raw.add(raw)
        value = parse_line(raw)
        entry_id = line_id(raw)
        if entry_id is not None:
            local_lines[entry_id] = raw
            last_local = entry_id
            if _is_marker(value):
                markers[entry_id] = value["parentId"]
    server_spans = [server[s:e].rstrip(b"\r\n") for s, e in complete_lines(server, server_header.end)]
    server_marker = server_spans.pop() if server_spans and _is_marker(parse_line(server_spans[-1])) else None
    leaf = _leaf(server_spans, server_marker)
    missing: list[bytes] = []
    # Pi gave the lines of a file it migrated new ids; the server keeps its own. A server line with an
    # unknown id whose content (references mapped to local ids) is a local line's is that line.
    aliases: dict[str, str] = {}  # server id -> local id
    by_content: dict[str, str] | None = None
    claimed: set[str] = set()
    for raw in server_spans:
        entry_id = line_id(raw)
        if entry_id is None:
            if raw not in local_raw:
                missing.append(raw)
        elif entry_id not in local_lines:
            raw = _repoint(raw, aliases)
            if by_content is None:
                by_content = {_content(parse_line(line)): i for i, line in local_lines.items()}
            match = by_content.get(_content(parse_line(raw)))
            if match is not None and match not in claimed:
                aliases[entry_id] = match
                claimed.add(match)
            else:
                missing.append(raw)
        elif local_lines[entry_id] != raw and _through_markers(local_lines[entry_id], markers) not in (
            raw,
            _repoint(raw, aliases),
        ):
            raise PullError(f"{path}: entry {entry_id} differs from the server's copy; nothing was written")
    if leaf is not None:
        leaf = aliases.get(leaf, leaf)
    last = line_id(missing[-1]) if missing else last_local
    if last is not None and last in markers:
        last = _resolve(last, markers)
    if leaf is not None and last != leaf:
        if server_marker is not None and line_id(server_marker) not in local_lines:
            missing.append(server_marker)
        else:
            taken = set(local_lines) | {i for raw in missing if (i := line_id(raw))}
            missing.append(_marker_line(leaf, taken, seed=f"{server_header.session_id}:{leaf}:{len(local)}"))
    if missing:
        before = store.get(str(path.resolve()))
        was_synced = before.status == "synced" and before.bytes == len(local)
        with path.open("ab") as handle:
            handle.write(b"".join(raw + b"\n" for raw in missing))
        if was_synced:
            _record(store, path, path.read_bytes())
    return PullResult(path, len(missing), False)


def _is_marker(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and value.get("type") == "custom"
        and value.get("customType") == LEAF_MARKER
        and isinstance(value.get("id"), str)
        and isinstance(value.get("parentId"), str)
    )


def _leaf(server_lines: list[bytes], marker: bytes | None) -> str | None:
    """The session's leaf as the export says it: the node its marker points at, else its last node."""
    if marker is not None:
        return parse_line(marker)["parentId"]
    return next((i for raw in reversed(server_lines) if (i := line_id(raw))), None)


def _resolve(entry_id: str, markers: dict[str, str]) -> str:
    for _ in range(64):
        if entry_id not in markers:
            break
        entry_id = markers[entry_id]
    return entry_id


def _through_markers(raw: bytes, markers: dict[str, str]) -> bytes:
    """A local line as the server stores it: a parent that is a leaf marker is the marker's node."""
    value = parse_line(raw)
    parent = value.get("parentId") if isinstance(value, dict) else None
    if not isinstance(parent, str) or parent not in markers:
        return raw
    old = b'"parentId":' + json.dumps(parent, ensure_ascii=False).encode()
    new = b'"parentId":' + json.dumps(_resolve(parent, markers), ensure_ascii=False).encode()
    return raw.replace(old, new, 1)


REFERENCES = ("parentId", "firstKeptEntryId", "targetId")


def _content(value: Any) -> str:
    """A line's identity apart from its own id (what a migration keeps)."""
    if not isinstance(value, dict):
        return json.dumps(value)
    return json.dumps({k: v for k, v in value.items() if k != "id"}, sort_keys=True, ensure_ascii=False)


def _repoint(raw: bytes, aliases: dict[str, str]) -> bytes:
    """The server's line with references to lines the file holds under other ids named by those ids."""
    value = parse_line(raw)
    if not aliases or not isinstance(value, dict):
        return raw
    for key in REFERENCES:
        old = value.get(key)
        if isinstance(old, str) and old in aliases:
            before = f'"{key}":{json.dumps(old, ensure_ascii=False)}'.encode()
            after = f'"{key}":{json.dumps(aliases[old], ensure_ascii=False)}'.encode()
            if raw.count(before) != 1:
                value = {**value, key: aliases[old]}
                raw = json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()
            else:
                raw = raw.replace(before, after)
    return raw


def _marker_line(leaf: str, taken: set[str], *, seed: str) -> bytes:
    """A leaf marker under ``leaf``, with an id derived from the file (the same pull writes the same)."""
    entry_id = ""
    for attempt in range(100):
        entry_id = hashlib.sha256(f"{seed}:{attempt}".encode()).hexdigest()[:8]
        if entry_id not in taken:
            break
    stamp = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    value = {
        "type": "custom",
        "customType": LEAF_MARKER,
        "data": {"leafId": leaf},
        "id": entry_id,
        "parentId": leaf,
        "timestamp": stamp,
    }
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


def _record(store: StateStore, path: Path, data: bytes) -> None:
    """Remember the pulled file as acknowledged, so ``push`` sends only the marker and what Pi writes next."""
    header = find_header(data)
    if header is None:
        return
    spans = list(complete_lines(data, header.end))
    if spans and _is_marker(parse_line(data[spans[-1][0] : spans[-1][1]])):
        # The server holds every line but the marker: the next push sends it, so the server knows the
        # node it points at when Pi's next line names the marker as its parent.
        spans.pop()
    state = store.get(str(path.resolve()))
    state.session_id = header.session_id
    state.bytes = spans[-1][1] if spans else header.end
    state.lines = len(spans)
    state.last_id = next((i for s, e in reversed(spans) if (i := line_id(data[s:e]))), None)
    state.digest = digest(data[: state.bytes])
    state.reset = True  # the server's own cursor for this session may count other lines
    state.status, state.reason, state.size_at_failure = "synced", "", -1
    store.save()
