"""Key fields have documented caps, and quotas hold for every write: a value past its cap answers 400 with
the field's name on every entry point (REST append, labels, sync, import, runs), never a 500, and stores
nothing; a write past a quota answers 413 with the numbers, whichever entry point it came through."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import override_settings
from rest_framework.test import APIClient

from pitree.placement import FIELD_CAPS, MAX_ID_CHARS
from sessions_app import services
from sessions_app.models import ChatSession, Entry
from tests.factories import HEADER, line, session_file, small_tree

pytestmark = pytest.mark.django_db

NINE_KB = "9" * 9000


def stored() -> int:
    return Entry.objects.count()


@pytest.fixture
def owner_client(api_client: APIClient) -> APIClient:
    services.import_jsonl(actor=api_client.user, data=session_file(small_tree()), filename="s.jsonl")  # type: ignore[attr-defined]
    return api_client


def session_pk() -> int:
    return ChatSession.objects.get().pk


def sync_body(lines: list[str], header: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "header": line(header or {**HEADER, "id": "synced"}),
        "from": {"lines": 0, "bytes": 0},
        "to": {"lines": len(lines), "bytes": sum(len(x) + 1 for x in lines)},
        "lines": lines,
    }


MESSAGE = {"role": "user", "content": [{"type": "text", "text": "hi"}], "timestamp": 1}

# (field, an entry whose field passes its cap)
OVER_CAP = [
    ("id", {"type": "message", "id": NINE_KB, "message": MESSAGE}),
    ("parentId", {"type": "message", "parentId": NINE_KB, "message": MESSAGE}),
    ("type", {"type": "t" * 256}),
    ("customType", {"type": "custom", "customType": "c" * 256, "data": {}}),
    ("label", {"type": "label", "targetId": "a1", "label": "l" * 1001}),
    ("targetId", {"type": "label", "targetId": NINE_KB, "label": "x"}),
    ("modelId", {"type": "model_change", "provider": "p", "modelId": "m" * 256}),
    ("provider", {"type": "model_change", "provider": "p" * 256, "modelId": "m"}),
    ("message.model", {"type": "message", "message": {**MESSAGE, "role": "assistant", "model": "m" * 256}}),
    ("name", {"type": "session_info", "name": "n" * 1001}),
]


@pytest.mark.parametrize(("field", "entry"), OVER_CAP, ids=[f for f, _ in OVER_CAP])
def test_rest_append_answers_400_naming_the_field(
    owner_client: APIClient, field: str, entry: dict[str, Any]
) -> None:
    before = stored()
    response = owner_client.post(f"/api/sessions/{session_pk()}/append/", {"entries": [entry]}, format="json")
    assert response.status_code == 400, response.content[:300]
    error = response.json()["error"]
    assert f"'{field}'" in error and f"longer than {FIELD_CAPS[field]} characters" in error
    assert stored() == before


def test_ids_at_the_cap_are_stored_and_read_back(owner_client: APIClient) -> None:
    longest = "i" * MAX_ID_CHARS
    entry = {"type": "message", "id": longest, "message": MESSAGE}
    response = owner_client.post(f"/api/sessions/{session_pk()}/append/", {"entries": [entry]}, format="json")
    assert response.status_code == 201
    child = {"type": "message", "parentId": longest, "message": MESSAGE}
    response = owner_client.post(f"/api/sessions/{session_pk()}/append/", {"entries": [child]}, format="json")
    assert response.status_code == 201 and response.json()["entries"][0]["parentId"] == longest


def test_the_9kb_id_that_broke_the_index_answers_400_on_sync(owner_client: APIClient) -> None:
    lines = [line({"type": "message", "id": NINE_KB, "parentId": None, "timestamp": "t", "message": MESSAGE})]
    response = owner_client.post("/api/sync/", sync_body(lines), format="json")
    assert response.status_code == 400, response.content[:300]
    assert "'id' is longer than 255 characters" in response.json()["error"]
    assert not ChatSession.objects.filter(pi_id="synced").exists()


def test_a_long_session_id_answers_400_on_sync_and_import(owner_client: APIClient) -> None:
    response = owner_client.post("/api/sync/", sync_body([], {**HEADER, "id": NINE_KB}), format="json")
    assert response.status_code == 400 and "the session header: 'id'" in response.json()["error"]
    data = session_file(small_tree(), {**HEADER, "id": NINE_KB})
    response = owner_client.post("/api/sessions/import/", data=data, content_type="application/x-ndjson")
    assert response.status_code == 400 and "the session header: 'id'" in response.json()["error"]
    assert ChatSession.objects.count() == 1


def test_a_1mb_id_answers_400_on_import(owner_client: APIClient) -> None:
    entries = [*small_tree()[:2], {**small_tree()[2], "id": "x" * 1_000_000}]
    data = session_file(entries, {**HEADER, "id": "big"})
    response = owner_client.post("/api/sessions/import/", data=data, content_type="application/x-ndjson")
    assert response.status_code == 400, response.content[:300]
    assert "line 4: 'id' is longer than 255 characters" in response.json()["error"]
    assert not ChatSession.objects.filter(pi_id="big").exists()


def test_a_long_id_in_a_file_of_an_older_version_answers_400_and_stores_nothing(
    owner_client: APIClient,
) -> None:
    # A version 2 file is loaded whole and migrated before it is stored; its key fields are measured too.
    entries = [*small_tree()[:2], {**small_tree()[2], "id": NINE_KB}]
    data = session_file(entries, {**HEADER, "id": "old", "version": 2})
    response = owner_client.post("/api/sessions/import/", data=data, content_type="application/x-ndjson")
    assert response.status_code == 400, response.content[:300]
    assert "entry 3: 'id' is longer than 255 characters" in response.json()["error"]
    assert not ChatSession.objects.filter(pi_id="old").exists()
    assert stored() == len(small_tree())


def test_a_re_import_with_a_long_id_answers_400(owner_client: APIClient) -> None:
    grown = [*small_tree(), {**small_tree()[-1], "id": NINE_KB, "parentId": small_tree()[-1]["id"]}]
    response = owner_client.post(
        "/api/sessions/import/", data=session_file(grown), content_type="application/x-ndjson"
    )
    assert response.status_code == 400 and "'id' is longer than 255" in response.json()["error"]
    assert stored() == len(small_tree())


def test_a_label_past_its_cap_answers_400(owner_client: APIClient) -> None:
    url = f"/api/sessions/{session_pk()}/labels/"
    response = owner_client.post(url, {"targetId": small_tree()[1]["id"], "label": "l" * 1001}, format="json")
    assert response.status_code == 400
    assert stored() == len(small_tree())


def test_a_lone_surrogate_in_an_id_answers_400_with_the_field(owner_client: APIClient) -> None:
    body = '{"entries": [{"type": "message", "id": "\\ud800", "message": {"role": "user", "content": "x"}}]}'
    url = f"/api/sessions/{session_pk()}/append/"
    response = owner_client.post(url, data=body, content_type="application/json")
    assert response.status_code == 400
    assert "'id' holds a NUL character or a lone surrogate" in response.json()["error"]


# -- quotas, on every entry point ---------------------------------------------------------------------------


def test_the_stored_bytes_quota_holds_for_append_sync_and_fork(owner_client: APIClient) -> None:
    pk = session_pk()
    used = ChatSession.objects.get().stored_bytes
    assert used == sum(len(line(e).encode()) for e in small_tree())
    entry = {"type": "message", "message": MESSAGE}
    with override_settings(PIWEB_MAX_STORED_BYTES_PER_USER=used + 10):
        append = owner_client.post(f"/api/sessions/{pk}/append/", {"entries": [entry]}, format="json")
        sync = owner_client.post("/api/sync/", sync_body([line(small_tree()[0])]), format="json")
        fork = owner_client.post(
            f"/api/sessions/{pk}/fork/", {"entryId": small_tree()[1]["id"]}, format="json"
        )
    for response in (append, sync, fork):
        assert response.status_code == 413, response.content[:300]
        assert f"the limit is {used + 10} bytes" in response.json()["error"]
    assert ChatSession.objects.count() == 1 and stored() == len(small_tree())
    # Deleting a session gives its bytes back.
    services.delete_session(session=ChatSession.objects.get(), actor=owner_client.user)  # type: ignore[attr-defined]
    with override_settings(PIWEB_MAX_STORED_BYTES_PER_USER=used + 10):
        again = owner_client.post("/api/sync/", sync_body([line(small_tree()[0])]), format="json")
    assert again.status_code == 200, again.content[:300]


def test_a_session_holds_at_most_the_entry_limit_on_append_and_sync(owner_client: APIClient) -> None:
    pk = session_pk()
    entry = {"type": "message", "message": MESSAGE}
    limit = len(small_tree())
    with override_settings(PIWEB_MAX_IMPORT_ENTRIES=limit):
        append = owner_client.post(f"/api/sessions/{pk}/append/", {"entries": [entry]}, format="json")
        lines = [line(e) for e in small_tree()] + [
            line({"type": "message", "id": "more", "parentId": small_tree()[-1]["id"], "message": MESSAGE})
        ]
        sync = owner_client.post("/api/sync/", sync_body(lines, HEADER), format="json")
    assert append.status_code == 413 and sync.status_code == 413
    assert append.json()["error"] == (
        f"The session holds {limit} entries; 1 more would pass the limit of {limit} entries a session holds."
    )
    assert stored() == limit
