"""Listing, creating, reading, renaming and deleting sessions."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from sessions_app import services
from sessions_app.models import ChatSession
from tests.factories import HEADER, session_file, small_tree

pytestmark = pytest.mark.django_db


def test_list_shows_only_my_sessions_with_filters(api_client: Any, user: Any) -> None:
    services.import_jsonl(actor=api_client.user, data=session_file(small_tree()))
    services.import_jsonl(
        actor=api_client.user, data=session_file([], {**HEADER, "id": "other", "cwd": "/x"})
    )
    services.import_jsonl(actor=user(), data=session_file([], {**HEADER, "id": "foreign"}))
    body = api_client.get("/api/sessions/").json()
    assert body["count"] == 2
    assert {s["piId"] for s in body["results"]} == {"sess-1", "other"}
    assert [s["piId"] for s in api_client.get("/api/sessions/?cwd=/x").json()["results"]] == ["other"]
    assert api_client.get("/api/sessions/?createdAfter=2999-01-01").json()["count"] == 0
    assert api_client.get("/api/sessions/?pageSize=1").json()["next"] is not None


def test_list_filters_by_name_ignoring_case(api_client: Any) -> None:
    api_client.post("/api/sessions/", {"cwd": "/a", "name": "Refactor Parser"}, format="json")
    api_client.post("/api/sessions/", {"cwd": "/a"}, format="json")
    names = [s["name"] for s in api_client.get("/api/sessions/?name=parser").json()["results"]]
    assert names == ["Refactor Parser"]


def test_bad_filter_is_a_400_in_the_error_shape(api_client: Any) -> None:
    response = api_client.get("/api/sessions/?createdAfter=yesterday")
    assert response.status_code == 400
    assert response.json()["error"].startswith("Invalid input: createdAfter")


def test_create_gives_a_fresh_header_and_optional_name(api_client: Any) -> None:
    response = api_client.post("/api/sessions/", {"cwd": "/repo", "name": " demo "}, format="json")
    assert response.status_code == 201
    body = response.json()
    assert body["cwd"] == "/repo" and body["name"] == "demo"
    assert body["header"]["type"] == "session" and body["header"]["version"] == 3
    assert body["header"]["id"] == body["piId"] and len(body["piId"]) == 36
    assert body["entryCount"] == 1  # the session_info entry


def test_retrieve_rename_and_delete(api_client: Any, stored: Any) -> None:
    body = api_client.get(f"/api/sessions/{stored.pk}/").json()
    assert body["leafId"] == "a3" and body["entryCount"] == 6 and body["lastSeq"] == 5
    renamed = api_client.patch(f"/api/sessions/{stored.pk}/", {"name": "line1\nline2"}, format="json")
    assert renamed.status_code == 200
    assert renamed.json()["name"] == "line1 line2"
    entries = api_client.get(f"/api/sessions/{stored.pk}/entries/?since=a3").json()["entries"]
    assert entries[0]["type"] == "session_info" and entries[0]["parentId"] == "a3"
    assert api_client.delete(f"/api/sessions/{stored.pk}/").status_code == 204
    assert not ChatSession.objects.filter(pk=stored.pk).exists()


def test_empty_name_is_refused(api_client: Any, stored: Any) -> None:
    response = api_client.patch(f"/api/sessions/{stored.pk}/", {"name": "  "}, format="json")
    assert response.status_code == 400
    assert response.json()["error"] == "Session name cannot be empty"


def test_foreign_and_unknown_sessions_are_not_found(api_client: Any, user: Any) -> None:
    foreign = services.import_jsonl(actor=user(), data=session_file(small_tree())).session
    for method, suffix in [
        ("get", ""),
        ("patch", ""),
        ("delete", ""),
        ("get", "entries/"),
        ("get", "entries/u1/"),
        ("get", "tree/"),
        ("get", "context/"),
        ("get", "export/"),
        ("post", "navigate/"),
        ("post", "fork/"),
        ("post", "clone/"),
        ("post", "labels/"),
        ("post", "append/"),
    ]:
        for pk in (foreign.pk, 999999):
            response = getattr(api_client, method)(f"/api/sessions/{pk}/{suffix}", {}, format="json")
            assert response.status_code == 404, (method, suffix)
            assert response.json()["error"] == f"Session not found: {pk}"
    assert ChatSession.objects.filter(pk=foreign.pk).exists()


def test_anonymous_requests_are_refused_in_the_error_shape(stored: Any) -> None:
    response = APIClient().get("/api/sessions/")
    assert response.status_code in (401, 403)
    assert "credentials" in response.json()["error"]


def test_token_authentication_works(stored: Any, api_client: Any) -> None:
    from sessions_app.models import ApiToken

    _, token = ApiToken.objects.create(user=api_client.user)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    assert client.get("/api/sessions/").json()["count"] == 1


def test_wrong_method_is_405_in_the_error_shape(api_client: Any, stored: Any) -> None:
    response = api_client.put(f"/api/sessions/{stored.pk}/", {}, format="json")
    assert response.status_code == 405
    assert "PUT" in response.json()["error"]
