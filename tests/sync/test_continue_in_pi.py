""" "Continue in Pi" on any node: the exact pull command, the file it writes, and where Pi finds it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from rest_framework.test import APIClient

from sessions_app import services

from .helpers import chain, header

pytestmark = pytest.mark.django_db


def _session(owner: Any) -> Any:
    lines = [header(cwd="/home/me/project"), *chain(4)]
    return services.import_jsonl(actor=owner, data="".join(x + "\n" for x in lines).encode()).session


def test_the_command_names_the_node_and_pi_finds_the_file(api_client: APIClient) -> None:
    session = _session(api_client.user)  # type: ignore[attr-defined]
    url = f"/api/sessions/{session.pk}/continue-in-pi/"
    at_leaf = api_client.get(url).json()
    assert at_leaf["command"] == f"piweb-sync pull {session.pk}"
    assert at_leaf["folder"] == "~/.pi/agent/sessions/--home-me-project--"
    assert at_leaf["fileName"] == "2026-03-01T10-00-00-000Z_sync-demo.jsonl"
    assert at_leaf["resume"] == f"pi --session {at_leaf['folder']}/{at_leaf['fileName']}"

    node = api_client.get(url, {"entry": "e1"}).json()
    assert node["command"] == f"piweb-sync pull {session.pk} --at e1"
    download = api_client.get(node["download"])
    last = b"".join(download.streaming_content).decode().splitlines()[-1]
    assert '"customType":"piweb.leaf"' in last and '"parentId":"e1"' in last


def test_unknown_nodes_and_other_peoples_sessions_are_not_found(
    api_client: APIClient, user: Callable[..., Any]
) -> None:
    session = _session(api_client.user)  # type: ignore[attr-defined]
    missing = api_client.get(f"/api/sessions/{session.pk}/continue-in-pi/", {"entry": "nope"})
    assert missing.status_code == 404 and "nope" in missing.json()["error"]
    stranger = APIClient()
    stranger.force_authenticate(user=user("stranger"))
    assert stranger.get(f"/api/sessions/{session.pk}/continue-in-pi/").status_code == 404


def test_api_created_sessions_take_a_cwd_that_decides_pis_folder(api_client: APIClient) -> None:
    created = api_client.post("/api/sessions/", {"cwd": "/srv/app", "name": "web"}, format="json")
    assert created.status_code == 201
    pk = created.json()["id"]
    exported = api_client.get(f"/api/sessions/{pk}/export/")
    header = b"".join(exported.streaming_content).decode().splitlines()[0]
    assert '"cwd":"/srv/app"' in header
    answer = api_client.get(f"/api/sessions/{pk}/continue-in-pi/").json()
    assert answer["folder"] == "~/.pi/agent/sessions/--srv-app--"
