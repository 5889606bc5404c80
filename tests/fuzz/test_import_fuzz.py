"""A bounded fuzz run over the import endpoint: bad files are refused with 4xx and leave nothing behind."""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from sessions_app.models import ChatSession

pytestmark = pytest.mark.django_db

URL = "/api/sessions/import/"
REQUESTS = 150
SECONDS = 30


def _line(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8", "surrogatepass")


def _valid_file(rng: random.Random, *, session_id: str | None = None) -> bytes:
    header = {
        "type": "session",
        "version": 3,
        "id": session_id or f"fuzz-{rng.getrandbits(64):x}",
        "cwd": "/w",
    }
    lines = [_line(header)]
    ids: list[str] = []
    for i in range(rng.randint(0, 12)):
        parent = rng.choice([None, f"gone{i}", *(ids[-1:] * 4), *ids]) if ids else None
        role = rng.choice(["user", "assistant", "toolResult"])
        entry = {
            "type": "message",
            "id": f"e{i}",
            "parentId": parent,
            "timestamp": f"2026-03-01T10:00:{i % 60:02d}.000Z",
            "message": {"role": role, "content": [{"type": "text", "text": "x" * rng.randint(0, 40)}]},
        }
        lines.append(_line(entry))
        ids.append(entry["id"])
    return b"\n".join(lines) + b"\n"


def _bad_header(rng: random.Random) -> bytes:
    return rng.choice(
        [
            _line({"type": "message", "id": "a", "parentId": None}),
            _line({"type": "session", "id": 12}),
            _line({"type": "session"}),
            _line({"type": "Session", "id": "x"}),
            _line(["session"]),
            b'"session"',
            b"{",
        ]
    )


def _storable_edge(rng: random.Random) -> bytes:
    """Return a file Pi would load whose strings PostgreSQL text cannot hold as they are."""
    bad = rng.choice(["nul\u0000id", "lone\ud800", "\udfff"])
    where = rng.choice(["header", "entry", "parent", "timestamp", "name", "cwd", "type", "role"])
    header: dict[str, Any] = {
        "type": "session",
        "version": 3,
        "id": f"edge-{rng.getrandbits(48):x}",
        "cwd": "/",
    }
    entry: dict[str, Any] = {"type": "message", "id": "e0", "parentId": None, "message": {"role": "user"}}
    if where == "header":
        header["id"] = bad
    elif where == "cwd":
        header["cwd"] = bad
    elif where == "entry":
        entry["id"] = bad
    elif where == "parent":
        entry["parentId"] = bad
    elif where == "timestamp":
        entry["timestamp"] = bad
    elif where == "type":
        entry["type"] = bad
    elif where == "role":
        entry["message"]["role"] = bad
    else:
        entry = {"type": "session_info", "id": "e0", "parentId": None, "name": bad}
    return _line(header) + b"\n" + _line(entry) + b"\n"


def _body(rng: random.Random) -> bytes:
    pick = rng.randrange(10)
    if pick == 0:
        return _valid_file(rng)
    if pick == 1:
        data = _valid_file(rng)
        return data[: rng.randrange(len(data) + 1)]  # truncated anywhere, even inside the header
    if pick == 2:
        return bytes(rng.getrandbits(8) for _ in range(rng.randrange(400)))
    if pick == 3:
        return _bad_header(rng) + b"\n" + _valid_file(rng)
    if pick == 4:
        data = bytearray(_valid_file(rng))
        for _ in range(rng.randint(1, 8)):
            if data:
                data[rng.randrange(len(data))] = rng.getrandbits(8)
        return bytes(data)
    if pick == 5:
        huge = b'{"type":"custom","id":"h","parentId":null,"data":"' + b"y" * (1024 * 1024) + b'"}'
        return rng.choice([huge, _valid_file(rng) + huge, huge[: len(huge) // 2]])
    if pick == 6:
        return rng.choice([b"", b"\n\n", b"\xef\xbb\xbf", b"null\n", b"\xff\xfe\x00{", b"\r\n" * 5])
    if pick == 7:
        return _storable_edge(rng)
    if pick == 8:
        header = {
            "type": "session",
            "id": f"v-{rng.getrandbits(32):x}",
            "version": rng.choice([1, 2, "x", None, -1]),
        }
        body = [_line(header), _line({"type": "message", "message": {"role": "hookMessage", "content": "c"}})]
        return b"\n".join(body) + rng.choice([b"", b"\n", b"\n\x00garbage"])
    return _valid_file(rng).replace(b"\n", b"\r\n")


def _post(api_client: Any, rng: random.Random, body: bytes) -> Any:
    mode = rng.randrange(4)
    if mode == 0:
        upload = SimpleUploadedFile("fuzz.jsonl", body, content_type="application/octet-stream")
        return api_client.post(URL, {"file": upload}, format="multipart")
    if mode == 1:
        upload = SimpleUploadedFile("fuzz.jsonl", body)
        return api_client.post(URL, {rng.choice(["files", "upload", "FILE"]): upload}, format="multipart")
    content_type = rng.choice(
        ["application/x-ndjson", "application/x-ndjson", "application/jsonl", "text/plain"]
    )
    return api_client.post(URL, data=body, content_type=content_type)


def _assert_sane(response: Any, before: int, owner: Any, body: bytes) -> None:
    status = response.status_code
    assert status < 500, (status, body[:300])
    after = ChatSession.objects.filter(owner=owner).count()
    if 200 <= status < 300:
        assert after - before in (0, 1)
        payload = response.json()
        assert payload["session"]["id"], payload
        return
    assert 400 <= status < 500, status
    assert isinstance(response.json().get("error"), str), response.content[:300]
    assert after == before, (status, body[:300])


def test_import_fuzz_never_fails_with_server_error(api_client: Any) -> None:
    rng = random.Random(20260301)
    started = time.monotonic()
    statuses: dict[int, int] = {}
    for _ in range(REQUESTS):
        body = _body(rng)
        before = ChatSession.objects.filter(owner=api_client.user).count()
        response = _post(api_client, rng, body)
        _assert_sane(response, before, api_client.user, body)
        statuses[response.status_code] = statuses.get(response.status_code, 0) + 1
        assert time.monotonic() - started < SECONDS * 2, "the fuzz run is too slow"
    # The run exercised both outcomes, so a regression to "refuse everything" would show.
    assert statuses.get(201, 0) > 10 and sum(v for k, v in statuses.items() if k >= 400) > 30, statuses


def test_edge_strings_are_refused_cleanly(api_client: Any) -> None:
    rng = random.Random(7)
    for _ in range(40):
        body = _storable_edge(rng)
        before = ChatSession.objects.filter(owner=api_client.user).count()
        response = api_client.post(URL, data=body, content_type="application/x-ndjson")
        _assert_sane(response, before, api_client.user, body)


def test_reimport_with_different_entries_is_refused_and_changes_nothing(
    api_client: Any, user: Callable[..., Any]
) -> None:
    rng = random.Random(3)
    first = _valid_file(rng, session_id="same-id")
    assert api_client.post(URL, data=first, content_type="application/x-ndjson").status_code == 201
    stored = ChatSession.objects.get(owner=api_client.user, pi_id="same-id")
    entries_before = stored.entry_count
    for _ in range(20):
        other = _valid_file(rng, session_id="same-id")
        if other.startswith(first) or first.startswith(other):
            continue
        response = api_client.post(URL, data=other, content_type="application/x-ndjson")
        assert response.status_code in (200, 201, 400), response.status_code
        stored.refresh_from_db()
        if response.status_code == 400:
            assert "error" in response.json()
            assert stored.entry_count == entries_before
