"""The compaction API and the admin history pages, through HTTP."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from actionlog.models import ActionLog
from compaction_app.models import CompactionRun
from piweb.celery import app as celery_app
from providers.models import LLMProvider
from tests.factories import conversation, payloads, store

pytestmark = pytest.mark.django_db


@pytest.fixture
def eager_tasks() -> Iterator[None]:
    """Run queued tasks inline when their transaction commits, as a worker would moments later."""
    previous = celery_app.conf.task_always_eager
    celery_app.conf.task_always_eager = True
    yield
    celery_app.conf.task_always_eager = previous


@pytest.fixture
def mine(api_client: APIClient) -> Any:
    return store(api_client.user, conversation(8))  # type: ignore[attr-defined]


def test_compact_returns_an_operation_that_finishes_with_the_result(
    api_client: APIClient, mine: Any, eager_tasks: None, django_capture_on_commit_callbacks: Any
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        response = api_client.post(
            f"/api/sessions/{mine.pk}/compact/", {"customInstructions": "keep the parser"}, format="json"
        )

    assert response.status_code == 202
    assert response.json()["status"] == "queued"
    operation = api_client.get(f"/api/operations/{response.json()['operationId']}/").json()
    assert (operation["kind"], operation["status"], operation["reason"]) == (
        "compaction",
        "succeeded",
        "manual",
    )
    [entry] = payloads(mine, "compaction")
    result = operation["result"]
    assert result["entryId"] == entry["id"]
    assert result["firstKeptEntryId"] == entry["firstKeptEntryId"]
    assert result["estimatedTokensAfter"] < result["tokensBefore"]
    assert "Focus: keep the parser" in result["summary"]


def test_pis_refusals_are_plain_400s(
    api_client: APIClient, mine: Any, eager_tasks: None, django_capture_on_commit_callbacks: Any
) -> None:
    small = store(api_client.user, conversation(1), pi_id="small")  # type: ignore[attr-defined]

    response = api_client.post(f"/api/sessions/{small.pk}/compact/", {}, format="json")
    assert (response.status_code, response.json()) == (
        400,
        {"error": "Nothing to compact (session too small)"},
    )

    with django_capture_on_commit_callbacks(execute=True):
        api_client.post(f"/api/sessions/{mine.pk}/compact/", {}, format="json")
    response = api_client.post(f"/api/sessions/{mine.pk}/compact/", {}, format="json")
    assert (response.status_code, response.json()) == (400, {"error": "Already compacted"})
    # Refusals stay in the compaction history (and the action log) with Pi's reason.
    history = sorted(CompactionRun.objects.values_list("session_id", "status", "error"))
    assert history == sorted(
        [
            (small.pk, "refused", "Nothing to compact (session too small)"),
            (mine.pk, "succeeded", ""),
            (mine.pk, "refused", "Already compacted"),
        ]
    )
    refused = ActionLog.objects.filter(action="compact_refused").order_by("created_at")
    assert [(r.actor, r.detail["reason"]) for r in refused] == [
        (api_client.user, "Nothing to compact (session too small)"),  # type: ignore[attr-defined]
        (api_client.user, "Already compacted"),  # type: ignore[attr-defined]
    ]


def test_a_second_request_while_one_is_queued_conflicts(api_client: APIClient, mine: Any) -> None:
    first = api_client.post(f"/api/sessions/{mine.pk}/compact/", {}, format="json")
    second = api_client.post(f"/api/sessions/{mine.pk}/compact/", {}, format="json")

    assert first.status_code == 202
    assert second.status_code == 409
    assert "Wait for the current compaction" in second.json()["error"]


def test_a_repeated_idempotency_key_returns_the_same_operation(api_client: APIClient, mine: Any) -> None:
    first = api_client.post(
        f"/api/sessions/{mine.pk}/compact/", {}, format="json", HTTP_IDEMPOTENCY_KEY="abc"
    )
    again = api_client.post(
        f"/api/sessions/{mine.pk}/compact/", {}, format="json", HTTP_IDEMPOTENCY_KEY="abc"
    )

    assert (first.status_code, again.status_code) == (202, 202)
    assert first.json()["operationId"] == again.json()["operationId"]


def test_cancel_stops_a_queued_operation_once(api_client: APIClient, mine: Any) -> None:
    operation = api_client.post(f"/api/sessions/{mine.pk}/compact/", {}, format="json").json()["operationId"]

    cancelled = api_client.post(f"/api/operations/{operation}/cancel/")
    again = api_client.post(f"/api/operations/{operation}/cancel/")

    assert (cancelled.status_code, cancelled.json()["status"]) == (200, "cancelled")
    assert again.status_code == 409
    assert payloads(mine, "compaction") == []


def test_other_users_sessions_and_operations_are_not_found(
    api_client: APIClient, mine: Any, user: Any
) -> None:
    operation = api_client.post(f"/api/sessions/{mine.pk}/compact/", {}, format="json").json()["operationId"]
    stranger = APIClient()
    stranger.force_authenticate(user=user())

    assert stranger.post(f"/api/sessions/{mine.pk}/compact/", {}, format="json").status_code == 404
    assert stranger.get(f"/api/operations/{operation}/").status_code == 404
    assert stranger.post(f"/api/operations/{operation}/cancel/").status_code == 404
    assert APIClient().get(f"/api/operations/{operation}/").status_code in (401, 403)


def test_navigate_with_summary_returns_an_operation(
    api_client: APIClient, mine: Any, eager_tasks: None, django_capture_on_commit_callbacks: Any
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        response = api_client.post(
            f"/api/sessions/{mine.pk}/navigate/", {"targetId": "a3", "summarize": True}, format="json"
        )

    assert response.status_code == 202
    operation = api_client.get(f"/api/operations/{response.json()['operationId']}/").json()
    assert (operation["kind"], operation["status"]) == ("branch_summary", "succeeded")
    [summary] = payloads(mine, "branch_summary")
    assert (summary["parentId"], summary["fromId"]) == ("a3", "a8")
    assert summary["details"]["offline"] is True  # written without a model, and marked so
    assert operation["result"] == {"leafId": summary["id"], "summaryEntryId": summary["id"]}


# -- admin ----------------------------------------------------------------------------------------------


@pytest.fixture
def staff_client(user: Any) -> Any:
    from django.test import Client

    client = Client()
    client.force_login(user(is_staff=True, is_superuser=True))
    return client


def test_provider_keys_never_leave_the_server(staff_client: Any) -> None:
    provider = LLMProvider.objects.create(
        name="openai",
        base_url="https://api.example.com/v1",
        model_id="m",
        provider="openai",
        api_key="sk-very-secret-1234",
    )

    listing = staff_client.get("/admin/providers/llmprovider/").content.decode()
    form = staff_client.get(f"/admin/providers/llmprovider/{provider.pk}/change/").content.decode()

    assert "sk-very-secret" not in listing and "sk-very-secret" not in form
    assert "1234" in listing


def test_a_blank_key_in_the_admin_form_keeps_the_stored_key(staff_client: Any) -> None:
    provider = LLMProvider.objects.create(
        name="openai",
        base_url="https://api.example.com/v1",
        model_id="m",
        provider="openai",
        api_key="sk-keep",
    )
    data = {
        "name": "renamed",
        "api": "openai-completions",
        "base_url": provider.base_url,
        "model_id": "m",
        "provider": "openai",
        "context_window": 128000,
        "max_output_tokens": 4096,
        "api_key": "",
    }

    response = staff_client.post(f"/admin/providers/llmprovider/{provider.pk}/change/", data)

    assert response.status_code == 302
    provider.refresh_from_db()
    assert (provider.name, provider.api_key) == ("renamed", "sk-keep")


def test_compat_settings_are_checked_and_the_settings_in_force_shown(staff_client: Any) -> None:
    provider = LLMProvider.objects.create(
        name="deepseek", base_url="https://api.deepseek.com/v1", model_id="m", provider="deepseek"
    )
    url = f"/admin/providers/llmprovider/{provider.pk}/change/"
    data = {
        "name": "deepseek",
        "api": "openai-completions",
        "base_url": provider.base_url,
        "model_id": "m",
        "provider": "deepseek",
        "context_window": 128000,
        "max_output_tokens": 4096,
        "api_key": "",
    }
    # Detected from the host, as Pi detects it: this host takes max_tokens and no store flag.
    page = staff_client.get(url).content.decode()
    assert "maxTokensField=max_tokens" in page and "supportsStore=False" in page

    refused = staff_client.post(url, {**data, "compat": '{"bogus": true}'})
    assert refused.status_code == 200 and "Unknown compat setting" in refused.content.decode()
    saved = staff_client.post(url, {**data, "compat": '{"maxTokensField": "max_completion_tokens"}'})
    assert saved.status_code == 302
    provider.refresh_from_db()
    assert provider.compat == {"maxTokensField": "max_completion_tokens"}
    assert provider.resolved_compat().max_tokens_field == "max_completion_tokens"


def test_the_history_page_shows_the_summary_beside_the_entries_it_replaced(
    staff_client: Any, owner: Any, eager_tasks: None
) -> None:
    from compaction_app.services import compact_session

    session = store(owner, conversation(8))
    outcome = compact_session(session=session, actor=session.owner, reason="manual")
    run = CompactionRun.objects.get(operation_id=outcome.operation_id)

    listing = staff_client.get(
        "/admin/compaction_app/compactionrun/?status__exact=succeeded"
    ).content.decode()
    detail = staff_client.get(f"/admin/compaction_app/compactionrun/{run.pk}/change/").content.decode()

    assert str(run.operation_id) in listing
    assert "Replaced entries (" in detail
    assert "Request 1:" in detail  # the first replaced user message
    assert "## Goal" in detail
    assert f"{run.replaced_first_seq} … {run.replaced_last_seq}" in detail


def test_an_operation_left_running_past_the_timeout_expires_and_frees_the_session(
    api_client: APIClient, mine: Any, settings: Any
) -> None:
    settings.PIWEB_OPERATION_TIMEOUT = 60
    operation = api_client.post(f"/api/sessions/{mine.pk}/compact/", {}, format="json").json()["operationId"]
    # Its worker began it, then lost the database for good: nothing will end the run.
    long_ago = timezone.now() - timedelta(seconds=61)
    CompactionRun.objects.filter(operation_id=operation).update(status="running", started_at=long_ago)

    again = api_client.post(f"/api/sessions/{mine.pk}/compact/", {}, format="json")

    assert again.status_code == 202, again.json()
    stale = api_client.get(f"/api/operations/{operation}/").json()
    assert stale["status"] == "failed"
    assert "did not finish in time" in stale["error"]


def test_an_operation_running_within_the_timeout_still_holds_the_session(
    api_client: APIClient, mine: Any, settings: Any
) -> None:
    settings.PIWEB_OPERATION_TIMEOUT = 60
    operation = api_client.post(f"/api/sessions/{mine.pk}/compact/", {}, format="json").json()["operationId"]
    recently = timezone.now() - timedelta(seconds=30)
    CompactionRun.objects.filter(operation_id=operation).update(status="running", started_at=recently)

    assert api_client.post(f"/api/sessions/{mine.pk}/compact/", {}, format="json").status_code == 409
