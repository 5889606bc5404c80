"""A verified API token is remembered briefly, and forgotten the moment it is revoked or its user changes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from sessions_app.models import ApiToken

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
    session = services.import_jsonl(owner=owner, data=session_file(small_tree())).session
    fork = services.fork_session(session=session, entry_id="u2", actor=owner).session
    for one in (session, fork, services.create_session(owner=owner, cwd="/empty")):
        one.refresh_from_db()
        assert session_body(one) == dict(SessionSerializer(one).data)
