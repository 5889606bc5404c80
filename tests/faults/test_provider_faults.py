"""Full agent runs against a provider that hangs, cuts the stream or answers garbage.

Each run must end on its own with a clear error: the run is failed, the session gets one whole error
message per attempt, and nothing of a reply that never completed is stored as if it had.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from agent import services
from agent.models import AgentRun
from piweb.celery import app as celery_app
from providers.llm import testserver as script
from providers.llm.testserver import ProviderServer
from providers.models import LLMProvider
from sessions_app import services as session_services
from sessions_app.models import ChatSession, Entry

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def server() -> Iterator[ProviderServer]:
    with ProviderServer() as running:
        yield running


@pytest.fixture(autouse=True)
def _eager_runs(settings: Any) -> Iterator[None]:
    """Run tasks in-process with one quick retry, a short provider timeout and an in-process layer."""
    settings.PIWEB_AGENT_RETRY = {"enabled": True, "maxRetries": 1, "baseDelayMs": 1}
    settings.PIWEB_LLM_TIMEOUT = 0.5
    settings.PIWEB_SUMMARIZER = None
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    eager, propagates = celery_app.conf.task_always_eager, celery_app.conf.task_eager_propagates
    celery_app.conf.task_always_eager = celery_app.conf.task_eager_propagates = True
    yield
    celery_app.conf.task_always_eager, celery_app.conf.task_eager_propagates = eager, propagates


@pytest.fixture
def start(user: Callable[..., Any], server: ProviderServer) -> Callable[[str], tuple[AgentRun, ChatSession]]:
    """Return ``start(prompt)``: run it to its end in a new session and return the run and session."""
    owner = user()
    provider = LLMProvider.objects.create(
        name="claude",
        api="anthropic-messages",
        base_url=server.url,
        model_id="claude-test",
        provider="anthropic",
        api_key="sk-ant-test",
    )

    def run(prompt: str) -> tuple[AgentRun, ChatSession]:
        session = session_services.create_session(actor=owner, cwd="/repo")
        started = services.start_run(session=session, user=owner, prompt=prompt, provider=provider)
        started.refresh_from_db()
        return started, session

    return run


def stored(session: ChatSession) -> list[dict[str, Any]]:
    return [
        json.loads(raw)
        for raw in Entry.objects.filter(session=session).order_by("seq").values_list("raw", flat=True)
    ]


def assistant_messages(session: ChatSession) -> list[dict[str, Any]]:
    return [
        e["message"]
        for e in stored(session)
        if e["type"] == "message" and e["message"]["role"] == "assistant"
    ]


def test_a_provider_that_hangs_past_the_timeout_fails_the_run_after_its_retry(start, server) -> None:
    server.enqueue(script.hang(30), script.hang(30, after=3))
    began = time.monotonic()

    run, session = start("Are you there?")

    assert time.monotonic() - began < 10
    assert run.status == "failed" and run.retry_attempts == 1
    assert "timed out after 0.5s" in run.error
    first, second = assistant_messages(session)
    assert first["stopReason"] == second["stopReason"] == "error"
    assert "timed out" in second["errorMessage"]
    # The second attempt had started a reply; what arrived before the stall is kept only inside the error.
    assert [e["type"] for e in stored(session)] == [
        "model_change",
        "message",
        "message",
        "context_edit",
        "message",
    ]
    session.refresh_from_db()
    assert session.leaf_entry_id == run.final_entry_id == stored(session)[-1]["id"]
    assert len(server.requests) == 2


def test_an_html_page_instead_of_a_stream_fails_the_run_as_a_stream_cut_short(start, server) -> None:
    # Pi's reader finds no events in the page: the stream ended before the turn, which Pi retries.
    page = "<html><body>Welcome to the login portal</body></html>"
    server.enqueue(*[script.garbage(page)] * 2)

    run, session = start("Hello?")

    assert run.status == "failed" and run.retry_attempts == 1
    assert run.error == "Anthropic stream ended without a stop reason"
    answers = assistant_messages(session)
    assert len(answers) == 2
    assert all(a["stopReason"] == "error" and a["content"] == [] for a in answers)
    assert [e["type"] for e in stored(session)][:3] == ["model_change", "message", "message"]
    assert len(server.requests) == 2


def test_invalid_json_mid_stream_ends_the_run_with_one_error_message(start, server) -> None:
    partial = (
        'event: message_start\ndata: {"type":"message_start","message":{"usage":{}}}\n\n'
        "event: content_block_delta\ndata: {oops\n\n"
    )
    server.enqueue(script.garbage(partial))

    run, session = start("Hello?")

    assert run.status == "failed"
    assert run.error.startswith("Could not parse Anthropic SSE event content_block_delta: ")
    [answer] = assistant_messages(session)
    assert answer["stopReason"] == "error" and answer["errorMessage"] == run.error
    assert run.final_entry_id == stored(session)[-1]["id"]


def test_a_stream_cut_on_every_attempt_fails_the_run_with_both_attempts_closed(start, server) -> None:
    server.enqueue(script.dropped(after=3, text="Half of a sentence that never"), script.dropped(after=0))

    run, session = start("Hello?")

    assert run.status == "failed" and run.retry_attempts == 1
    first, second = assistant_messages(session)
    assert first["stopReason"] == second["stopReason"] == "error"
    assert run.error == second["errorMessage"]
    # The failed first attempt is omitted from what the model sees next, not deleted.
    edit = next(e for e in stored(session) if e["type"] == "context_edit")
    assert edit["targetId"] == stored(session)[2]["id"]
    assert len(server.requests) == 2
