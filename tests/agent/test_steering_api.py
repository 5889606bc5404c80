"""The REST side of steering a run from the page: edit-and-resend, the streaming renderer, run events."""

from __future__ import annotations

from typing import Any

import pytest

from actionlog.models import ActionLog
from agent.models import AgentRun
from providers.llm import testserver as script
from sessions_app import services as session_services
from tests.factories import entries

pytestmark = pytest.mark.django_db(transaction=True)


def _asked_and_answered(api_client: Any, provider: Any, session: Any) -> tuple[dict[str, Any], ...]:
    api_client.post(
        f"/api/sessions/{session.pk}/runs/",
        {"prompt": "Name a colour", "providerId": provider.pk},
        format="json",
    )
    return tuple(entries(session))


def test_an_edited_prompt_goes_in_beside_the_original_as_a_new_branch(
    api_client: Any, make_provider: Any, server: Any
) -> None:
    provider = make_provider()
    session = session_services.create_session(actor=api_client.user, cwd="/repo")
    server.enqueue(script.reply("Blue."), script.reply("Seven."))
    *_, asked, answered = _asked_and_answered(api_client, provider, session)

    response = api_client.post(
        f"/api/sessions/{session.pk}/runs/edit/",
        {"entryId": asked["id"], "prompt": "Name a number"},
        format="json",
    )

    assert response.status_code == 202
    detail = api_client.get(f"/api/runs/{response.json()['runId']}/").json()
    assert detail["status"] == "succeeded" and detail["editOf"] == asked["id"]
    *_, edited, reply = entries(session)
    assert edited["parentId"] == asked["parentId"] and edited["id"] != asked["id"]
    assert edited["message"]["content"] == [{"type": "text", "text": "Name a number"}]
    assert reply["parentId"] == edited["id"]
    assert reply["message"]["content"] == [{"type": "text", "text": "Seven."}]
    session.refresh_from_db()
    assert session.leaf_entry_id == reply["id"]
    # The original exchange is still there, and the model saw only the edited question.
    assert {asked["id"], answered["id"]} <= {e["id"] for e in entries(session)}
    sent = server.requests[1].body["messages"]
    assert "Name a colour" not in str(sent) and "Name a number" in str(sent)
    # One log row for the use case, naming the run.
    rows = ActionLog.objects.filter(session=session, action="run").order_by("pk")
    assert rows.count() == 2 and rows.last().detail["run"] == detail["runId"]


def test_editing_the_first_message_of_a_session_makes_a_new_root(
    api_client: Any, make_provider: Any, server: Any
) -> None:
    provider = make_provider()
    session = session_services.create_session(actor=api_client.user, cwd="/repo")
    (first,) = session_services.append_entries(
        session=session,
        actor=api_client.user,
        entries=[{"type": "message", "message": {"role": "user", "content": "hi", "timestamp": 1}}],
    )
    server.enqueue(script.reply("Hello again."))

    response = api_client.post(
        f"/api/sessions/{session.pk}/runs/edit/",
        {"entryId": first.entry_id, "prompt": "hello", "providerId": provider.pk},
        format="json",
    )

    assert response.status_code == 202
    by_id = {e["id"]: e for e in entries(session)}
    session.refresh_from_db()
    leaf = by_id[session.leaf_entry_id]
    path = [leaf]
    while path[-1]["parentId"] is not None:
        path.append(by_id[path[-1]["parentId"]])
    assert first.entry_id not in {e["id"] for e in path}
    assert [e["message"]["content"] for e in path if e["type"] == "message"] == [
        [{"type": "text", "text": "Hello again."}],
        [{"type": "text", "text": "hello"}],
    ]


