"""A request that meets a database outage answers 503 with Retry-After, wherever it failed."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.sessions.backends.db import SessionStore
from django.db import InterfaceError, OperationalError
from django.test import Client
from rest_framework.test import APIClient

from sessions_app.models import ChatSession

pytestmark = pytest.mark.django_db


def gone(*args: Any, **kwargs: Any) -> Any:
    raise OperationalError("consuming input failed: server closed the connection unexpectedly")


def test_an_api_view_that_loses_the_database_answers_503_json(
    api_client: APIClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    api_client.raise_request_exception = False
    monkeypatch.setattr(ChatSession.objects, "visible_to", gone)

    response = api_client.get("/api/sessions/")

    assert response.status_code == 503
    assert response["Content-Type"] == "application/json"
    assert int(response["Retry-After"]) > 0
    assert response.json()["retryAfter"] == int(response["Retry-After"])
    assert "database" in response.json()["error"]


def test_a_middleware_that_loses_the_database_answers_503_too(
    user: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = Client(raise_request_exception=False)
    client.force_login(user())

    def closed(*args: Any, **kwargs: Any) -> Any:
        raise InterfaceError("connection already closed")

    # The browser session is read before any view runs.
    monkeypatch.setattr(SessionStore, "load", closed)

    page = client.get("/")
    api = client.get("/api/sessions/")

    assert (page.status_code, page["Content-Type"]) == (503, "text/plain; charset=utf-8")
    assert (api.status_code, api["Content-Type"]) == (503, "application/json")
    assert page["Retry-After"] == api["Retry-After"]


def test_other_server_errors_stay_500(api_client: APIClient, monkeypatch: pytest.MonkeyPatch) -> None:
    api_client.raise_request_exception = False

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise ValueError("a bug, not an outage")

    monkeypatch.setattr(ChatSession.objects, "visible_to", broken)

    assert api_client.get("/api/sessions/").status_code == 500
