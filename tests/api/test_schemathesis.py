"""Requests generated from the published OpenAPI document never get a server error, and requests that
break it (wrong types, blank values, missing fields) are refused rather than converted and stored."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.db import close_old_connections, transaction
from hypothesis import HealthCheck, Phase, settings
from schemathesis.checks import negative_data_rejection, not_a_server_error
from schemathesis.transport.serialization import serialize_binary

import piweb.wsgi
from pitree.storable import MAX_ID_CHARS
from sessions_app import services
from sessions_app.models import ApiToken
from tests.factories import session_file, small_tree

# A ceiling per operation, so a stuck request fails this test instead of stalling the suite.
pytestmark = pytest.mark.timeout(60)

ENTRY_IDS = ("u1", "a1", "u2", "a2", "u3", "a3")
# Body fields that name an entry of the session; random strings alone would only ever reach the 404 path.
ENTRY_FIELDS = ("entryId", "targetId", "expectedLeaf")


@schemathesis.serializer("application/x-ndjson")
def _ndjson(ctx: schemathesis.SerializationContext, value: Any) -> bytes:
    """Send an import body as the raw bytes of a session file."""
    return serialize_binary(value)


# Loaded as a client would, from /api/schema/ of the app; generating the document needs no database.
schema = schemathesis.openapi.from_wsgi("/api/schema/", piweb.wsgi.application)


@pytest.fixture(autouse=True)
def _requests_share_test_transaction(db: None) -> Iterator[None]:
    """Keep the connection open between WSGI requests, as the test client does, so they see the test rows."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        yield
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)


@pytest.fixture(autouse=True)
def _unthrottled(settings: Any) -> None:
    """Lift the model-call rate limit, which would otherwise answer most run and compaction requests."""
    settings.PIWEB_LLM_RATE = "100000/min"
    # A private cache keeps this run's request counts out of the shared one other tests read.
    settings.CACHES = {
        **settings.CACHES,
        "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
    }


@pytest.fixture
def owned(user: Callable[..., Any]) -> tuple[str, int]:
    """Return the token key of a user and the id of a small session that user imported."""
    owner = user("owner")
    session = services.import_jsonl(actor=owner, data=session_file(small_tree()), filename="s.jsonl").session
    return ApiToken.objects.create(user=owner)[1], session.pk


def _aim_at_real_rows(case: schemathesis.Case, session_id: int, turn: int) -> bool:
    """On every other example, point ids at the stored session so the happy paths run too.

    In a negative example only values of the right shape are replaced: the broken one is the point of
    the example, and replacing it with a valid id would turn it into a request that should succeed.
    """
    if turn % 2:
        return False
    negative = case.meta is not None and case.meta.generation.mode.is_negative
    entry_id = ENTRY_IDS[turn // 2 % len(ENTRY_IDS)]
    if isinstance(case.path_parameters.get("id"), int):
        case.path_parameters["id"] = session_id
    if isinstance(case.path_parameters.get("entry_id"), str) and case.path_parameters["entry_id"]:
        case.path_parameters["entry_id"] = entry_id
    if isinstance(case.body, dict):
        for field in ENTRY_FIELDS:
            value = case.body.get(field)
            # A string past the ids' cap is the broken value of a negative example, not a shape to fill.
            right_shape = isinstance(value, str) and 0 < len(value) <= MAX_ID_CHARS
            if field in case.body and not (negative and not right_shape):
                case.body[field] = entry_id
    if case.operation.path == "/api/sessions/import/" and not negative:
        case.media_type, case.body = "application/x-ndjson", session_file(small_tree())
        return True
    return False


_turns = itertools.count()


@schema.parametrize()
@settings(
    max_examples=6,
    deadline=None,
    derandomize=True,
    database=None,
    # Shrinking could run for minutes on a failure; the unshrunk request is reported instead.
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=list(HealthCheck),
)
def test_no_operation_answers_with_a_server_error_or_accepts_invalid_data(
    case: schemathesis.Case, owned: tuple[str, int]
) -> None:
    token, session_id = owned
    replaced_body = _aim_at_real_rows(case, session_id, next(_turns))
    # A session file put in by hand is valid by construction, though the generator's schema for the raw
    # upload cannot say so: only the server-error check applies to it.
    checks = [not_a_server_error] if replaced_body else [not_a_server_error, negative_data_rejection]
    # Each request's writes are rolled back, so every example starts from the same session, and
    # work queued on commit (compactions, runs) is never started.
    with transaction.atomic():
        case.call_and_validate(headers={"Authorization": f"Token {token}"}, checks=checks)
        transaction.set_rollback(True)
