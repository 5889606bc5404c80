"""Values of the wrong type are refused with a 400 that names the field, never converted and stored."""

from __future__ import annotations

from typing import Any

import pytest

from sessions_app.models import ChatSession, Entry

pytestmark = pytest.mark.django_db


def _error_names(response: Any, field: str) -> None:
    assert response.status_code == 400, response.content
    assert field in str(response.json()["error"])


def test_a_number_where_text_belongs_is_refused_not_stored_as_its_digits(
    api_client: Any, stored: Any
) -> None:
    before = Entry.objects.filter(session=stored).count()

    _error_names(api_client.post("/api/sessions/", {"cwd": "/w", "name": 0}, format="json"), "name")
    _error_names(api_client.patch(f"/api/sessions/{stored.pk}/", {"name": 7}, format="json"), "name")
    _error_names(
        api_client.post(f"/api/sessions/{stored.pk}/labels/", {"targetId": "a1", "label": 0}, format="json"),
        "label",
    )
    _error_names(
        api_client.post(f"/api/sessions/{stored.pk}/fork/", {"entryId": 5}, format="json"), "entryId"
    )

    assert ChatSession.objects.filter(owner=api_client.user).count() == 1
    assert Entry.objects.filter(session=stored).count() == before


def test_a_number_where_a_boolean_belongs_is_refused(api_client: Any, stored: Any) -> None:
    response = api_client.post(
        f"/api/sessions/{stored.pk}/navigate/", {"targetId": "a1", "summarize": 1}, format="json"
    )
    _error_names(response, "summarize")
    stored.refresh_from_db()
    assert stored.leaf_entry_id == "a3"


def test_text_and_booleans_of_the_right_type_still_work(api_client: Any, stored: Any) -> None:
    response = api_client.post(
        f"/api/sessions/{stored.pk}/labels/", {"targetId": "a1", "label": "checkpoint"}, format="json"
    )
    assert response.status_code == 201
    response = api_client.post(
        f"/api/sessions/{stored.pk}/navigate/", {"targetId": "a1", "summarize": False}, format="json"
    )
    assert response.status_code == 200
    assert api_client.get(f"/api/sessions/{stored.pk}/path/?render=1").status_code == 200


@pytest.mark.parametrize(
    "query",
    ["entries/?since=", "path/?leaf=", "context/?leaf=", "tree/?around="],
)
def test_a_query_parameter_given_without_a_value_is_a_400(api_client: Any, stored: Any, query: str) -> None:
    _error_names(api_client.get(f"/api/sessions/{stored.pk}/{query}"), query.split("?")[1].rstrip("="))


@pytest.mark.parametrize("size", ["", "ten", "0", "-1"])
def test_a_bad_page_size_is_a_400_rather_than_ignored(api_client: Any, stored: Any, size: str) -> None:
    _error_names(api_client.get(f"/api/sessions/?pageSize={size}"), "pageSize")


def test_a_large_page_size_is_capped(api_client: Any, stored: Any) -> None:
    assert api_client.get("/api/sessions/?pageSize=100000").status_code == 200


def test_a_blank_format_is_refused_and_a_named_one_still_downloads(api_client: Any, stored: Any) -> None:
    _error_names(api_client.get(f"/api/sessions/{stored.pk}/export/?format="), "format")
    response = api_client.get(f"/api/sessions/{stored.pk}/export/?format=jsonl")
    assert response.status_code == 200
    assert b'"id":"a3"' in b"".join(response.streaming_content)
