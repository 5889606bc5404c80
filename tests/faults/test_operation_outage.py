"""PostgreSQL killed while a compaction waits for its summary: the operation ends, and the session is free.

The worker's database connection dies under the running compaction; when the summary arrives, writing it
fails. The operation must not stay "running" (which refuses every later compaction of the session with
409 until someone cancels it by hand): the task is retried or records its failure.
"""

from __future__ import annotations

import pytest

from providers.llm.testserver import ProviderServer, hang, reply
from tests.procs import wait_until

from .stack import Stack

pytestmark = [pytest.mark.slow, pytest.mark.background, pytest.mark.timeout(150)]

SUMMARY = "## Goal\n- Outlive the database."


def operation_status(stack: Stack, operation: str) -> str:
    with stack.client() as http:
        return str(http.get(f"/api/operations/{operation}/").json()["status"])


def test_a_compaction_interrupted_by_the_database_ends_and_frees_the_session(stack: Stack) -> None:
    provider = ProviderServer().start()
    # The summary takes 4 s: long enough to kill and restart PostgreSQL under it.
    provider.enqueue(*[hang(4, text=SUMMARY) for _ in range(2)], *[reply(SUMMARY) for _ in range(8)])
    pk = stack.python(
        "from providers.models import LLMProvider;"
        "from django.contrib.auth import get_user_model;"
        "from tests.factories import conversation, store;"
        f"LLMProvider.objects.create(name='loopback', base_url='{provider.url}/v1', model_id='summary-model',"
        "provider='test', api_key='sk-test', is_summarizer_default=True);"
        "owner = get_user_model().objects.get(username='writer');"
        "print(store(owner, conversation(30, repeat=12)).pk)"
    ).strip()
    stack.start_web()
    stack.start_worker()
    try:
        with stack.client() as http:
            response = http.post(f"/api/sessions/{pk}/compact/", json={})
        assert response.status_code == 202, response.text
        operation = response.json()["operationId"]
        wait_until(lambda: len(provider.requests) == 1, 30, "the summary request")

        stack.postgres.service.crash_and_restart()
        wait_until(stack.web_healthy, 30, "the web process after the database came back")

        wait_until(
            lambda: operation_status(stack, operation) in ("succeeded", "failed"),
            40,
            "the interrupted compaction to end",
        )
        with stack.client() as http:
            again = http.post(f"/api/sessions/{pk}/compact/", json={})
        # The session takes a compaction again (Pi may answer "Already compacted" after a success).
        assert again.status_code != 409, again.text
    finally:
        provider.stop()