def test_edit_needs_a_user_message_of_the_session_and_a_prompt(
    api_client: Any, make_provider: Any, server: Any
) -> None:
    provider = make_provider()
    session = session_services.create_session(actor=api_client.user, cwd="/repo")
    server.enqueue(script.reply("Blue."))
    *_, asked, answered = _asked_and_answered(api_client, provider, session)
    url = f"/api/sessions/{session.pk}/runs/edit/"

    assistant = api_client.post(url, {"entryId": answered["id"], "prompt": "x"}, format="json")
    missing = api_client.post(url, {"entryId": "nope", "prompt": "x"}, format="json")
    empty = api_client.post(url, {"entryId": asked["id"], "prompt": "   "}, format="json")
    no_prompt = api_client.post(url, {"entryId": asked["id"]}, format="json")

    assert assistant.status_code == 400 and "is not a user message" in assistant.json()["error"]
    assert missing.status_code == 400 and "entry not found: nope" in missing.json()["error"]
    assert empty.status_code == 400 and "The prompt is empty" in empty.json()["error"]
    assert no_prompt.status_code == 400 and "prompt" in str(no_prompt.json())
    assert AgentRun.objects.filter(session=session).count() == 1


def test_edit_while_a_run_is_active_is_a_conflict(api_client: Any, make_provider: Any) -> None:
    provider = make_provider()
    session = session_services.create_session(actor=api_client.user, cwd="/repo")
    (first,) = session_services.append_entries(
        session=session,
        actor=api_client.user,
        entries=[{"type": "message", "message": {"role": "user", "content": "hi", "timestamp": 1}}],
    )
    active = AgentRun.objects.create(session=session, provider=provider, prompt="first", status="running")

    response = api_client.post(
        f"/api/sessions/{session.pk}/runs/edit/", {"entryId": first.entry_id, "prompt": "x"}, format="json"
    )

    assert response.status_code == 409 and response.json()["activeRunId"] == str(active.public_id)


def test_a_queued_run_is_announced_to_every_viewer(
    api_client: Any, make_provider: Any, server: Any, listen: Any
) -> None:
    provider = make_provider()
    session = session_services.create_session(actor=api_client.user, cwd="/repo")
    listener = listen(session.pk)
    server.enqueue(script.reply("Hi."))

    response = api_client.post(
        f"/api/sessions/{session.pk}/runs/", {"prompt": "Hello", "providerId": provider.pk}, format="json"
    )

    names = listener.names()
    assert names.index("run_queued") < names.index("run_started") < names.index("run_ended")
    assert listener.named("run_queued")[0]["run"] == response.json()["runId"]


def test_partial_markdown_renders_without_its_open_fence(api_client: Any) -> None:
    session = session_services.create_session(actor=api_client.user, cwd="/repo")
    url = f"/api/sessions/{session.pk}/runs/render/"

    partial = api_client.post(url, {"text": "Here:\n\n```python\nprint('<b>hi</b>')"}, format="json")
    hostile = api_client.post(url, {"text": "<script>alert(1)</script> **bold**"}, format="json")

    assert partial.status_code == 200
    html = partial.json()["html"]
    assert "```" not in html and "<pre" in html and "&lt;b&gt;" in html
    assert hostile.status_code == 200
    assert "<script" not in hostile.json()["html"] and "<strong>bold</strong>" in hostile.json()["html"]


def test_the_renderer_refuses_what_is_not_text_and_sessions_it_cannot_read(
    api_client: Any, user: Any
) -> None:
    session = session_services.create_session(actor=api_client.user, cwd="/repo")
    other = session_services.create_session(actor=user(), cwd="/repo")

    number = api_client.post(f"/api/sessions/{session.pk}/runs/render/", {"text": 5}, format="json")
    huge = api_client.post(f"/api/sessions/{session.pk}/runs/render/", {"text": "x" * 200_001}, format="json")
    foreign = api_client.post(f"/api/sessions/{other.pk}/runs/render/", {"text": "hi"}, format="json")

    assert number.status_code == 400 and "text" in str(number.json())
    assert huge.status_code == 400 and "text" in str(huge.json())
    assert foreign.status_code == 404
