"""Import quotas: entries per file and stored bytes per user, refused with 413 and the numbers."""

from __future__ import annotations

from typing import Any

from django.test import override_settings

from sessions_app.models import ChatSession, Entry
from tests.factories import HEADER, session_file, small_tree


def _import(client: Any, data: bytes) -> Any:
    return client.post("/api/sessions/import/", data=data, content_type="application/x-ndjson")


@override_settings(PIWEB_MAX_IMPORT_ENTRIES=5)
def test_a_file_past_the_entry_limit_is_refused_with_its_numbers(api_client: Any) -> None:
    response = _import(api_client, session_file(small_tree()))
    assert response.status_code == 413
    assert response.json()["error"] == "The file holds 6 entries; an import accepts at most 5."
    assert not ChatSession.objects.exists() and not Entry.objects.exists()


def test_the_stored_bytes_quota_counts_what_the_user_already_stored(api_client: Any) -> None:
    first = session_file(small_tree())
    second = session_file(small_tree(), header={**HEADER, "id": "sess-2"})
    with override_settings(PIWEB_MAX_STORED_BYTES_PER_USER=len(first) + len(second) // 2):
        assert _import(api_client, first).status_code == 201
        refused = _import(api_client, second)
    assert refused.status_code == 413
    assert f"({len(second)} bytes)" in refused.json()["error"]
    assert f"the limit is {len(first) + len(second) // 2} bytes" in refused.json()["error"]
    assert ChatSession.objects.count() == 1
