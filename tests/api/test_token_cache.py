"""A verified API token is remembered briefly, and forgotten the moment it is revoked or its user changes,
in every web process."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.exceptions import AuthenticationFailed
from rest_framework.test import APIClient

from accounts_app.authentication import (
    ApiTokenAuthentication,
    TokenMemory,
    current_epoch,
    forget_all_tokens,
)
from sessions_app.models import ApiToken
from tests.faults.stack import PrivateRedis

pytestmark = pytest.mark.django_db


def bearer(text: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {text}")
    return client


def token_queries(client: APIClient, url: str) -> tuple[int, int]:
    with CaptureQueriesContext(connection) as queries:
        status = client.get(url).status_code
    return status, sum(1 for q in queries.captured_queries if "apitoken" in q["sql"])


def test_a_second_request_skips_the_token_lookup_and_a_revoke_is_immediate(user: Callable[..., Any]) -> None:
    owner = user()
    token, text = ApiToken.objects.create(user=owner)
    _, other_text = ApiToken.objects.create(user=owner)
    client = bearer(text)
    assert token_queries(client, "/api/sessions/")[0] == 200
    assert token_queries(client, "/api/sessions/") == (200, 0)
    assert bearer(other_text).delete(f"/api/tokens/{token.token_key}/").status_code == 204
    assert client.get("/api/sessions/").status_code in (401, 403)
    assert bearer(other_text).get("/api/sessions/").status_code == 200


def test_a_deactivated_user_is_refused_at_once(user: Callable[..., Any]) -> None:
    owner = user()
    _, text = ApiToken.objects.create(user=owner)
    client = bearer(text)
    assert client.get("/api/sessions/").status_code == 200
    owner.is_active = False
    owner.save()
    assert client.get("/api/sessions/").status_code in (401, 403)


def test_the_session_read_says_what_the_session_serializer_says(user: Callable[..., Any]) -> None:
    from sessions_app import services
    from sessions_app.api.serializers import SessionSerializer, session_body
    from tests.factories import session_file, small_tree

    owner = user()
    session = services.import_jsonl(actor=owner, data=session_file(small_tree())).session
    fork = services.fork_session(session=session, entry_id="u2", actor=owner).session
    for one in (session, fork, services.create_session(actor=owner, cwd="/empty")):
        one.refresh_from_db()
        assert session_body(one) == dict(SessionSerializer(one).data)


# -- several web processes on one Redis ------------------------------------------------------------------


@pytest.fixture
def shared_redis(settings: Any, tmp_path: Path) -> Iterator[PrivateRedis]:
    """Point the shared cache at a redis-server of this test's own, which the test may stop and start."""
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed")
    server = PrivateRedis(tmp_path)
    server.service.start()
    before = settings.CACHES
    shared = {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": server.url}
    settings.CACHES = {**before, "shared": shared}
    try:
        yield server
    finally:
        settings.CACHES = before  # before the server goes: the suite's own teardown clears the caches
        server.service.stop()


def process() -> ApiTokenAuthentication:
    """Return the token check of another web process: its own remembered lookups, the same Redis."""
    check = ApiTokenAuthentication()
    check.memory = TokenMemory()
    return check


def looked_up(check: ApiTokenAuthentication, text: str) -> bool:
    """Authenticate ``text`` through ``check``; return whether that read the token table."""
    with CaptureQueriesContext(connection) as queries:
        check.authenticate_credentials(text.encode())
    return any("apitoken" in q["sql"] for q in queries.captured_queries)


def test_a_revoke_through_one_process_is_refused_by_every_other_at_once(
    user: Callable[..., Any], shared_redis: PrivateRedis, django_capture_on_commit_callbacks: Any
) -> None:
    owner = user()
    token, text = ApiToken.objects.create(user=owner)
    _, other_text = ApiToken.objects.create(user=owner)
    first, second = process(), process()
    for check in (first, second):
        assert looked_up(check, text)
        assert not looked_up(check, text)  # remembered
    with django_capture_on_commit_callbacks(execute=True):
        assert bearer(other_text).delete(f"/api/tokens/{token.token_key}/").status_code == 204
    for check in (first, second):
        with pytest.raises(AuthenticationFailed):
            check.authenticate_credentials(text.encode())
    # The other token was forgotten too, but only for one lookup.
    assert looked_up(first, other_text)
    assert not looked_up(first, other_text)


def test_a_lookup_made_before_the_revoke_committed_is_not_trusted_after(
    user: Callable[..., Any], shared_redis: PrivateRedis, django_capture_on_commit_callbacks: Any
) -> None:
    owner = user()
    token, _ = ApiToken.objects.create(user=owner)
    memory = TokenMemory()
    with django_capture_on_commit_callbacks(execute=True):
        forget_all_tokens()
        # Another process looks the token up now: the row is still there until the commit.
        memory.put(token.digest, current_epoch(), owner, token)
        assert memory.get(token.digest, current_epoch()) is not None
    assert memory.get(token.digest, current_epoch()) is None


# Committed for real: the failed revoke must roll back on its own, as it does outside a test.
@pytest.mark.django_db(transaction=True)
def test_without_redis_tokens_are_checked_in_the_database_and_a_revoke_waits_for_it(
    user: Callable[..., Any], shared_redis: PrivateRedis
) -> None:
    owner = user()
    token, text = ApiToken.objects.create(user=owner)
    _, other_text = ApiToken.objects.create(user=owner)
    check = process()
    assert looked_up(check, text)
    assert not looked_up(check, text)
    shared_redis.service.stop()
    # Every request looks its token up: whatever was revoked meanwhile cannot be known here.
    assert looked_up(check, text)
    assert looked_up(check, text)
    assert bearer(text).get("/api/sessions/").status_code == 200
    # A revoke that no process could hear of is refused whole; the token stays valid.
    failing = APIClient(raise_request_exception=False)
    failing.credentials(HTTP_AUTHORIZATION=f"Bearer {other_text}")
    assert failing.delete(f"/api/tokens/{token.token_key}/").status_code == 500
    assert ApiToken.objects.filter(pk=token.pk).exists()
    shared_redis.service.start()  # empty: it keeps nothing on disk
    assert looked_up(check, text)
    assert not looked_up(check, text)
    assert bearer(other_text).delete(f"/api/tokens/{token.token_key}/").status_code == 204
    with pytest.raises(AuthenticationFailed):
        check.authenticate_credentials(text.encode())


def test_signing_in_keeps_remembered_tokens(user: Callable[..., Any]) -> None:
    owner = user()
    _, text = ApiToken.objects.create(user=owner)
    client = bearer(text)
    assert token_queries(client, "/api/sessions/")[0] == 200
    assert APIClient().login(username=owner.username, password="pw-for-tests")
    assert token_queries(client, "/api/sessions/") == (200, 0)
    owner.first_name = "Ada"
    owner.save()
    assert token_queries(client, "/api/sessions/")[0] == 200
    assert token_queries(client, "/api/sessions/") == (200, 0)


def test_requests_on_threads_of_their_own_share_a_few_redis_connections(shared_redis: PrivateRedis) -> None:
    # Under ASGI every request runs on a new thread; the epoch's connection must outlive it, or each
    # request opens (and the server accepts) a connection of its own.
    import threading

    import redis

    stats = redis.Redis.from_url(shared_redis.url)
    before = stats.info("stats")["total_connections_received"]
    epochs: list[str | None] = []
    for _ in range(40):
        thread = threading.Thread(target=lambda: epochs.append(current_epoch()))
        thread.start()
        thread.join()
    opened = stats.info("stats")["total_connections_received"] - before
    assert len(set(epochs)) == 1 and epochs[0] is not None
    assert opened <= 2
