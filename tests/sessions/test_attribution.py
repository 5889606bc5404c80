"""Every entry written through piweb names who wrote it, on every write path, and the API shows it.

The author lives in piweb's own column, never in the stored line: the export stays byte-exact.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import pytest
from rest_framework.test import APIClient

from core.actors import command
from sessions_app import services
from sessions_app.models import ApiToken, ChatSession, Entry
from teams import services as team_services
from teams.models import TeamMembership
from tests.factories import HEADER, session_file, small_tree
from tests.sync.helpers import chain, header

pytestmark = pytest.mark.django_db


def authors(session: ChatSession) -> list[str | None]:
    """Return each stored entry's author as the entry card names it, in append order."""
    rows = Entry.objects.filter(session=session).select_related("author").order_by("seq")
    return [row.author.to_domain().label() if row.author else None for row in rows]


def token_client(owner: Any, name: str) -> APIClient:
    _, text = ApiToken.objects.create(user=owner, name=name)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {text}")
    return client


def say(text: str) -> dict[str, Any]:
    return {"type": "message", "message": {"role": "user", "content": text, "timestamp": 1}}


def test_an_append_from_the_browser_is_the_users_and_from_a_token_the_devices(
    api_client: APIClient, user: Callable[..., Any]
) -> None:
    eddie = api_client.user
    session = services.create_session(actor=eddie, cwd="/w")
    answer = api_client.post(f"/api/sessions/{session.pk}/append/", {"entries": [say("hi")]}, format="json")
    assert answer.status_code == 201, answer.json()
    author = answer.json()["entries"][0]["author"]
    assert author == {
        "kind": "user",
        "name": eddie.username,
        "userId": eddie.pk,
        "via": "",
        "imported": False,
        "label": eddie.username,
    }
    laptop = token_client(eddie, "laptop")
    answer = laptop.post(f"/api/sessions/{session.pk}/append/", {"entries": [say("again")]}, format="json")
    assert answer.status_code == 201, answer.json()
    assert answer.json()["entries"][0]["author"]["label"] == f"{eddie.username} via laptop"
    # The list and the path show the same, and the stored lines know nothing of it.
    listed = api_client.get(f"/api/sessions/{session.pk}/entries/").json()["entries"]
    assert [e["author"]["kind"] for e in listed] == ["user", "device"]
    assert all("author" not in e["entry"] for e in listed)
    exported = b"".join(api_client.get(f"/api/sessions/{session.pk}/export/").streaming_content).decode()
    assert "laptop" not in exported and eddie.username not in exported


def test_an_import_is_recorded_as_imported_by_the_importer_and_a_reimport_too(api_client: APIClient) -> None:
    eddie = api_client.user
    entries = small_tree()
    data = session_file(entries[:3])
    answer = api_client.post("/api/sessions/import/", {"file": _upload(data)}, format="multipart")
    assert answer.status_code == 201, answer.json()
    session = ChatSession.objects.get(pk=answer.json()["session"]["id"])
    again = services.import_jsonl(actor=eddie, data=session_file(entries))
    assert again.appended == len(entries) - 3
    assert authors(session) == [f"imported by {eddie.username}"] * len(entries)
    # A command importing for a user is named as the command.
    other = services.import_jsonl(
        actor=command("import_pi_sessions"),
        owner=eddie,
        data=session_file(entries, {**HEADER, "id": "other"}),
    )
    assert set(authors(other.session)) == {"imported by manage.py import_pi_sessions"}


def _upload(data: bytes) -> Any:
    from django.core.files.uploadedfile import SimpleUploadedFile

    return SimpleUploadedFile("s.jsonl", data, content_type="application/x-ndjson")


