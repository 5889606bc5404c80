"""Importing session files (multipart or raw body) and exporting them byte for byte."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import override_settings

from sessions_app import services
from tests.conformance.compare import conformance_dir
from tests.factories import HEADER, line, session_file, small_tree
from tests.factories import assistant_message as assistant
from tests.factories import user_message as user

pytestmark = pytest.mark.django_db


def _export(client: Any, pk: int) -> bytes:
    response = client.get(f"/api/sessions/{pk}/export/")
    assert response.status_code == 200
    return b"".join(response.streaming_content)


def test_import_multipart_then_reimport_appends_only_new_entries(api_client: Any) -> None:
    entries = small_tree()
    upload = SimpleUploadedFile("s.jsonl", session_file(entries[:4]), content_type="application/x-ndjson")
    response = api_client.post("/api/sessions/import/", {"file": upload}, format="multipart")
    assert response.status_code == 201
    body = response.json()
    assert body["created"] is True and body["appended"] == 4 and body["skippedLines"] == []
    assert body["session"]["sourceFilename"] == "s.jsonl"

    again = SimpleUploadedFile("s.jsonl", session_file(entries[:4]))
    unchanged = api_client.post("/api/sessions/import/", {"file": again}, format="multipart")
    assert unchanged.status_code == 200 and unchanged.json()["appended"] == 0

    grown = api_client.post(
        "/api/sessions/import/", data=session_file(entries), content_type="application/x-ndjson"
    )
    assert grown.status_code == 201
    assert grown.json()["created"] is False and grown.json()["appended"] == 2
    assert grown.json()["session"]["id"] == body["session"]["id"]


def test_import_raw_jsonl_reports_skipped_lines(api_client: Any) -> None:
    data = (line(HEADER) + "\nnot json\n" + line(user("u1", None, "hi")) + "\n").encode()
    response = api_client.post("/api/sessions/import/", data=data, content_type="application/jsonl")
    assert response.status_code == 201
    assert response.json()["skippedLines"] == [{"line": 2, "reason": "not valid JSON"}]
    assert response.json()["session"]["entryCount"] == 1


def test_bad_file_is_400_naming_the_line(api_client: Any) -> None:
    data = b'{"type":"message","id":"x"}\n'
    response = api_client.post("/api/sessions/import/", data=data, content_type="application/x-ndjson")
    assert response.status_code == 400
    assert "line 1" in response.json()["error"]


def test_missing_file_is_400(api_client: Any) -> None:
    response = api_client.post("/api/sessions/import/", {}, format="multipart")
    assert response.status_code == 400 and '"file"' in response.json()["error"]


def test_too_large_file_is_413(api_client: Any) -> None:
    data = session_file([assistant(f"a{i}", None, "x" * 100) for i in range(50)])
    with override_settings(PIWEB_MAX_IMPORT_BYTES=1000):
        raw = api_client.post("/api/sessions/import/", data=data, content_type="application/x-ndjson")
        upload = SimpleUploadedFile("big.jsonl", data)
        multipart = api_client.post("/api/sessions/import/", {"file": upload}, format="multipart")
    assert raw.status_code == 413 and "larger than 1000 bytes" in raw.json()["error"]
    assert multipart.status_code == 413
    assert api_client.get("/api/sessions/").json()["count"] == 0


def test_export_is_a_download_named_like_pi(api_client: Any, stored: Any) -> None:
    response = api_client.get(f"/api/sessions/{stored.pk}/export/", HTTP_ACCEPT="application/x-ndjson")
    assert response.status_code == 200
    assert response["Content-Type"] == "application/x-ndjson"
    assert response["Content-Disposition"] == 'attachment; filename="2026-01-02T03-04-05-678Z_sess-1.jsonl"'
    assert b"".join(response.streaming_content) == session_file(small_tree())


def _conformance_files() -> list[Any]:
    cases = conformance_dir()
    if cases is None:
        return [pytest.param(None, marks=pytest.mark.skip(reason="shared conformance cases not found"))]
    return [pytest.param(p, id=p.name) for p in sorted((cases / "sessions").glob("*.jsonl"))]


@pytest.mark.parametrize("path", _conformance_files())
def test_export_import_round_trip_is_byte_identical(api_client: Any, user: Any, path: Path) -> None:
    data = path.read_bytes()
    try:
        result = services.import_jsonl(actor=user(), data=data, filename=path.name)
    except services.InvalidSessionFile:
        pytest.skip("not a valid session file")
    first = b"".join(services.export_jsonl(result.session))
    clean = not result.skipped.total and not result.migrated and data.endswith(b"\n") and b"\n\n" not in data
    if clean:
        assert first == data  # a clean file comes back exactly as uploaded
    response = api_client.post("/api/sessions/import/", data=first, content_type="application/x-ndjson")
    assert response.status_code == 201, response.json()
    assert _export(api_client, response.json()["session"]["id"]) == first


@pytest.mark.parametrize(
    ("pi_id", "expected"),
    [
        # One quoted filename whatever the id holds: the quotes are escaped, not closing it.
        (
            'a";filename="evil.sh',
            r'attachment; filename="2026-01-02T03-04-05-678Z_a\";filename=\"evil.sh.jsonl"',
        ),
        (
            "a\r\nX-Injected: 1",
            "attachment; filename*=utf-8''2026-01-02T03-04-05-678Z_a%0D%0AX-Injected%3A%201.jsonl",
        ),
    ],
)
def test_an_export_name_cannot_inject_header_parts(api_client: Any, pi_id: str, expected: str) -> None:
    data = session_file(small_tree(), header={**HEADER, "id": pi_id})
    session = services.import_jsonl(actor=api_client.user, data=data, filename="s.jsonl").session
    response = api_client.get(f"/api/sessions/{session.pk}/export/")
    assert response.status_code == 200
    assert response["Content-Disposition"] == expected
