"""A secret redacted from a bash result leaves the commit subject and the URL it named too."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from rest_framework.test import APIClient

from provenance.models import PullRequest
from sessions_app import services
from tests.factories import HEADER, user_message
from tests.provenance.test_provenance import bash_turn

# Transactional: scans follow the commit of each write, as they do in production.
pytestmark = pytest.mark.django_db(transaction=True)

GITHUB_TOKEN = "ghp_" + "R4nd0mL00k1ngT0k3nV4lu3F0rT3st1ng007"


def test_a_redacted_secret_leaves_the_commit_list(user: Callable[..., Any]) -> None:
    owner = user("owner")
    output = (
        f"[main 1a2b3c4] Use token {GITHUB_TOKEN}\n"
        f"remote: Create a pull request by visiting:\nremote:   https://git.example.org/new?t={GITHUB_TOKEN}\n"
    )
    entries = [user_message("u1", None, "commit"), *bash_turn("c1", "u1", "git commit -am x", output)]
    data = "".join(json.dumps(v) + "\n" for v in [{**HEADER, "id": "leaky"}, *entries]).encode()
    session = services.import_jsonl(actor=owner, data=data, filename="l.jsonl").session
    client = APIClient()
    client.force_authenticate(user=owner)
    before = client.get(f"/api/sessions/{session.pk}/commits/").json()["commits"]
    assert [c["sha"] for c in before] == ["1a2b3c4"] and GITHUB_TOKEN in before[0]["subject"]
    assert PullRequest.objects.filter(session=session).count() == 1
    redacted = client.post(f"/api/sessions/{session.pk}/secrets/redact/", {"all": True}, format="json")
    assert redacted.status_code == 200, redacted.content
    after = client.get(f"/api/sessions/{session.pk}/commits/").json()["commits"]
    assert [c["sha"] for c in after] == ["1a2b3c4"]  # still the commit this entry made
    assert GITHUB_TOKEN not in json.dumps(after) and "[REDACTED:" in after[0]["subject"]
    assert GITHUB_TOKEN not in "".join(
        PullRequest.objects.filter(session=session).values_list("url", flat=True)
    )
