"""Notification emails leave through Django's SMTP backend and arrive at a real SMTP server."""

from __future__ import annotations

from typing import Any

import pytest

from .conftest import Crew
from .smtp import smtp_server


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("eager_tasks")
def test_a_mention_arrives_by_smtp(crew: Crew, settings: Any) -> None:
    with smtp_server() as (port, received):
        settings.MAILERS = {
            "default": {
                "BACKEND": "django.core.mail.backends.smtp.EmailBackend",
                "OPTIONS": {"host": "127.0.0.1", "port": port, "timeout": 5},
            }
        }
        settings.PIWEB_BASE_URL = "https://piweb.example.test"
        response = crew.client(crew.owner).post(
            crew.url, {"entryId": "a2", "body": "@eddie @vera does this hold?"}, format="json"
        )
        assert response.status_code == 201, response.content
        messages = received.wait(2)
    assert sorted(to for tos, _ in messages for to in tos) == ["eddie@example.test", "vera@example.test"]
    _, first = messages[0]
    assert "olga mentioned you" in first["Subject"]
    text = first.get_payload(decode=True).decode()
    assert "does this hold?" in text
    assert f"https://piweb.example.test/sessions/{crew.session.pk}/#entry=a2" in text


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("eager_tasks")
def test_an_unreachable_mail_server_costs_the_email_not_the_comment(crew: Crew, settings: Any) -> None:
    from tests.procs import free_port

    settings.MAILERS = {
        "default": {
            "BACKEND": "django.core.mail.backends.smtp.EmailBackend",
            "OPTIONS": {"host": "127.0.0.1", "port": free_port(), "timeout": 2},  # nothing listens there
        }
    }
    response = crew.client(crew.owner).post(
        crew.url, {"entryId": "a2", "body": "@eddie still here?"}, format="json"
    )
    assert response.status_code == 201, response.content
    assert crew.client(crew.editor).get("/api/inbox/").json()["unread"] == 1
