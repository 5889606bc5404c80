"""Every live event kind against every kind of grant: a socket receives only what its grant may see.

Members (the owner, team editors and viewers) receive every event as published. A live tree link
receives position events, and for content REST keeps to collaborators (run prompts and deltas,
compaction and summary results) at most a bare ``changed`` hint with the sequence number. Path and
frozen links see a part of the session fixed when they were made, so nothing later reaches them. The
events are published by ``realtime.broadcast`` on the Redis layer and received through the ASGI stack.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from channels.testing import WebsocketCommunicator
from django.conf import settings
from django.test import Client

from core import realtime
from piweb.asgi import application
from sessions_app import services
from sessions_app.models import SessionShare, ShareLink
from teams.models import Team, TeamMembership
from tests.factories import session_file, small_tree

pytestmark = pytest.mark.django_db(transaction=True)
SECRET = "owner-only words"

# One event of each kind the server publishes, with the fields it publishes them with.
EVENTS: dict[str, dict[str, Any]] = {
    "append": {"event": "entries_appended", "seq": 6},
    "label": {"event": "entries_appended", "seq": 7},  # a label is an appended label entry
    "leaf": {"event": "leaf_moved", "leaf": "a2", "seq": 7},
    "run_started": {"event": "run_started", "run": "r1", "prompt": SECRET, "provider": "p", "model": "m"},
    "run_delta": {"event": "run_delta", "run": "r1", "delta": SECRET, "index": 0, "kind": "text"},
    "run_entry": {"event": "entry_appended", "run": "r1", "entry": {"id": "x", "text": SECRET}, "seq": 8},
    "run_retry": {"event": "auto_retry_start", "run": "r1", "attempt": 1, "errorMessage": SECRET},
    "run_ended": {"event": "run_ended", "run": "r1", "status": "failed", "error": SECRET, "seq": 8},
    "compaction_start": {"event": "compaction_start", "operationId": "o1", "reason": "manual"},
    "compaction_end": {"event": "compaction_end", "operationId": "o1", "result": {"summary": SECRET}},
    "summary_start": {"event": "branch_summary_start", "operationId": "o2", "reason": "navigate"},
    "summary_end": {"event": "branch_summary_end", "operationId": "o2", "summaryEntryId": "s", "seq": 9},
    "access": {"event": "access_changed"},
    "deleted": {"event": "session_deleted"},
}
GRANTS = ("owner", "team_editor", "team_viewer", "tree_link", "path_link", "frozen_link")
HINTED = {"run_entry", "run_ended", "summary_end"}  # content with a seq: a tree link hears "changed"
POSITIONS = {"append", "label", "leaf"}


def expected(grant: str, kind: str, pk: int) -> dict[str, Any] | None:
    event = {"type": "event", "session": pk, **EVENTS[kind]}
    if kind == "access":
        return None  # re-checks access; still allowed, so nothing is said and the socket stays open
    if grant in ("owner", "team_editor", "team_viewer"):
        return event
    if kind == "deleted":
        return event
    if grant != "tree_link":
        return None
    if kind in POSITIONS:
        return event
    if kind in HINTED:
        return {"type": "event", "event": "changed", "session": pk, "seq": EVENTS[kind]["seq"]}
    return None


def test_every_event_kind_against_every_grant_kind(user: Callable[..., Any]) -> None:
    assert "Redis" in settings.CHANNEL_LAYERS["default"]["BACKEND"], "the matrix needs the Redis layer"
    owner, editor, viewer = user("owner"), user("editor"), user("viewer")
    session = services.import_jsonl(actor=owner, data=session_file(small_tree()), filename="s.jsonl").session
    team = Team.objects.create(name="t")
    TeamMembership.objects.create(team=team, user=editor, role=TeamMembership.Role.EDITOR)
    TeamMembership.objects.create(team=team, user=viewer, role=TeamMembership.Role.VIEWER)
    SessionShare.objects.create(session=session, team=team, access=SessionShare.Access.EDITOR)
    links = {
        "tree_link": services.create_share_link(session=session, actor=owner),
        "path_link": services.create_share_link(session=session, actor=owner, scope=ShareLink.Scope.PATH),
        "frozen_link": services.create_share_link(session=session, actor=owner, frozen=True),
    }
    users = {"owner": owner, "team_editor": editor, "team_viewer": viewer}

    def headers(grant: str) -> list[tuple[bytes, bytes]]:
        found = [(b"host", b"127.0.0.1:8000"), (b"origin", b"http://127.0.0.1:8000")]
        if grant in users:
            client = Client()
            client.force_login(users[grant])
            found.append((b"cookie", f"sessionid={client.cookies['sessionid'].value}".encode()))
        else:
            found.append((b"x-share-token", links[grant].raw_token.encode()))
        return found

    received: dict[tuple[str, str], list[dict[str, Any]]] = {}
    prepared = {g: headers(g) for g in GRANTS}

    async def scenario() -> None:
        sockets = {
            g: WebsocketCommunicator(application, f"/ws/sessions/{session.pk}/", prepared[g]) for g in GRANTS
        }
        for grant, ws in sockets.items():
            assert (await ws.connect())[0], grant
            assert (await ws.receive_json_from(timeout=5))["type"] == "state"
        for kind, event in EVENTS.items():
            realtime.broadcast(
                session.pk, **{"event": event["event"]}, **{k: v for k, v in event.items() if k != "event"}
            )
            for grant, ws in sockets.items():
                got: list[dict[str, Any]] = []
                # Members hear every event: wait for theirs; everyone else gets a short window.
                wait = 5 if expected(grant, kind, session.pk) is not None else 0.3
                while not await ws.receive_nothing(timeout=wait):
                    message = await ws.receive_output(timeout=1)
                    assert message["type"] == "websocket.send", (grant, kind, message)
                    got.append(json.loads(message["text"]))
                    wait = 0.1
                received[(grant, kind)] = got
        for ws in sockets.values():
            await ws.disconnect()

    async_to_sync(scenario)()
    failures = []
    for grant in GRANTS:
        for kind in EVENTS:
            want = expected(grant, kind, session.pk)
            got = received[(grant, kind)]
            if got != ([want] if want is not None else []):
                failures.append(f"{grant} × {kind}: expected {want}, got {got}")
            if grant not in users and SECRET in json.dumps(got):
                failures.append(f"{grant} × {kind}: content outside the grant leaked")
    assert not failures, "\n".join(failures)
    assert len(received) == len(GRANTS) * len(EVENTS) == 84
