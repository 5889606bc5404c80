"""The action-log admin page: filters by session, user, team, action and time, and the CSV download."""

from __future__ import annotations

import csv
import io
import json
from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from actionlog.models import ActionLog
from core.actors import PURGE_WORKER
from sessions_app import services
from teams import services as team_services
from tests.factories import conversation, store

pytestmark = pytest.mark.django_db

ACTIONS = "/admin/actionlog/actionlog/"


@pytest.fixture
def logged(user: Any) -> dict[str, Any]:
    """Two users' writes on two sessions and a team, and a purge by the worker."""
    ada, bob = user("ada"), user("bob")
    first = store(ada, conversation(2), pi_id="first")
    second = store(bob, conversation(2), pi_id="second")
    team = team_services.create_team(actor=ada, name="core")
    services.rename_session(session=first, name='=HYPERLINK("x")', actor=ada)
    services.share_with_team(session=first, team=team, access="viewer", actor=ada)
    services.delete_session(session=second, actor=bob)
    services.purge_session(second.pk, actor=PURGE_WORKER)
    staff = Client()
    staff.force_login(user("auditor", is_staff=True, is_superuser=True))
    return {"ada": ada, "bob": bob, "first": first, "second": second, "team": team, "staff": staff}


def _csv(client: Client, query: str = "") -> list[dict[str, str]]:
    response = client.get(f"{ACTIONS}csv/{query}")
    assert response.status_code == 200
    assert response["Content-Disposition"] == 'attachment; filename="action-log.csv"'
    text = b"".join(response.streaming_content).decode()
    return list(csv.DictReader(io.StringIO(text)))


def test_the_csv_holds_every_row_with_who_acted(logged: dict[str, Any]) -> None:
    rows = _csv(logged["staff"])
    assert sorted((r["action"], r["actor"], r["actor_kind"]) for r in rows) == sorted(
        [
            ("import", "ada", "user"),
            ("import", "bob", "user"),
            ("team_create", "ada", "user"),
            ("rename", "ada", "user"),
            ("share", "ada", "user"),
            ("delete", "bob", "user"),
            ("purge", "purge-worker", "system"),
        ]
    )
    share = next(r for r in rows if r["action"] == "share")
    assert (share["team"], json.loads(share["detail"])["access"]) == ("core", "viewer")
    # The purged session's rows keep its id and label, though the session is gone.
    purge = next(r for r in rows if r["action"] == "purge")
    assert (purge["session_id"], purge["session"]) == (str(logged["second"].pk), "second")
    rename = next(r for r in rows if r["action"] == "rename")
    assert rename["session"].startswith("'=")  # a spreadsheet shows the name, never runs it


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("?action__exact=import", {("import", "ada"), ("import", "bob")}),
        ("?actor_kind__exact=system", {("purge", "purge-worker")}),
        ("?session=first", {("import", "ada"), ("rename", "ada"), ("share", "ada")}),
        ("?session=second", {("import", "bob"), ("delete", "bob"), ("purge", "purge-worker")}),
    ],
)
def test_the_download_follows_the_filters(logged: dict[str, Any], query: str, expected: set[Any]) -> None:
    assert {(r["action"], r["actor"]) for r in _csv(logged["staff"], query)} == expected


def test_filters_by_user_team_session_id_and_time(logged: dict[str, Any]) -> None:
    staff, ada, team = logged["staff"], logged["ada"], logged["team"]
    by_user = {r["action"] for r in _csv(staff, f"?actor__id__exact={ada.pk}")}
    assert by_user == {"import", "team_create", "rename", "share"}
    by_team = {r["action"] for r in _csv(staff, f"?team__id__exact={team.pk}")}
    assert by_team == {"team_create", "share"}
    by_id = {r["action"] for r in _csv(staff, f"?session={logged['second'].pk}")}
    assert by_id == {"import", "delete", "purge"}
    ActionLog.objects.filter(action="import").update(created_at=timezone.now() - timedelta(days=3))
    day = (timezone.now() - timedelta(days=1)).date().isoformat()
    assert "import" not in {r["action"] for r in _csv(staff, f"?since={day}")}
    assert {r["action"] for r in _csv(staff, f"?until={day}")} == {"import"}


def test_the_page_offers_the_filters_and_the_download(logged: dict[str, Any]) -> None:
    page = logged["staff"].get(f"{ACTIONS}?session=first").content.decode()
    assert f'href="{ACTIONS}csv/?session=first"' in page
    for title in ("session (id or Pi id)", "from (date or time)", "before (date or time)"):
        assert title in page
    assert "purge-worker (system)" not in page  # filtered to the first session
    everything = logged["staff"].get(ACTIONS).content.decode()
    assert "purge-worker (system)" in everything


def test_only_staff_download_the_log(logged: dict[str, Any], user: Any) -> None:
    client = Client()
    client.force_login(logged["ada"])
    assert client.get(f"{ACTIONS}csv/").status_code == 302  # to the admin login


def test_every_verb_reads_as_words_in_the_log_and_its_filters(client, user) -> None:
    from actionlog.verbs import declared_verbs, spoken

    # A verb added without words would show its code: each has its own, and no two read alike.
    described = {verb: spoken(verb) for verb in declared_verbs()}
    assert all("_" not in words for words in described.values()), described
    assert len(set(described.values())) == len(described)
    staff = user("root", is_staff=True, is_superuser=True)
    session = store(staff, conversation(1), pi_id="words")
    services.rename_session(session=session, name="Words", actor=staff)
    client.force_login(staff)
    page = client.get("/admin/actionlog/actionlog/").content.decode()
    assert "renamed" in page and ">rename<" not in page
    assert "name: Words" in page and '{"name": "Words"}' not in page
    assert ">team created<" in page  # the filter's choices read as words too
