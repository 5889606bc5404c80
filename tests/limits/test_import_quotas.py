"""Import quotas: entries per file and stored bytes per user, refused with 413 and the numbers.

Lines that are not JSON objects (or not JSON) are skipped: no entry, no row, no stored byte, and a
bounded report.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.test import override_settings

from pitree.entries import entry_from_value
from pitree.jsonl import EMPTY_VALUE, NOT_AN_OBJECT, NOT_JSON, REPORTED_SKIPPED_LINES
from sessions_app import services
from sessions_app.attribution import author_of
from sessions_app.models import ChatSession, Entry
from sessions_app.services.store import entry_store
from sync.services import Cursor, sync_lines
from tests.factories import HEADER, line, session_file, small_tree


def _import(client: Any, data: bytes) -> Any:
    return client.post("/api/sessions/import/", data=data, content_type="application/x-ndjson")


@override_settings(PIWEB_MAX_IMPORT_ENTRIES=5)
def test_a_file_past_the_entry_limit_is_refused_with_its_numbers(api_client: Any) -> None:
    response = _import(api_client, session_file(small_tree()))
    assert response.status_code == 413
    assert response.json()["error"] == "The file holds 6 entries; an import accepts at most 5."
    assert not ChatSession.objects.exists() and not Entry.objects.exists()


def entry_bytes(entries: list[dict[str, Any]]) -> int:
    """What storing these entries takes: their lines in UTF-8, without header or newlines."""
    return sum(len(line(e).encode()) for e in entries)


def test_the_stored_bytes_quota_counts_what_the_user_already_stored(api_client: Any) -> None:
    first = session_file(small_tree())
    second = session_file(small_tree(), header={**HEADER, "id": "sess-2"})
    size = entry_bytes(small_tree())
    quota = 2 * size - 1
    with override_settings(PIWEB_MAX_STORED_BYTES_PER_USER=quota):
        assert _import(api_client, first).status_code == 201
        refused = _import(api_client, second)
    assert refused.status_code == 413
    assert refused.json()["error"] == (
        f"Storing these entries ({size} bytes) would bring your sessions to {2 * size} bytes; "
        f"the limit is {quota} bytes."
    )
    assert ChatSession.objects.count() == 1


def test_reimporting_a_grown_file_counts_only_what_it_adds(api_client: Any) -> None:
    grown = [*small_tree(), {**small_tree()[-1], "id": "a9", "parentId": small_tree()[-1]["id"]}]
    other = session_file(small_tree(), header={**HEADER, "id": "sess-2"})
    # Room for the other session and the grown one, not for the old copy of this one on top.
    quota = entry_bytes(small_tree()) + entry_bytes(grown)
    with override_settings(PIWEB_MAX_STORED_BYTES_PER_USER=quota):
        assert _import(api_client, session_file(small_tree())).status_code == 201
        assert _import(api_client, other).status_code == 201
        again = _import(api_client, session_file(grown))
        assert again.status_code == 201 and (again.json()["created"], again.json()["appended"]) == (False, 1)
        assert Entry.objects.count() == 2 * len(small_tree()) + 1
        # One line more than the quota holds is still refused, with the session's new total.
        bigger = [*grown, {**grown[-1], "id": "a10", "parentId": "a9"}]
        refused = _import(api_client, session_file(bigger))
    assert refused.status_code == 413
    assert (
        f"would bring your sessions to {quota + len(line(bigger[-1]).encode())} bytes"
        in refused.json()["error"]
    )


# -- lines that are not JSON objects cost nothing beyond their bytes -----------------------------------

JUNK = ["1", '"x"', "[]", "[1,2]", "true", "", "   ", "0", "null", '""', "{bad"]
NOT_OBJECTS = {"1", '"x"', "[]", "[1,2]", "true"}


def junk_file(entries: list[dict[str, Any]], junk_lines: int, header: dict[str, Any] = HEADER) -> bytes:
    """The entries with ``junk_lines`` lines that are not objects (or not JSON) spread among them."""
    rows = [line(header)]
    per_gap = junk_lines // (len(entries) + 1)
    for entry in [*entries, None]:
        rows.extend(JUNK[i % len(JUNK)] for i in range(per_gap))
        if entry is not None:
            rows.append(line(entry))
    return ("\n".join(rows) + "\n").encode()


def skipped_numbers(data: bytes) -> list[int]:
    """Numbers of the lines an import reports as skipped: the junk, less blank lines (Pi ignores those)."""
    rows = data.decode().split("\n")[:-1]
    return [n for n, text in enumerate(rows, start=1) if text in JUNK and text.strip()]


@override_settings(PIWEB_MAX_IMPORT_ENTRIES=6)
def test_lines_that_are_not_objects_are_neither_entries_nor_rows(api_client: Any) -> None:
    entries = small_tree()
    data = junk_file(entries, 70_000)
    response = _import(api_client, data)
    assert response.status_code == 201, response.content[:300]
    body = response.json()
    assert body["appended"] == 6 and body["session"]["entryCount"] == 6
    assert Entry.objects.count() == 6
    assert set(Entry.objects.values_list("raw", flat=True)) == {line(e) for e in entries}
    # Every skipped line is counted; the first few hundred are listed, so the answer stays small.
    skipped = skipped_numbers(data)
    assert body["skippedCount"] == len(skipped) > 50_000
    listed = body["skippedLines"]
    assert [item["line"] for item in listed] == skipped[:REPORTED_SKIPPED_LINES]
    assert {item["reason"] for item in listed} == {NOT_AN_OBJECT, EMPTY_VALUE, NOT_JSON}
    assert len(response.content) < 64 * 1024
    # What is stored is what Pi works with: the export is the file without the skipped lines.
    export = api_client.get(f"/api/sessions/{body['session']['id']}/export/")
    assert b"".join(export.streaming_content) == session_file(entries)


@override_settings(PIWEB_MAX_IMPORT_ENTRIES=6)
def test_real_entries_past_the_limit_are_still_refused_with_their_numbers(api_client: Any) -> None:
    entries = [*small_tree(), {**small_tree()[-1], "id": "a4"}]
    response = _import(api_client, junk_file(entries, 20_000))
    assert response.status_code == 413
    assert response.json()["error"] == "The file holds 7 entries; an import accepts at most 6."
    assert not ChatSession.objects.exists() and not Entry.objects.exists()


def test_skipped_lines_do_not_count_toward_the_stored_bytes_quota(api_client: Any) -> None:
    entries = small_tree()
    data = junk_file(entries, 30_000)
    quota = entry_bytes(entries)
    assert len(data) > 20 * quota
    with override_settings(PIWEB_MAX_STORED_BYTES_PER_USER=quota):
        assert _import(api_client, data).status_code == 201
        more = session_file([{**entries[0], "id": "new"}], header={**HEADER, "id": "sess-2"})
        refused = _import(api_client, more)
    assert refused.status_code == 413
    assert (
        f"would bring your sessions to {quota + entry_bytes([{**entries[0], 'id': 'new'}])} bytes"
        in (refused.json()["error"])
    )


def test_a_migrated_file_skips_its_lines_that_are_not_objects_too(api_client: Any) -> None:
    # Version 2: loaded whole and migrated, then stored like any other file.
    entries = small_tree()
    data = junk_file(entries, 1_400, header={**HEADER, "version": 2})
    response = _import(api_client, data)
    assert response.status_code == 201
    body = response.json()
    assert body["migrated"] is True and body["session"]["entryCount"] == 6
    assert Entry.objects.count() == 6
    skipped = skipped_numbers(data)
    assert body["skippedCount"] == len(skipped) > REPORTED_SKIPPED_LINES
    assert [item["line"] for item in body["skippedLines"]] == skipped[:REPORTED_SKIPPED_LINES]


def test_sync_skips_lines_that_are_not_objects_like_import(user: Any) -> None:
    owner = user()
    entries = small_tree()
    texts = [f"{text}\n" for text in ["1", line(entries[0]), "[1,2]", '"x"', line(entries[1]), "0"]]
    result = sync_lines(
        actor=owner,
        header_line=line(HEADER),
        start=Cursor(0, None, None),
        end_lines=len(texts),
        end_bytes=None,
        lines=texts,
    )
    assert result.appended == 2 and Entry.objects.count() == 2
    reasons = [(s.line_no, s.reason) for s in result.skipped.lines]
    assert reasons == [(1, NOT_AN_OBJECT), (3, NOT_AN_OBJECT), (4, NOT_AN_OBJECT), (6, EMPTY_VALUE)]


def test_reimporting_a_session_stored_with_such_lines_appends_only_the_new_entries(
    api_client: Any,
) -> None:
    entries = small_tree()
    session = services.import_jsonl(actor=api_client.user, data=session_file(entries[:3])).session
    # Before such lines were skipped an import stored them as rows without an id.
    with transaction.atomic():
        locked = ChatSession.objects.select_for_update().get(pk=session.pk)
        entry_store().append_lines(
            locked,
            [entry_from_value(0, [1, 2])],
            ["[1,2]"],
            where=str,
            move_leaf=False,
            author=author_of(api_client.user, imported=True),
        )
    grown = _import(api_client, junk_file(entries, 70))
    assert grown.status_code == 201, grown.json()
    assert grown.json()["created"] is False and grown.json()["appended"] == 3
    assert Entry.objects.filter(session=session).count() == 7
