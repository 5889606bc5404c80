"""What a run writes names the run and the user who started it (through the pipelined append path)."""

from __future__ import annotations

from typing import Any

import pytest

from agent import services
from providers.llm import testserver as script
from sessions_app import services as session_services
from sessions_app.models import Entry

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_runs_entries_name_the_run_and_who_started_it(user, make_provider, server, api_client) -> None:
    eddie = user("eddie")
    session = session_services.create_session(actor=eddie, cwd="/repo")
    server.enqueue(script.reply("Forty two.", usage={"input": 12, "output": 3}))
    run = services.start_run(session=session, user=eddie, prompt="What is it?", provider=make_provider())
    run.refresh_from_db()
    assert run.status == "succeeded"
    rows = list(Entry.objects.filter(session=session).select_related("author").order_by("seq"))
    assert [r.type for r in rows] == ["model_change", "message", "message"]
    for row in rows:
        assert row.author is not None
        assert (row.author.kind, row.author.user_id, row.author.via) == ("run", eddie.pk, str(run.public_id))
        assert row.author.to_domain().label() == "run started by eddie"
    # The API says so on each entry.
    api_client.force_authenticate(user=eddie)
    listed: list[dict[str, Any]] = api_client.get(f"/api/sessions/{session.pk}/entries/").json()["entries"]
    assert {(e["author"]["kind"], e["author"]["name"], e["author"]["via"]) for e in listed} == {
        ("run", "eddie", str(run.public_id))
    }
