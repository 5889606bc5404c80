"""Reading entries with Pi's cursor and appending with optimistic concurrency."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import override_settings

pytestmark = pytest.mark.django_db


def test_entries_in_append_order_with_since_cursor(api_client: Any, stored: Any) -> None:
    url = f"/api/sessions/{stored.pk}/entries/"
    body = api_client.get(url).json()
    assert [e["id"] for e in body["entries"]] == ["u1", "a1", "u2", "a2", "u3", "a3"]
    assert body["leafId"] == "a3" and body["lastSeq"] == 5 and body["hasMore"] is False
    first = body["entries"][0]
    assert first == {
        "seq": 0,
        "id": "u1",
        "parentId": None,
        "type": "message",
        "timestamp": "2026-01-02T03:04:06.000Z",
        "entry": {
            "type": "message",
            "id": "u1",
            "parentId": None,
            "timestamp": "2026-01-02T03:04:06.000Z",
            "message": {"role": "user", "content": "hello", "timestamp": 1},
        },
        # Who stored it, beside the verbatim line (never inside it).
        "author": {
            "kind": "user",
            "name": api_client.user.username,
            "userId": api_client.user.pk,
            "via": "",
            "imported": True,
            "label": f"imported by {api_client.user.username}",
        },
    }
    after = api_client.get(url + "?since=a2").json()
    assert [e["id"] for e in after["entries"]] == ["u3", "a3"]
    page = api_client.get(url + "?limit=2").json()
    assert [e["id"] for e in page["entries"]] == ["u1", "a1"] and page["hasMore"] is True


def test_unknown_cursor_is_404_with_pi_text(api_client: Any, stored: Any) -> None:
    response = api_client.get(f"/api/sessions/{stored.pk}/entries/?since=nope")
    assert response.status_code == 404
    assert response.json() == {"error": "Entry not found: nope"}


def test_bad_limit_is_400(api_client: Any, stored: Any) -> None:
    assert api_client.get(f"/api/sessions/{stored.pk}/entries/?limit=0").status_code == 400


def test_single_entry(api_client: Any, stored: Any) -> None:
    body = api_client.get(f"/api/sessions/{stored.pk}/entries/a2/").json()
    assert body["id"] == "a2" and body["parentId"] == "u2" and body["entry"]["message"]["role"] == "assistant"
    missing = api_client.get(f"/api/sessions/{stored.pk}/entries/zz/")
    assert missing.status_code == 404 and missing.json()["error"] == "Entry zz not found"


def test_append_under_leaf_and_expected_leaf(api_client: Any, stored: Any) -> None:
    url = f"/api/sessions/{stored.pk}/append/"
    entry = {"type": "custom", "customType": "note", "data": {"x": 1}}
    response = api_client.post(url, {"entries": [entry], "expectedLeaf": "a3"}, format="json")
    assert response.status_code == 201
    body = response.json()
    new = body["entries"][0]
    assert new["parentId"] == "a3" and new["seq"] == 6 and len(new["id"]) == 8
    assert list(new["entry"]) == ["type", "id", "parentId", "timestamp", "customType", "data"]
    assert body["leafId"] == new["id"] and body["lastSeq"] == 6

    stale = api_client.post(url, {"entries": [entry], "expectedLeaf": "a3"}, format="json")
    assert stale.status_code == 409
    assert stale.json()["leafId"] == new["id"]
    assert api_client.get(f"/api/sessions/{stored.pk}/").json()["entryCount"] == 7


def test_append_with_explicit_parent_and_new_root(api_client: Any, stored: Any) -> None:
    url = f"/api/sessions/{stored.pk}/append/"
    entries = [
        {"type": "custom", "id": "c1", "parentId": "u2"},
        {"type": "custom", "id": "c2", "parentId": None},
    ]
    response = api_client.post(url, {"entries": entries, "expectedLeaf": "a3"}, format="json")
    assert response.status_code == 201
    assert [e["parentId"] for e in response.json()["entries"]] == ["u2", None]
    assert response.json()["leafId"] == "c2"


@pytest.mark.parametrize(
    ("entries", "message"),
    [
        ([{"type": "custom", "parentId": "ghost"}], "parent 'ghost' is not an entry"),
        ([{"type": "custom", "id": "a1"}], "id 'a1' already exists"),
        ([{"type": "custom", "id": "n1"}, {"type": "custom", "id": "n1"}], "id 'n1' already exists"),
        (["not an object"], "must be a JSON object"),
        ([{"id": "x"}], "'type' must be"),
        ([{"type": "session"}], "'type' must be"),
    ],
)
def test_invalid_entries_are_400_and_store_nothing(
    api_client: Any, stored: Any, entries: list[Any], message: str
) -> None:
    response = api_client.post(f"/api/sessions/{stored.pk}/append/", {"entries": entries}, format="json")
    assert response.status_code == 400
    assert message in response.json()["error"]
    assert api_client.get(f"/api/sessions/{stored.pk}/").json()["entryCount"] == 6


def test_empty_or_missing_entries_are_400(api_client: Any, stored: Any) -> None:
    url = f"/api/sessions/{stored.pk}/append/"
    assert api_client.post(url, {"entries": []}, format="json").status_code == 400
    missing = api_client.post(url, {}, format="json")
    assert missing.status_code == 400 and missing.json()["error"].startswith("Invalid input: entries")


def test_malformed_json_body_is_400(api_client: Any, stored: Any) -> None:
    response = api_client.post(
        f"/api/sessions/{stored.pk}/append/", data=b'{"entries": [', content_type="application/json"
    )
    assert response.status_code == 400
    assert response.json()["error"].startswith("Malformed request body: the body is not valid JSON")


def test_oversized_json_body_is_413(api_client: Any, stored: Any) -> None:
    with override_settings(PIWEB_MAX_BODY_BYTES=1000):
        response = api_client.post(
            f"/api/sessions/{stored.pk}/append/",
            {"entries": [{"type": "custom", "data": "x" * 2000}]},
            format="json",
        )
    assert response.status_code == 413
    assert "larger than 1000 bytes" in response.json()["error"]


def test_unsupported_body_type_is_415(api_client: Any, stored: Any) -> None:
    response = api_client.post(f"/api/sessions/{stored.pk}/append/", data=b"x", content_type="text/plain")
    assert response.status_code == 415
    assert "text/plain" in response.json()["error"]
