"""The sync client follows a growing session file into a live server: nothing missed, nothing twice."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from rest_framework.authtoken.models import Token

from sessions_app import services
from sessions_app.models import ChatSession
from sessions_app.sync_client import SyncClient

pytestmark = pytest.mark.django_db(transaction=True)

HEADER = {
    "type": "session",
    "version": 3,
    "id": "sync-demo",
    "timestamp": "2026-03-01T10:00:00.000Z",
    "cwd": "/w",
}


def _entry(i: int, parent: str | None) -> str:
    role = "assistant" if i % 2 else "user"
    message: dict[str, Any] = {
        "role": role,
        "content": [{"type": "text", "text": f"line {i} ✓"}],
        "timestamp": i,
    }
    return json.dumps(
        {
            "type": "message",
            "id": f"e{i}",
            "parentId": parent,
            "timestamp": "2026-03-01T10:00:01Z",
            "message": message,
        },
        ensure_ascii=False,
        separators=(",", ":"),
    )


def _server_file(owner: Any) -> bytes:
    session = ChatSession.objects.get(owner=owner, pi_id="sync-demo")
    return b"".join(services.export_jsonl(session))


def test_sync_follows_a_growing_file_across_a_torn_line_and_a_restart(
    live_server: Any, user: Callable[..., Any], tmp_path: Path
) -> None:
    owner = user()
    token = Token.objects.create(user=owner).key
    sessions = tmp_path / "sessions" / "--w--"
    sessions.mkdir(parents=True)
    file = sessions / "2026-03-01T10-00-00-000Z_sync-demo.jsonl"
    state = tmp_path / "state.json"

    def client() -> SyncClient:
        return SyncClient(server=live_server.url, token=token, root=tmp_path / "sessions", state_path=state)

    lines = [json.dumps(HEADER, separators=(",", ":"))] + [
        _entry(i, f"e{i - 1}" if i else None) for i in range(5)
    ]
    file.write_text("\n".join(lines) + "\n", encoding="utf-8")
    first = client()
    assert first.sync_once() == 5
    assert _server_file(owner) == file.read_bytes()

    # Pi is mid-write: the last line is torn. It is waited for, not sent.
    torn = _entry(5, "e4")
    with file.open("a", encoding="utf-8") as handle:
        handle.write(torn[:20])
    assert first.sync_once() == 0
    with file.open("a", encoding="utf-8") as handle:
        handle.write(torn[20:] + "\n" + _entry(6, "e5") + "\n")

    # A restarted client (same state file) resends nothing and misses nothing.
    assert client().sync_once() == 2
    assert client().sync_once() == 0
    assert _server_file(owner) == file.read_bytes()


def test_lost_state_resumes_from_the_server_cursor(
    live_server: Any, user: Callable[..., Any], tmp_path: Path
) -> None:
    owner = user()
    token = Token.objects.create(user=owner).key
    root = tmp_path / "sessions"
    root.mkdir()
    file = root / "s.jsonl"
    lines = [json.dumps(HEADER, separators=(",", ":"))] + [
        _entry(i, f"e{i - 1}" if i else None) for i in range(3)
    ]
    file.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert (
        SyncClient(server=live_server.url, token=token, root=root, state_path=tmp_path / "a.json").sync_once()
        == 3
    )
    with file.open("a", encoding="utf-8") as handle:
        handle.write(_entry(3, "e2") + "\n")
    # A client with no state starts at the top, is told the server's cursor, and sends only the new line.
    fresh = SyncClient(server=live_server.url, token=token, root=root, state_path=tmp_path / "b.json")
    assert fresh.sync_once() == 1
    assert _server_file(owner) == file.read_bytes()


def test_sync_requires_a_token(live_server: Any, tmp_path: Path) -> None:
    import httpx

    response = httpx.post(f"{live_server.url}/api/sync/", json={"header": "{}", "lines": []})
    assert response.status_code in (401, 403)
    assert "error" in response.json()
