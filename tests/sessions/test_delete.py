"""Deleting a session: gone for everyone at once, then its rows purged in the background, in every table.

The delete itself only hides the session; the purge task deletes its rows in batches afterwards. The
first tests look at the moment between the two (the purge has not run: tests without a committed
transaction never reach the task), the later ones run the purge and check that nothing is left.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from io import StringIO
from typing import Any

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import Permission
from django.core.management import call_command
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from actionlog.models import ActionLog
from agent.models import AgentRun
from audit.models import OmittedAttempt, SessionUsage
from compaction_app.models import CompactionRun
from core.actors import SystemActor
from live.consumers import CLOSE_FORBIDDEN
from piweb.asgi import application
from piweb.celery import app as celery_app
from providers.models import LLMProvider
from sessions_app import services
from sessions_app.models import ChatSession, Entry, EntrySearch, Segment, SessionShare, ShareLink
from sessions_app.services import purging
from sessions_app.tasks import purge_deleted_session
from teams.models import Team, TeamMembership
from tests.factories import HEADER, assistant_message, session_file, small_tree, user_message

RARE = "zeppelin"
HEADER_OF_DOOMED = {**HEADER, "id": "doomed-session"}


@dataclass(frozen=True, slots=True)
class World:
    owner: Any
    editor: Any
    viewer: Any
    staff: Any
    session: ChatSession
    fork: ChatSession
    kept: ChatSession
    link: ShareLink
    kept_link: ShareLink
    data: bytes

    def client(self, account: Any) -> APIClient:
        client = APIClient()
        client.force_login(account)
        return client


def build_world(user: Callable[..., Any]) -> World:
    """A session with rows in every table that refers to it, shared with a team and through a link."""
    owner, editor, viewer = user("owner"), user("editor"), user("viewer")
    staff = user("auditor", is_staff=True, is_superuser=True)
    team = Team.objects.create(name="crew")
    TeamMembership.objects.create(team=team, user=owner, role=TeamMembership.Role.OWNER)
    TeamMembership.objects.create(team=team, user=editor, role=TeamMembership.Role.EDITOR)
    TeamMembership.objects.create(team=team, user=viewer, role=TeamMembership.Role.VIEWER)
    tree = [
        *small_tree(),
        user_message("u4", "a3", f"the {RARE} budget review"),
        assistant_message("a4", "u4", "noted", model="doomed-model"),
    ]
    data = session_file(tree, HEADER_OF_DOOMED)
    session = services.import_jsonl(actor=owner, data=data, filename="doomed.jsonl").session
    session.name = "Doomed plans"
    session.save(update_fields=["name"])
    services.share_with_team(session=session, team=team, access=SessionShare.Access.EDITOR, actor=owner)
    link = services.create_share_link(session=session, actor=owner)
    # An omitted attempt (audit), a compaction and an agent run, and a fork that names it as its parent.
    services.append_entries(
        session=session,
        actor=session.owner,
        entries=[{"type": "context_edit", "targetId": "a2", "replacement": None}],
    )
    CompactionRun.objects.create(
        idempotency_key=f"op-{uuid.uuid4()}",
        kind="compaction",
        session=session,
        reason="manual",
        requested_by=owner,
        status="succeeded",
        usage={"input": 7, "output": 3},
        model="p/summary",
    )
    provider = LLMProvider.objects.create(
        name="local", base_url="http://127.0.0.1:9/v1", model_id="m", provider="p"
    )
    AgentRun.objects.create(
        session=session, requested_by=owner, prompt="hi", provider=provider, status="failed"
    )
    fork = services.fork_session(session=session, entry_id="a1", actor=owner).session
    # Another session of the same owner, which everything below must leave alone.
    kept = services.import_jsonl(actor=owner, data=session_file(small_tree()), filename="kept.jsonl").session
    services.share_with_team(session=kept, team=team, access=SessionShare.Access.VIEWER, actor=owner)
    kept_link = services.create_share_link(session=kept, actor=owner)
    world = World(owner, editor, viewer, staff, session, fork, kept, link, kept_link, data)
    assert_rows_everywhere(world.session.pk)
    return world


def rows_of(session_id: int) -> dict[str, int]:
    """Count the rows every table holds for one session."""
    tables: dict[str, Any] = {
        "entries": Entry.objects,
        "search rows": EntrySearch.objects,
        "segments": Segment.objects,
        "omitted attempts": OmittedAttempt.objects,
        "usage": SessionUsage.objects,
        "compactions": CompactionRun.objects,
        "agent runs": AgentRun.objects,
        "team shares": SessionShare.objects,
        "share links": ShareLink.objects,
    }
    counts = {name: rows.filter(session_id=session_id).count() for name, rows in tables.items()}
    counts["session"] = ChatSession.with_deleted.filter(pk=session_id).count()
    return counts


def assert_rows_everywhere(session_id: int) -> None:
    assert all(rows_of(session_id).values()), rows_of(session_id)


@pytest.fixture
def world(user: Callable[..., Any]) -> World:
    return build_world(user)


@pytest.fixture
def deleted(world: World) -> World:
    """The world after its owner deleted the session through the API, before any purge ran."""
    assert world.client(world.owner).delete(f"/api/sessions/{world.session.pk}/").status_code == 204
    assert_rows_everywhere(world.session.pk)  # still stored: the purge has not run
    return world


# -- gone at once ---------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_owner_no_longer_finds_it_in_lists_pages_or_the_api(deleted: World) -> None:
    pk, owner = deleted.session.pk, deleted.client(deleted.owner)
    listed = [s["id"] for s in owner.get("/api/sessions/").json()["results"]]
    assert pk not in listed and deleted.kept.pk in listed
    page = owner.get("/").content.decode()
    assert "Doomed plans" not in page and f"/sessions/{deleted.kept.pk}/" in page
    for suffix in ("", "entries/", "tree/", "context/", "export/", "shares/", "links/"):
        assert owner.get(f"/api/sessions/{pk}/{suffix}").status_code == 404, suffix
    assert owner.get(f"/sessions/{pk}/").status_code == 404
    assert owner.delete(f"/api/sessions/{pk}/").status_code == 404  # deleting twice: already gone
    assert owner.get("/api/sync/", {"piId": "doomed-session"}).json()["sessionId"] is None
    assert owner.get(f"/api/sessions/{deleted.fork.pk}/").json()["forkedFrom"] is None


@pytest.mark.django_db
def test_search_finds_nothing_of_it(deleted: World) -> None:
    for account in (deleted.owner, deleted.editor):
        client = deleted.client(account)
        assert client.get("/api/search/", {"q": RARE}).json()["sessions"] == []
        assert "Doomed plans" not in client.get("/", {"q": RARE}).content.decode()
    hits = deleted.client(deleted.owner).get("/api/search/", {"q": "second question"}).json()["sessions"]
    assert {s["id"] for s in hits} == {deleted.kept.pk}


@pytest.mark.django_db
def test_team_members_lose_it_at_once(deleted: World) -> None:
    pk = deleted.session.pk
    for account in (deleted.editor, deleted.viewer):
        client = deleted.client(account)
        shared = [s["id"] for s in client.get("/api/sessions/").json()["results"]]
        assert pk not in shared and deleted.kept.pk in shared
        assert client.get(f"/api/sessions/{pk}/").status_code == 404
        assert client.get(f"/sessions/{pk}/").status_code == 404
        assert client.post(f"/api/sessions/{pk}/labels/", {"targetId": "a1", "label": "x"}).status_code == 404


@pytest.mark.django_db
def test_its_share_link_is_dead(deleted: World) -> None:
    token, pk = deleted.link.raw_token, deleted.session.pk
    anonymous = APIClient()
    assert anonymous.get(f"/s/{token}/").status_code == 404
    assert anonymous.get(f"/api/sessions/{pk}/", HTTP_X_SHARE_TOKEN=token).status_code == 404
    assert anonymous.get(f"/api/sessions/{pk}/entries/", {"link": token}).status_code == 404
    owner = deleted.client(deleted.owner)
    listed = re.findall(r'<tr data-link-id="(\d+)"', owner.get("/links/").content.decode())
    assert listed == [str(deleted.kept_link.pk)]
    assert anonymous.get(f"/s/{deleted.kept_link.raw_token}/").status_code == 200  # links work otherwise
    assert owner.delete(f"/api/links/{deleted.link.pk}/").status_code == 404


@pytest.mark.django_db
def test_the_audit_pages_drop_it_and_the_action_log_keeps_its_name(deleted: World) -> None:
    staff = Client()
    staff.force_login(deleted.staff)
    pk = deleted.session.pk
    omitted = staff.get("/admin/audit/omittedattempt/").content.decode()
    # The rows' cells, not the whole page: a random CSRF token may hold any two characters.
    failed = re.findall(r'class="field-failed_entry"[^>]*>(.*?)</t[dh]>', omitted, flags=re.S)
    assert not any("a2" in cell for cell in failed) and "0 omitted" in omitted
    compactions = staff.get("/admin/compaction_app/compactionrun/").content.decode()
    assert "0 compaction" in compactions
    runs = staff.get("/admin/agent/agentrun/").content.decode()
    assert "0 agent run" in runs
    sessions = staff.get("/admin/sessions_app/chatsession/").content.decode()
    assert "Doomed plans" not in sessions and "doomed-session" not in sessions
    assert staff.get(f"/admin/sessions_app/chatsession/{pk}/change/").status_code == 302  # "does not exist"
    for listing in ("entry", "sessionshare", "sharelink"):
        page = staff.get(f"/admin/sessions_app/{listing}/", {"q": "doomed-session"}).content.decode()
        assert 'id="result_list"' not in page, listing  # no row matches
        everything = staff.get(f"/admin/sessions_app/{listing}/").content.decode()
        assert 'id="result_list"' in everything, listing  # the kept session's rows are listed
    usage = staff.get("/admin/audit/usagerollup/").content.decode()
    assert "p/summary" not in usage and "doomed-model" not in usage and "p/m" in usage
    log = staff.get("/admin/actionlog/actionlog/", {"action__exact": "delete"}).content.decode()
    assert "Doomed plans" in log and f"/sessions/{pk}/" not in log


@pytest.mark.django_db
def test_the_same_file_can_be_imported_again_while_the_old_rows_wait(deleted: World) -> None:
    again = services.import_jsonl(actor=deleted.owner, data=deleted.data, filename="doomed.jsonl")
    assert again.session.pk != deleted.session.pk and again.appended == 8


@pytest.mark.django_db
def test_its_bytes_stop_counting_toward_the_storage_quota_at_once(world: World, settings: Any) -> None:
    another = session_file(small_tree(), {**HEADER, "id": "another"})
    raws = Entry.objects.filter(session__owner=world.owner).values_list("raw", flat=True)
    settings.PIWEB_MAX_STORED_BYTES_PER_USER = sum(len(raw.encode()) for raw in raws) + 10
    with pytest.raises(services.QuotaExceeded):
        services.import_jsonl(actor=world.owner, data=another)  # full
    services.delete_session(session=world.session, actor=world.owner)
    assert services.import_jsonl(actor=world.owner, data=another).appended == 6


@pytest.mark.django_db(transaction=True)
def test_open_sockets_hear_of_it_and_new_ones_are_refused(user: Callable[..., Any]) -> None:
    world = build_world(user)
    queue = f"piweb-test-purge-{uuid.uuid4().hex}"
    routes = celery_app.conf.task_routes
    celery_app.conf.task_routes = {**routes, "sessions.*": {"queue": queue}}
    celery_app.amqp.flush_routes()
    celery_app.amqp.router = celery_app.amqp.Router()
    pk = world.session.pk

    def headers(account: Any = None, token: str | None = None) -> list[tuple[bytes, bytes]]:
        found = [(b"host", b"127.0.0.1:8000"), (b"origin", b"http://127.0.0.1:8000")]
        if account is not None:
            client = Client()
            client.force_login(account)
            found.append((b"cookie", f"sessionid={client.cookies['sessionid'].value}".encode()))
        if token is not None:
            found.append((b"x-share-token", token.encode()))
        return found

    viewers = [headers(world.owner), headers(world.viewer), headers(token=world.link.raw_token)]

    def delete() -> int:
        return world.client(world.owner).delete(f"/api/sessions/{pk}/").status_code

    async def scenario() -> tuple[list[str], list[Any], list[Any]]:
        sockets = [WebsocketCommunicator(application, f"/ws/sessions/{pk}/", h) for h in viewers]
        for ws in sockets:
            assert (await ws.connect())[0]
            assert (await ws.receive_json_from(timeout=5))["type"] == "state"
        assert await sync_to_async(delete)() == 204
        heard = [(await ws.receive_json_from(timeout=5))["event"] for ws in sockets]
        # A socket still open re-checks on its next sync and is closed: the session is gone.
        closed = []
        for ws in sockets:
            await ws.send_json_to({"type": "sync", "seq": 0})
            closed.append((await ws.receive_output(timeout=5)).get("code"))
        refused = []
        for h in viewers:
            connected, code = await WebsocketCommunicator(application, f"/ws/sessions/{pk}/", h).connect()
            refused.append(None if connected else code)
        return heard, closed, refused

    try:
        heard, closed, refused = async_to_sync(scenario)()
        with celery_app.connection_for_write() as broker:
            waiting = broker.default_channel.client.llen(queue)
    finally:
        celery_app.conf.task_routes = routes
        celery_app.amqp.flush_routes()
        celery_app.amqp.router = celery_app.amqp.Router()
        with celery_app.connection_for_write() as broker:
            broker.default_channel.queue_delete(queue)
    assert heard == ["session_deleted"] * 3
    assert closed == refused == [CLOSE_FORBIDDEN] * 3
    assert waiting == 1  # the purge was queued once, for a worker
    assert_rows_everywhere(pk)


# -- purged afterwards ----------------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_purge_leaves_no_row_of_it_in_any_table(deleted: World) -> None:
    pk = deleted.session.pk
    assert purge_deleted_session.apply(args=(pk,)).get() is True
    assert rows_of(pk) == dict.fromkeys(rows_of(pk), 0)
    (logged,) = ActionLog.objects.filter(action="delete")
    assert (logged.session_id, logged.session_label, logged.actor_id) == (
        None,
        "Doomed plans",
        deleted.owner.pk,
    )
    deleted.fork.refresh_from_db()
    assert deleted.fork.forked_from_id is None and Entry.objects.filter(session=deleted.fork).exists()
    kept = rows_of(deleted.kept.pk)
    assert (kept["entries"], kept["team shares"], kept["share links"], kept["session"]) == (6, 1, 1, 1)
    assert purge_deleted_session.apply(args=(pk,)).get() is False  # twice: nothing left, no error


@dataclass
class CrashAfter:
    """Fail the purge's n-th DELETE of entries, as a worker killed in the middle of the purge would."""

    deletes: int
    seen: int = 0

    def __call__(self, execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        if sql.startswith("DELETE") and Entry._meta.db_table in sql:
            self.seen += 1
            if self.seen == self.deletes:
                raise ConnectionError("worker killed")
        return execute(sql, params, many, context)


@pytest.mark.django_db
def test_a_purge_cut_short_stays_hidden_and_the_next_run_finishes_it(deleted: World) -> None:
    pk = deleted.session.pk
    stored = Entry.objects.filter(session_id=pk).count()
    with pytest.raises(ConnectionError), connection.execute_wrapper(CrashAfter(deletes=3)):
        purging.purge_session(pk, actor=SystemActor("tests"), batch=2)
    # Two batches went (4 entries), the third rolled back; the session is still hidden from everyone.
    assert Entry.objects.filter(session_id=pk).count() == stored - 4
    assert not ChatSession.objects.filter(pk=pk).exists() and ChatSession.with_deleted.filter(pk=pk).exists()
    assert deleted.client(deleted.owner).get(f"/api/sessions/{pk}/").status_code == 404
    assert purge_deleted_session.apply(args=(pk,), kwargs={"batch": 2}).get() is True
    assert rows_of(pk) == dict.fromkeys(rows_of(pk), 0)


@pytest.mark.django_db
def test_the_sweep_command_finishes_every_deleted_session_and_no_live_one(deleted: World) -> None:
    other = services.import_jsonl(
        actor=deleted.editor, data=session_file(small_tree()), filename="other.jsonl"
    ).session
    services.delete_session(session=other, actor=deleted.editor)  # its task never ran either
    assert (
        purging.purge_session(deleted.kept.pk, actor=SystemActor("tests")) is False
    )  # a live session is never purged
    out = StringIO()
    call_command("purge_deleted_sessions", stdout=out)
    assert out.getvalue().strip() == "purged 2 deleted sessions"
    for pk in (deleted.session.pk, other.pk):
        assert sum(rows_of(pk).values()) == 0
    assert rows_of(deleted.kept.pk)["entries"] == 6
    call_command("purge_deleted_sessions", stdout=out)
    assert out.getvalue().strip().endswith("purged 0 deleted sessions")


def confirm_in_admin(world: World, url: str) -> tuple[Client, str]:
    """Open an admin delete confirmation as staff; return the client and the page.

    The page must count entries, not load each one to list it (a 1M-entry session would not fit).
    """
    admin = Client()
    admin.force_login(world.staff)
    with CaptureQueriesContext(connection) as confirming:
        page = admin.get(url)
    assert page.status_code == 200
    assert not any(Entry._meta.db_table in q["sql"] for q in confirming.captured_queries)
    return admin, page.content.decode()


@pytest.mark.django_db
def test_deleting_from_the_admin_is_the_same_delete_logged_as_the_staff_member(world: World) -> None:
    url = f"/admin/sessions_app/chatsession/{world.session.pk}/delete/"
    admin, page = confirm_in_admin(world, url)
    assert "Entries (purged in the background): 9" in page
    assert admin.post(url, {"post": "yes"}).status_code == 302
    pk = world.session.pk
    assert world.client(world.owner).get(f"/api/sessions/{pk}/").status_code == 404
    assert_rows_everywhere(pk)  # hidden at once, the rows wait for the purge
    (logged,) = ActionLog.objects.filter(action="delete")
    assert (logged.actor_id, logged.detail) == (world.staff.pk, {"by_staff": True})
    # "Delete selected" on the list does the same, one session at a time.
    listing = "/admin/sessions_app/chatsession/"
    chosen = {"action": "delete_selected", "_selected_action": [world.kept.pk], "post": "yes"}
    assert admin.post(listing, chosen).status_code == 302
    assert not ChatSession.objects.filter(pk=world.kept.pk).exists()
    assert rows_of(world.kept.pk)["entries"] == 6
    assert purging.purge_session(pk, actor=SystemActor("tests")) and purging.purge_session(
        world.kept.pk, actor=SystemActor("tests")
    )
    assert sum(rows_of(pk).values()) == sum(rows_of(world.kept.pk).values()) == 0


@pytest.mark.django_db
def test_deleting_a_user_from_the_admin_deletes_their_sessions_first(world: World) -> None:
    url = f"/admin/auth/user/{world.owner.pk}/delete/"
    # Staff who may delete users but not sessions cannot delete a user who owns some.
    clerk = type(world.owner).objects.create_user("clerk", is_staff=True)
    clerk.user_permissions.add(*Permission.objects.filter(codename__in=["view_user", "delete_user"]))
    limited = Client()
    limited.force_login(clerk)
    assert "chat session" in limited.get(url).content.decode()
    assert limited.post(url, {"post": "yes"}).status_code == 403
    admin, page = confirm_in_admin(world, url)
    owned = [world.session.pk, world.fork.pk, world.kept.pk]
    stored = Entry.objects.filter(session_id__in=owned).count()
    assert "Sessions: 3" in page and f"Entries (purged first): {stored}" in page
    assert admin.post(url, {"post": "yes"}).status_code == 302
    assert not type(world.owner).objects.filter(pk=world.owner.pk).exists()
    for pk in owned:
        assert sum(rows_of(pk).values()) == 0, rows_of(pk)
    # Each session's delete is in the action log under the staff member; the other users are untouched.
    logged = ActionLog.objects.filter(action="delete")
    assert sorted(logged.values_list("actor_id", flat=True)) == [world.staff.pk] * 3
    assert world.client(world.editor).get("/api/sessions/").status_code == 200
    assert Team.objects.filter(name="crew").exists()


def test_purges_go_to_the_default_queue_never_to_runs() -> None:
    from piweb import workers

    route = celery_app.amqp.router.route
    for task in ("sessions.purge_deleted_session", "sessions.sweep_deleted_sessions"):
        assert route({}, task)["queue"].name == workers.DEFAULT_QUEUE
    consumed = workers.worker_commands({})[1]
    assert workers.DEFAULT_QUEUE in consumed[consumed.index("-Q") + 1].split(",")
