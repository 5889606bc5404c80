"""The tree overview is built once per session state and never served stale."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from sessions_app import services

pytestmark = pytest.mark.django_db


def tree(api_client: Any, pk: int) -> tuple[dict[str, Any], int]:
    with CaptureQueriesContext(connection) as queries:
        response = api_client.get(f"/api/sessions/{pk}/tree/")
    assert response.status_code == 200
    return response.json(), len(queries)


def current(body: dict[str, Any]) -> str | None:
    return next((i["id"] for i in body["items"] if i.get("current")), None)


def test_a_second_open_reads_no_entries_and_every_change_shows_at_once(api_client: Any, stored: Any) -> None:
    first, cold = tree(api_client, stored.pk)
    again, warm = tree(api_client, stored.pk)
    assert again == first and warm < cold
    services.append_entries(
        session=stored,
        actor=stored.owner,
        entries=[{"type": "message", "message": {"role": "user", "content": "new", "timestamp": 1}}],
    )
    appended, _ = tree(api_client, stored.pk)
    assert appended["entryCount"] == first["entryCount"] + 1
    assert current(appended) not in (None, current(first))
    services.set_leaf(session=stored, actor=stored.owner, entry_id="a2")
    moved, _ = tree(api_client, stored.pk)
    assert current(moved) == "a2" and moved["leafId"] == "a2"
    assert api_client.get(f"/api/sessions/{stored.pk}/tree/", {"around": "nope"}).status_code == 404
