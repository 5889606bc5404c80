"""Share-link tokens are stored hashed: shown once at creation, never again; links made before still open."""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from channels.testing import WebsocketCommunicator
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.test import Client
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from actionlog.models import ActionLog
from piweb.asgi import application
from sessions_app import services
from sessions_app.models import ShareLink
from tests.factories import session_file, small_tree

from .conftest import World

HASHING = ("sessions_app", "0014_hashed_share_link_tokens")
HEADERS = [(b"host", b"127.0.0.1:8000")]


def owner_client(world: World) -> APIClient:
    client = APIClient()
    client.force_login(world.owner)
    return client


def created(world: World, **body: Any) -> dict[str, Any]:
    response = owner_client(world).post(f"/api/sessions/{world.session.pk}/links/", body, format="json")
    assert response.status_code == 201, response.content
    return dict(response.data)


def stored_text(link_id: int) -> str:
    """Every column of the link's row as the database holds it."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT * FROM sessions_app_sharelink WHERE id = %s", [link_id])
        return repr(cursor.fetchone())


def test_the_database_holds_a_hash_and_a_prefix_never_the_token(world: World) -> None:
    made = created(world, scope="path", frozen=True)
    token = made["token"]
    assert made["url"].endswith(f"/s/{token}/") and len(token) >= 32
    row = stored_text(made["id"])
    assert token not in row
    assert token[:-1] not in row and token[1:] not in row
    link = ShareLink.objects.get(pk=made["id"])
    assert link.token_hash != token and len(link.token_hash) == 64
    assert token.startswith(link.token_prefix) and 0 < len(link.token_prefix) <= 8
    # The audit trail of the creation does not keep it either.
    assert all(token not in repr(row.detail) for row in ActionLog.objects.all())
    # And the link works with the token the creation answered with.
    assert Client().get(made["url"]).status_code == 200


def test_lists_pages_and_the_admin_never_show_a_usable_token(world: World, user: Callable[..., Any]) -> None:
    made = created(world)
    token = made["token"]
    owner = owner_client(world)
    answers = {
        "api list": owner.get(f"/api/sessions/{world.session.pk}/links/"),
        "links page": owner.get("/links/"),
        "session page": owner.get(f"/sessions/{world.session.pk}/"),
    }
    staff = Client()
    staff.force_login(user("admin", is_staff=True, is_superuser=True))
    answers["admin list"] = staff.get("/admin/sessions_app/sharelink/")
    answers["admin page"] = staff.get(f"/admin/sessions_app/sharelink/{made['id']}/change/")
    for name, response in answers.items():
        assert response.status_code == 200, name
        page = response.content.decode()
        assert token not in page, name
        assert f"/s/{token[:8]}" not in page, name
    rows = {row["id"]: row for row in answers["api list"].json()["results"]}
    row = rows[made["id"]]
    assert row["tokenPrefix"] == token[: len(row["tokenPrefix"])] and row["state"] == "active"
    assert f"{row['tokenPrefix']}…" in answers["links page"].content.decode()
    assert f"{row['tokenPrefix']}…" in answers["admin list"].content.decode()


def test_an_unknown_token_gets_the_same_404_as_a_dead_link(world: World) -> None:
    dead = services.create_share_link(session=world.session, actor=world.owner)
    services.revoke_share_link(link=dead, actor=world.owner)
    live = world.link.raw_token
    assert live is not None and dead.raw_token is not None
    candidates = {
        "revoked": dead.raw_token,
        "unknown": secrets.token_urlsafe(24),
        "one character off": live[:-1] + ("A" if live[-1] != "A" else "B"),
        "the stored prefix": world.link.token_prefix,
        "the stored hash": world.link.token_hash,
        "not token-shaped": "x" * 200,
    }
    answers: dict[str, tuple[int, str, int]] = {}
    for name, token in candidates.items():
        with CaptureQueriesContext(connection) as queries:
            response = Client().get(f"/s/{token}/")
        body = response.content.decode()
        answers[name] = (response.status_code, body.replace(token, "<token>"), len(queries))
        assert 'id="error-page"' in body and "may have expired or been revoked" in body, name
    # Same status, same page, same work (one indexed lookup of a hash) whatever was tried.
    assert len(set(answers.values())) == 1, answers
    assert next(iter(answers.values()))[0] == 404
    for token in candidates.values():
        reader = APIClient()
        reader.credentials(HTTP_X_SHARE_TOKEN=token)
        assert reader.get(f"/api/sessions/{world.session.pk}/").status_code == 404
    assert Client().get(f"/s/{live}/").status_code == 200


# -- the migration that hashed the tokens stored before ---------------------------------------------------


@pytest.fixture
def before_hashing(transactional_db: None) -> Iterator[Callable[[], Any]]:
    """Return ``go_back()``: the schema as it was before hashing, and its models.

    Called once the test has stored what today's code stores (later migrations may add columns that
    code reads); the schema is put back to the latest whatever happens.
    """

    def go_back() -> Any:
        executor = MigrationExecutor(connection)
        previous = executor.loader.graph.node_map[HASHING].parents
        (target,) = [parent.key for parent in previous if parent.key[0] == HASHING[0]]
        executor.migrate([target])
        return MigrationExecutor(connection).loader.project_state([target]).apps

    try:
        yield go_back
    finally:
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes())


def socket_state(pk: int, token: str) -> str:
    async def scenario() -> str:
        communicator = WebsocketCommunicator(
            application, f"/ws/sessions/{pk}/", headers=HEADERS, subprotocols=["piweb", f"piweb.link.{token}"]
        )
        connected, _ = await communicator.connect(timeout=5)
        try:
            return str((await communicator.receive_json_from(timeout=5))["type"]) if connected else "refused"
        finally:
            await communicator.disconnect()

    return async_to_sync(scenario)()


@pytest.mark.django_db(transaction=True)
def test_links_made_before_hashing_still_open_with_their_old_address(
    before_hashing: Callable[[], Any], user: Callable[..., Any]
) -> None:
    owner = user("olga")
    session = services.import_jsonl(actor=owner, data=session_file(small_tree())).session
    old = before_hashing().get_model("sessions_app", "ShareLink")
    kept = secrets.token_urlsafe(24)
    revoked = secrets.token_urlsafe(24)
    kept_id = old.objects.create(session_id=session.pk, token=kept, created_by_id=owner.pk).pk
    old.objects.create(session_id=session.pk, token=revoked, created_by_id=owner.pk)
    assert kept in stored_text(kept_id)

    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())

    assert kept not in stored_text(kept_id)
    link = ShareLink.objects.get(pk=kept_id)
    assert link.token_prefix and kept.startswith(link.token_prefix)
    # The old address, the header, the query parameter and the socket's subprotocol all still work.
    assert Client().get(f"/s/{kept}/").status_code == 200
    reader = APIClient()
    reader.credentials(HTTP_X_SHARE_TOKEN=kept)
    assert reader.get(f"/api/sessions/{session.pk}/").status_code == 200
    assert APIClient().get(f"/api/sessions/{session.pk}/tree/?link={kept}").status_code == 200
    assert socket_state(session.pk, kept) == "state"
    # Revoking a migrated link works like any other.
    other = ShareLink.objects.exclude(pk=kept_id).get()
    services.revoke_share_link(link=other, actor=owner)
    assert Client().get(f"/s/{revoked}/").status_code == 404
    owner_view = APIClient()
    owner_view.force_login(owner)
    listed = owner_view.get(f"/api/sessions/{session.pk}/links/").content.decode()
    assert kept not in listed and revoked not in listed
