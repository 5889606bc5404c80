"""The run endpoints, abort while streaming, and redelivery of a task."""

from __future__ import annotations

import threading
import time

import pytest
from cryptography.fernet import Fernet
from django.db import connection

from agent import services
from agent.loop import INTERRUPTED
from agent.models import AgentRun
from agent.tasks import run_agent
from core.actors import SystemActor
from providers.llm import testserver as script
from providers.models import LLMProvider
from sessions_app import services as session_services
from tests.factories import entries

pytestmark = pytest.mark.django_db(transaction=True)


def test_post_prompt_runs_and_reports_the_run(api_client, make_provider, server) -> None:
    provider = make_provider()
    session = session_services.create_session(actor=api_client.user, cwd="/repo")
    server.enqueue(script.reply("Hi there."))

    response = api_client.post(
        f"/api/sessions/{session.pk}/runs/", {"prompt": "Hello", "providerId": provider.pk}, format="json"
    )

    assert response.status_code == 202
    detail = api_client.get(f"/api/runs/{response.json()['runId']}/").json()
    assert detail["status"] == "succeeded" and detail["stopReason"] == "stop"
    assert detail["provider"]["modelId"] == "claude-test"
    assert entries(session)[-1]["id"] == detail["finalEntryId"]


def test_a_second_prompt_while_one_is_active_is_a_conflict(api_client, make_provider) -> None:
    provider = make_provider()
    session = session_services.create_session(actor=api_client.user, cwd="/repo")
    active = AgentRun.objects.create(session=session, provider=provider, prompt="first", status="running")

    response = api_client.post(f"/api/sessions/{session.pk}/runs/", {"prompt": "second"}, format="json")

    assert response.status_code == 409 and response.json()["activeRunId"] == str(active.public_id)


def test_runs_of_other_users_sessions_are_not_found(api_client, user, make_provider) -> None:
    other = session_services.create_session(actor=user(), cwd="/repo")
    run = AgentRun.objects.create(session=other, provider=make_provider(), prompt="x", status="queued")

    assert (
        api_client.post(f"/api/sessions/{other.pk}/runs/", {"prompt": "hi"}, format="json").status_code == 404
    )
    assert api_client.get(f"/api/runs/{run.public_id}/").status_code == 404
    assert api_client.post(f"/api/runs/{run.public_id}/abort/").status_code == 404


def test_prompt_without_any_configured_model_is_refused(api_client) -> None:
    session = session_services.create_session(actor=api_client.user, cwd="/repo")
    response = api_client.post(f"/api/sessions/{session.pk}/runs/", {"prompt": "hi"}, format="json")
    assert response.status_code == 400 and "No LLM provider" in response.json()["error"]


def test_aborting_a_queued_run_ends_it_and_the_task_does_nothing(api_client, make_provider, server) -> None:
    session = session_services.create_session(actor=api_client.user, cwd="/repo")
    run = AgentRun.objects.create(session=session, provider=make_provider(), prompt="x")

    response = api_client.post(f"/api/runs/{run.public_id}/abort/")

    assert response.status_code == 202 and response.json()["status"] == "aborted"
    assert run_agent(run.pk) is None
    assert server.requests == [] and entries(session) == []


def test_abort_stops_a_streaming_run_and_keeps_the_aborted_message(
    user, make_provider, server, listen
) -> None:
    owner = user()
    session = session_services.create_session(actor=owner, cwd="/repo")
    server.enqueue(script.hang(30, after=3))
    run = AgentRun.objects.create(session=session, provider=make_provider(), prompt="Write a long essay")

    def work() -> None:
        try:
            services.execute_run(run.pk)
        finally:
            connection.close()  # the worker thread's own connection

    worker = threading.Thread(target=work)
    worker.start()
    deadline = time.monotonic() + 10
    while not server.requests and time.monotonic() < deadline:
        time.sleep(0.05)

    services.abort_run(run=run, actor=SystemActor("tests"))
    worker.join(10)

    assert not worker.is_alive()
    run.refresh_from_db()
    assert run.status == "aborted" and run.stop_reason == "aborted"
    last = entries(session)[-1]["message"]
    assert last["role"] == "assistant" and last["stopReason"] == "aborted"
    assert len(server.requests) == 1


def test_stop_ends_the_active_run_and_keeps_what_streamed(api_client, make_provider, server) -> None:
    session = session_services.create_session(actor=api_client.user, cwd="/repo")
    # Two words stream, then the provider stalls: Stop must end the run with those words kept.
    server.enqueue(script.hang(30, after=5, text="Once upon a time"))
    run = AgentRun.objects.create(
        session=session, provider=make_provider(), prompt="Tell a story", requested_by=api_client.user
    )
    worker = threading.Thread(target=lambda: (services.execute_run(run.pk), connection.close()))
    worker.start()
    deadline = time.monotonic() + 10
    while not server.requests and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.2)  # let the first deltas arrive

    response = api_client.post(f"/api/sessions/{session.pk}/runs/stop/")
    worker.join(10)

    assert response.status_code == 202 and response.json()["runId"] == str(run.public_id)
    assert not worker.is_alive()
    run.refresh_from_db()
    assert run.status == "aborted" and not run.error
    last = entries(session)[-1]["message"]
    # Pi's words for an Anthropic reply stopped mid-stream.
    assert last["stopReason"] == "aborted" and last["errorMessage"] == "This operation was aborted"
    assert last["content"] == [{"type": "text", "text": "Once upon"}]
    # The session is free again: a new prompt is accepted.
    server.enqueue(script.reply("The end."))
    again = api_client.post(f"/api/sessions/{session.pk}/runs/", {"prompt": "Go on"}, format="json")
    assert again.status_code == 202


