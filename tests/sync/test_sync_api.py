"""``POST /api/sync/`` directly: the streamed form, its bad inputs, conflicts with their ids, the log row."""

from __future__ import annotations

import json
from typing import Any

import pytest
from rest_framework.test import APIClient

from actionlog.models import ActionLog
from sessions_app.models import ChatSession, Entry

from .helpers import chain, entry, header

pytestmark = pytest.mark.django_db


def _stream(client: APIClient, control: Any, lines: list[str]) -> Any:
    body = json.dumps(control).encode() + b"\n" + "".join(line + "\n" for line in lines).encode()
    return client.generic("POST", "/api/sync/", body, content_type="application/x-ndjson")


def _control(lines: int, start: int = 0, last: str | None = None) -> dict[str, Any]:
    return {
        "header": header(),
        "from": {"lines": start, "bytes": 0, "lastId": last},
        "to": {"lines": start + lines, "bytes": 0},
        "path": "/home/me/s.jsonl",
    }


def test_a_streamed_push_stores_the_lines_and_logs_one_row(api_client: APIClient) -> None:
    answer = _stream(api_client, _control(4), chain(4))
    assert answer.status_code == 200, answer.json()
    assert answer.json()["appended"] == 4
    session = ChatSession.objects.get(pi_id="sync-demo")
    stored = Entry.objects.filter(session=session).order_by("seq").values_list("raw", flat=True)
    assert list(stored) == chain(4)
    [row] = ActionLog.objects.filter(session=session, action="sync")
    assert row.detail["lines"] == 4 and row.detail["conflicts"] == []

    # Resent from another machine's point of view: known by id, nothing stored twice, still one row each.
    again = _stream(api_client, _control(5), [*chain(4), entry(4, "e3")])
    assert again.json()["appended"] == 1 and again.json()["known"] == 4
    assert ActionLog.objects.filter(session=session, action="sync").count() == 2


def test_a_conflict_names_its_ids_stores_nothing_and_is_logged(api_client: APIClient) -> None:
    assert _stream(api_client, _control(2), chain(2)).status_code == 200
    edited = [entry(0, None, text="edited"), entry(1, "e0"), entry(2, "e1")]
    answer = _stream(api_client, _control(3), edited)
    assert answer.status_code == 409
    assert answer.json()["entryIds"] == ["e0"] and "entry e0" in answer.json()["error"]
    session = ChatSession.objects.get(pi_id="sync-demo")
    assert Entry.objects.filter(session=session).count() == 2  # e2 waits with its file
    row = ActionLog.objects.filter(session=session, action="sync").latest("pk")
    assert row.detail == {"lines": 0, "conflicts": ["e0"]}
    dry = api_client.post(
        "/api/sync/", {**_control(3), "lines": edited, "dryRun": True, "reset": True}, format="json"
    )
    assert dry.status_code == 200 and dry.json()["conflicts"] == ["e0"]


@pytest.mark.parametrize(
    ("control", "field"),
    [
        ("not json", "JSON"),
        ([1, 2], "header"),
        ({"from": {"lines": 0, "bytes": 0}, "to": {"lines": 1, "bytes": 0}}, "header"),
        ({"header": header(), "from": {"lines": -1, "bytes": 0}, "to": {"lines": 1, "bytes": 0}}, "from"),
        ({"header": header(), "from": {"lines": 0, "bytes": 0}, "to": {"lines": 5, "bytes": 0}}, "to.lines"),
    ],
)
def test_bad_streamed_pushes_are_400_naming_the_field(
    api_client: APIClient, control: Any, field: str
) -> None:
    if isinstance(control, str):
        body = control.encode() + b"\n" + chain(1)[0].encode() + b"\n"
        answer = api_client.generic("POST", "/api/sync/", body, content_type="application/x-ndjson")
    else:
        answer = _stream(api_client, control, chain(1))
    assert answer.status_code == 400
    assert field in json.dumps(answer.json())
    assert not ChatSession.objects.filter(pi_id="sync-demo").exists()
