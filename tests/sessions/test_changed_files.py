"""The count of files a session changed, on all its branches: kept at write time on every write path,
shown by the session list, counted by reconcile for a session stored before the count."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from sessions_app import services
from sessions_app.models import ChangedFile, ChatSession, ShareLink
from sessions_app.services.reconcile import reconcile_session
from tests.factories import FILES_HEADER, line, session_file, tool_turn, two_branches_with_files

pytestmark = pytest.mark.django_db


@pytest.fixture
def owner(user: Callable[..., Any]) -> Any:
    return user("counter")


def imported(owner: Any, entries: list[dict[str, Any]] | None = None) -> ChatSession:
    data = session_file(entries or two_branches_with_files(), FILES_HEADER)
    return services.import_jsonl(actor=owner, data=data, filename="f.jsonl").session


def paths(session: ChatSession) -> list[str]:
    return sorted(ChangedFile.objects.filter(session=session).values_list("path", flat=True))


def fresh(session: ChatSession) -> int | None:
    return ChatSession.objects.get(pk=session.pk).files_changed


def test_an_import_counts_the_files_of_every_branch_and_not_a_failed_edit(owner: Any) -> None:
    session = imported(owner)
    # shared.txt (both branches), other.txt (the branch left behind), src/a.py; the failed edit is not one.
    assert paths(session) == ["/w/other.txt", "/w/shared.txt", "/w/src/a.py"]
    assert session.files_changed == 3 and fresh(session) == 3


def test_appends_count_new_files_once_even_when_the_call_came_in_an_earlier_append(owner: Any) -> None:
    session = imported(owner)
    again = tool_turn("c5", "c4-r", "edit", {"path": "shared.txt", "oldText": "one", "newText": "1"})
    services.append_entries(session=session, entries=again, actor=owner)
    assert fresh(session) == 3  # a file changed before
    call, result = tool_turn("c6", "c5-r", "write", {"path": "new.txt", "content": "n\n"})
    services.append_entries(session=session, entries=[call], actor=owner)
    assert fresh(session) == 3  # asked for, not done yet
    services.append_entries(session=session, entries=[result], actor=owner)
    assert fresh(session) == 4 and session.files_changed == 4
    # Two calls in one message, their results one below the other (as Pi writes them), appended apart.
    turn = tool_turn("c7", "c6-r", "write", {"path": "p1.txt", "content": "1"})
    second = tool_turn("c8", "c7-a", "write", {"path": "p2.txt", "content": "2"})
    turn[0]["message"]["content"].append(second[0]["message"]["content"][0])
    second[1]["parentId"] = "c7-r"
    services.append_entries(session=session, entries=turn, actor=owner)
    services.append_entries(session=session, entries=[second[1]], actor=owner)
    assert fresh(session) == 6
    assert "/w/p2.txt" in paths(session)


def test_navigation_changes_nothing_and_a_clone_counts_its_own(owner: Any) -> None:
    session = imported(owner)
    services.navigate_without_summary(session=session, target_id="c9-r", actor=owner)
    assert fresh(session) == 3
    clone = services.clone_session(session=session, actor=owner, entry_id="c9-r")
    assert paths(clone) == ["/w/other.txt", "/w/shared.txt"] and fresh(clone) == 2
    empty = services.create_session(actor=owner, name="empty", cwd="/w")
    assert fresh(empty) == 0


def test_a_sync_push_counts_what_it_brings(owner: Any) -> None:
    client = APIClient()
    client.force_authenticate(user=owner)
    entries = two_branches_with_files()
    header = line({**FILES_HEADER, "id": "synced-files"})

    def push(start: int, end: int) -> None:
        control = {
            "header": header,
            "from": {"lines": start, "bytes": 0, "lastId": entries[start - 1]["id"] if start else None},
            "to": {"lines": end, "bytes": 0},
            "path": "/home/me/synced.jsonl",
        }
        lines = "".join(line(e) + "\n" for e in entries[start:end])
        body = (json.dumps(control) + "\n" + lines).encode()
        response = client.generic("POST", "/api/sync/", body, content_type="application/x-ndjson")
        assert response.status_code == 200, response.content

    push(0, 4)  # u0, c0 (shared.txt), u3, c9's call only
    session = ChatSession.objects.get(owner=owner, pi_id="synced-files")
    assert session.files_changed == 1
    push(4, len(entries))  # c9's result, then branch A
    assert fresh(session) == 3


def test_the_list_shows_the_count_without_reading_entries_and_a_path_link_is_not_told(
    owner: Any, user: Callable[..., Any]
) -> None:
    session = imported(owner)
    client = APIClient()
    client.force_authenticate(user=owner)
    with CaptureQueriesContext(connection) as queries:
        listed = client.get("/api/sessions/").json()
    # The count is the session row's: no changed file and no tool result is read (the list reads
    # entries only for the first prompt of an unnamed session).
    assert not any("changedfile" in q["sql"] or "toolResult" in q["sql"] for q in queries.captured_queries)
    assert listed["results"][0]["filesChanged"] == 3
    assert client.get(f"/api/sessions/{session.pk}/").json()["filesChanged"] == 3

    link = services.create_share_link(session=session, actor=owner, scope=ShareLink.Scope.PATH)
    holder = APIClient()
    holder.credentials(HTTP_X_SHARE_TOKEN=link.raw_token)
    assert holder.get(f"/api/sessions/{session.pk}/").json()["filesChanged"] is None

    browser = Client()
    browser.force_login(owner)
    page = browser.get("/")
    assert page.status_code == 200
    text = page.content.decode()
    assert "Files changed" in text and '<td class="num files">3</td>' in text


def test_reconcile_counts_a_session_stored_before_the_count(owner: Any) -> None:
    session = imported(owner)
    ChangedFile.objects.filter(session=session).delete()
    ChatSession.objects.filter(pk=session.pk).update(files_changed=None)
    # Stored before the count: appends keep their rows but leave the count to reconcile.
    services.append_entries(
        session=session,
        entries=tool_turn("c5", "c4-r", "write", {"path": "late.txt", "content": "l\n"}),
        actor=owner,
    )
    assert fresh(session) is None
    assert "changed files" in reconcile_session(session.pk)
    assert fresh(session) == 4
    assert paths(session) == ["/w/late.txt", "/w/other.txt", "/w/shared.txt", "/w/src/a.py"]
    assert "changed files" not in reconcile_session(session.pk)  # right now: left as it is


def test_a_purged_session_leaves_no_changed_files(owner: Any) -> None:
    from core.actors import PURGE_WORKER
    from sessions_app.services import purging

    session = imported(owner)
    services.delete_session(session=session, actor=owner)
    assert purging.purge_session(session.pk, actor=PURGE_WORKER)
    assert not ChangedFile.objects.filter(session_id=session.pk).exists()