def test_stop_without_an_active_run_is_a_conflict(api_client) -> None:
    session = session_services.create_session(actor=api_client.user, cwd="/repo")
    response = api_client.post(f"/api/sessions/{session.pk}/runs/stop/")
    assert response.status_code == 409 and response.json()["error"] == "No run is active for this session"


def test_regenerate_answers_the_turn_again_as_a_sibling_branch(api_client, make_provider, server) -> None:
    provider = make_provider()
    session = session_services.create_session(actor=api_client.user, cwd="/repo")
    server.enqueue(script.reply("First answer."), script.reply("Second answer."))
    api_client.post(
        f"/api/sessions/{session.pk}/runs/",
        {"prompt": "Name a colour", "providerId": provider.pk},
        format="json",
    )
    *_, asked, first = entries(session)

    response = api_client.post(
        f"/api/sessions/{session.pk}/runs/regenerate/", {"entryId": first["id"]}, format="json"
    )

    assert response.status_code == 202
    detail = api_client.get(f"/api/runs/{response.json()['runId']}/").json()
    assert detail["status"] == "succeeded" and detail["regenerateFrom"] == first["id"]
    assert detail["prompt"] == "Name a colour" and detail["userEntryId"] is None
    again = entries(session)[-1]
    assert again["parentId"] == asked["id"] == first["parentId"]  # a sibling of the first answer
    assert again["message"]["content"] == [{"type": "text", "text": "Second answer."}]
    session.refresh_from_db()
    assert session.leaf_entry_id == again["id"]
    # The same context went out again: no second copy of the question.
    assert server.requests[1].body["messages"] == server.requests[0].body["messages"]


def test_regenerate_needs_an_assistant_entry_of_the_session(api_client, make_provider) -> None:
    make_provider()
    session = session_services.create_session(actor=api_client.user, cwd="/repo")
    (question,) = session_services.append_entries(
        session=session,
        actor=api_client.user,
        entries=[{"type": "message", "message": {"role": "user", "content": "hi", "timestamp": 1}}],
    )
    url = f"/api/sessions/{session.pk}/runs/regenerate/"

    not_assistant = api_client.post(url, {"entryId": question.entry_id}, format="json")
    missing = api_client.post(url, {"entryId": "nope"}, format="json")
    blank = api_client.post(url, {}, format="json")

    assert not_assistant.status_code == 400 and "is not an assistant message" in not_assistant.json()["error"]
    assert missing.status_code == 400 and "entry not found: nope" in missing.json()["error"]
    assert blank.status_code == 400 and "entryId" in str(blank.json())
    assert not AgentRun.objects.filter(session=session).exists()


def test_redelivered_task_of_a_finished_run_does_nothing(user, make_provider, server) -> None:
    owner = user()
    session = session_services.create_session(actor=owner, cwd="/repo")
    server.enqueue(script.reply("Once."))
    run = services.start_run(session=session, user=owner, prompt="hi", provider=make_provider())
    before = entries(session)

    assert run_agent(run.pk) is None
    assert entries(session) == before and len(server.requests) == 1


def test_redelivered_task_of_an_interrupted_run_closes_it_with_an_error_entry(
    user, make_provider, server
) -> None:
    owner = user()
    session = session_services.create_session(actor=owner, cwd="/repo")
    prompt = session_services.append_entries(
        session=session,
        actor=session.owner,
        entries=[{"type": "message", "message": {"role": "user", "content": "hi", "timestamp": 1}}],
    )[0]
    run = AgentRun.objects.create(
        session=session,
        provider=make_provider(),
        prompt="hi",
        status="running",
        user_entry_id=prompt.entry_id,
    )

    assert run_agent(run.pk) == "failed"

    run.refresh_from_db()
    assert run.error == INTERRUPTED
    last = entries(session)[-1]
    assert last["parentId"] == prompt.entry_id
    assert last["message"]["stopReason"] == "error" and last["message"]["errorMessage"] == INTERRUPTED
    assert server.requests == []
    assert run_agent(run.pk) is None and len(entries(session)) == 2


def test_a_run_through_a_provider_whose_key_cannot_be_decrypted_fails_saying_so(
    user, make_provider, server
) -> None:
    owner = user()
    session = session_services.create_session(actor=owner, cwd="/repo")
    provider = make_provider()
    # The key as a database restored without its PIWEB_SECRETS_KEY holds it: sealed under another key.
    other = Fernet(Fernet.generate_key()).encrypt(b"sk-lost").decode()
    LLMProvider.objects.filter(pk=provider.pk).update(api_key="fernet:" + other)
    run = AgentRun.objects.create(
        session=session, provider=LLMProvider.objects.get(pk=provider.pk), prompt="x"
    )

    run_agent(run.pk)
    run.refresh_from_db()

    assert run.status == AgentRun.Status.FAILED
    assert run.error.startswith(f"The API key of provider {provider.name!r} cannot be decrypted")
    assert server.requests == []
