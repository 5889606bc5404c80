"""Runs and the quotas: a run is refused (413) when its prompt could not be stored; once the prompt is
stored the turn finishes and the provider's answer is kept, even past the quota; the next run is refused."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import override_settings
from rest_framework.test import APIClient

from agent import services
from providers.llm import testserver as script
from sessions_app import services as session_services
from sessions_app.models import Entry
from tests.factories import entries

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_turn_that_passes_the_entry_limit_keeps_its_answer_and_the_next_run_is_refused(
    user: Any, make_provider: Any, server: Any
) -> None:
    owner = user()
    session = session_services.create_session(actor=owner, cwd="/repo")
    provider = make_provider()
    server.enqueue(script.reply("kept"))
    with override_settings(PIWEB_MAX_IMPORT_ENTRIES=2):
        run = services.start_run(session=session, user=owner, prompt="hello", provider=provider)
        run.refresh_from_db()
        assert run.status == "succeeded", run.error
        # The model change and the prompt fit; the answer passed the limit and was kept all the same.
        assert [e["type"] for e in entries(session)] == ["model_change", "message", "message"]
        assert entries(session)[-1]["message"]["content"] == [{"type": "text", "text": "kept"}]
        client = APIClient()
        client.force_authenticate(user=owner)
        refused = client.post(f"/api/sessions/{session.pk}/runs/", {"prompt": "more"}, format="json")
    assert refused.status_code == 413
    assert refused.json()["error"] == (
        "The session holds 3 entries; 1 more would pass the limit of 2 entries a session holds."
    )
    assert Entry.objects.filter(session=session).count() == 3


def test_a_run_whose_prompt_no_longer_fits_fails_clearly_before_the_provider_is_asked(
    user: Any, make_provider: Any, server: Any
) -> None:
    owner = user()
    session = session_services.create_session(actor=owner, cwd="/repo")
    with override_settings(PIWEB_MAX_IMPORT_ENTRIES=1):
        # Queued while one entry still fitted; the model change takes that room before the prompt.
        run = services.start_run(session=session, user=owner, prompt="hello", provider=make_provider())
    run.refresh_from_db()
    assert run.status == "failed"
    assert run.error.startswith("The run did not start: The session holds 1 entries")
    assert [e["type"] for e in entries(session)] == ["model_change"]
    assert run.prompt == "hello" and not server.requests
