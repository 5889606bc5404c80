"""Endpoints that spend model tokens are rate limited per user, with the API's error shape."""

from __future__ import annotations

from typing import Any

import pytest

from .conftest import World

pytestmark = pytest.mark.usefixtures("eager_tasks")


@pytest.fixture(autouse=True)
def _two_per_minute(settings: Any) -> None:
    settings.PIWEB_LLM_RATE = "2/min"


def test_compaction_requests_past_the_budget_get_429(world: World) -> None:
    client = world.client("owner")
    url = f"/api/sessions/{world.session.pk}/compact/"
    assert [client.post(url, {}, format="json").status_code for _ in range(2)] == [400, 400]
    refused = client.post(url, {}, format="json")
    assert refused.status_code == 429
    assert "throttled" in refused.data["error"].lower() or "request" in refused.data["error"].lower()
    assert "Retry-After" in refused.headers


def test_the_budget_is_shared_by_runs_and_summaries_and_kept_per_user(world: World) -> None:
    owner = world.client("owner")
    pk = world.session.pk
    assert owner.post(f"/api/sessions/{pk}/runs/", {"prompt": "x"}, format="json").status_code == 409
    assert owner.post(f"/api/sessions/{pk}/compact/", {}, format="json").status_code == 400
    summary = {"targetId": "a2", "summarize": True}
    assert owner.post(f"/api/sessions/{pk}/navigate/", summary, format="json").status_code == 429
    # Moving the leaf without a summary costs nothing and is never throttled.
    assert owner.post(f"/api/sessions/{pk}/navigate/", {"targetId": "a2"}, format="json").status_code == 200
    assert world.client("editor").post(f"/api/sessions/{pk}/compact/", {}, format="json").status_code == 400


def test_reads_are_not_throttled(world: World) -> None:
    owner = world.client("owner")
    for _ in range(4):
        assert owner.get(f"/api/sessions/{world.session.pk}/runs/").status_code == 200