def test_a_sync_push_names_the_device_it_came_from(user: Callable[..., Any]) -> None:
    eddie = user("eddie")
    desk, laptop = token_client(eddie, "desk"), token_client(eddie, "laptop")
    control = {"header": header(), "path": "/home/eddie/s.jsonl"}
    first = desk.post(
        "/api/sync/",
        {**control, "from": {"lines": 0, "bytes": 0}, "to": {"lines": 2, "bytes": 0}, "lines": chain(2)},
        format="json",
    )
    assert first.status_code == 200, first.json()
    second = laptop.post(
        "/api/sync/",
        {
            **control,
            "from": {"lines": 2, "bytes": 0, "lastId": "e1"},
            "to": {"lines": 3, "bytes": 0},
            "lines": chain(1, start=2),
        },
        format="json",
    )
    assert second.status_code == 200, second.json()
    session = ChatSession.objects.get(pi_id="sync-demo")
    assert authors(session) == ["eddie via desk", "eddie via desk", "eddie via laptop"]


def test_a_label_and_a_rename_are_the_users(api_client: APIClient) -> None:
    eddie = api_client.user
    session = services.import_jsonl(actor=eddie, data=session_file(small_tree())).session
    target = Entry.objects.filter(session=session).order_by("seq").first()
    assert target is not None and target.entry_id is not None
    services.set_label(session=session, target_id=target.entry_id, label="start", actor=eddie)
    services.rename_session(session=session, name="Renamed", actor=eddie)
    assert authors(session)[-2:] == [eddie.username, eddie.username]


def test_a_fork_and_a_clone_keep_who_wrote_each_copied_entry(
    api_client: APIClient, user: Callable[..., Any]
) -> None:
    eddie, ada = api_client.user, user("ada")
    session = services.create_session(actor=eddie, cwd="/w")
    services.append_entries(session=session, entries=[say("one")], actor=eddie)
    session.refresh_from_db()
    team = team_services.create_team(actor=eddie, name="t")
    TeamMembership.objects.create(team=team, user=ada, role=TeamMembership.Role.EDITOR)
    services.share_with_team(session=session, team=team, access="editor", actor=eddie)
    services.append_entries(session=session, entries=[say("two")], actor=ada)
    session.refresh_from_db()
    clone = services.clone_session(session=session, actor=ada)
    assert authors(clone) == [eddie.username, "ada"]
    leaf = session.leaf_entry_id
    assert leaf is not None
    fork = services.fork_session(session=session, entry_id=leaf, actor=ada, position="at").session
    assert authors(fork) == [eddie.username, "ada"]


def test_rows_stored_before_authors_were_recorded_show_no_author(api_client: APIClient) -> None:
    session = services.create_session(actor=api_client.user, cwd="/w")
    services.append_entries(session=session, entries=[say("old")], actor=api_client.user)
    Entry.objects.filter(session=session).update(author=None)
    listed = api_client.get(f"/api/sessions/{session.pk}/entries/").json()["entries"]
    assert [e["author"] for e in listed] == [None]
    assert json.loads(Entry.objects.get(session=session).raw)["message"]["content"] == "old"


def test_staff_see_and_filter_entry_authors_in_the_admin(user: Callable[..., Any], client: Any) -> None:
    eddie = user("eddie")
    services.import_jsonl(actor=eddie, data=session_file(small_tree()))
    session = services.create_session(actor=eddie, cwd="/w")
    services.append_entries(session=session, entries=[say("typed")], actor=eddie)
    client.force_login(user("staff", is_staff=True, is_superuser=True))
    page = client.get("/admin/sessions_app/entry/").content.decode()
    authors_shown = re.findall(r'class="field-author[^"]*">([^<]*)<', page)
    assert sorted(set(authors_shown)) == ["eddie", "imported by eddie"]
    services.import_jsonl(
        actor=command("import_pi_sessions"),
        owner=eddie,
        data=session_file(small_tree(), {**HEADER, "id": "by-command"}),
    )
    shown = client.get("/admin/sessions_app/entry/?author__kind=system").content.decode()
    assert set(re.findall(r'class="field-author[^"]*">([^<]*)<', shown)) == {
        "imported by manage.py import_pi_sessions"
    }
