"""A session's own compaction settings override the server's for that session alone."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from rest_framework.test import APIClient

from actionlog.models import ActionLog
from compaction_app.services import compact_session
from compaction_app.summarizers import OfflineSummarizer
from tests.factories import payloads

pytestmark = pytest.mark.django_db


def test_a_sessions_keep_budget_decides_what_its_compaction_keeps(
    compactable: Any, owner: Any, user: Callable[..., Any], settings: Any
) -> None:
    settings.PIWEB_COMPACTION = {"keepRecentTokens": 100_000}  # the server keeps everything
    client = APIClient()
    client.force_authenticate(user=owner)
    url = f"/api/sessions/{compactable.pk}/settings/"
    assert client.get(url).json()["compaction"] is None
    answer = client.put(url, {"compaction": {"keepRecentTokens": 300}}, format="json")
    assert answer.status_code == 200 and answer.json()["compaction"] == {"keepRecentTokens": 300}
    assert ActionLog.objects.filter(session=compactable, action="settings").count() == 1
    compactable.refresh_from_db()
    outcome = compact_session(
        session=compactable, actor=compactable.owner, reason="manual", summarizer=OfflineSummarizer()
    )
    # With the server's budget there would be nothing to compact; the session's own one cuts.
    assert outcome.status == "succeeded"
    [entry] = payloads(compactable, "compaction")
    assert entry["firstKeptEntryId"] == outcome.first_kept_entry_id

    assert client.put(url, {"compaction": {"keepRecentTokens": -1}}, format="json").status_code == 400
    assert client.put(url, {"compaction": {"reserve": 1}}, format="json").status_code == 400
    assert client.put(url, {"compaction": None}, format="json").json()["compaction"] is None
    stranger = APIClient()
    stranger.force_authenticate(user=user("stranger"))
    assert stranger.put(url, {"compaction": None}, format="json").status_code == 404
