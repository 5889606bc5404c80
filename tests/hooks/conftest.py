"""A real HTTP receiver on loopback that checks each signature, and a team with a shared session."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from rest_framework.test import APIClient

from hooks.domain.signing import verify
from piweb.celery import app as celery_app
from sessions_app import services
from sessions_app.models import ChatSession
from teams.models import Team, TeamMembership
from tests.factories import HEADER, session_file, small_tree
from tests.procs import free_port


@dataclass
class Received:
    headers: dict[str, str]
    body: bytes
    at: float
    signed: bool  # the signature checked out under the secret the receiver knew then

    @property
    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Receiver:
    """Answers each POST with the next of ``answers`` (then 200); ``down`` refuses connections."""

    port: int
    secret: str = ""
    answers: list[int] = field(default_factory=list)
    got: list[Received] = field(default_factory=list)
    server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/piweb"

    def wait_for(self, count: int, seconds: float = 10.0) -> list[Received]:
        deadline = time.monotonic() + seconds
        while len(self.got) < count and time.monotonic() < deadline:
            time.sleep(0.02)
        assert len(self.got) >= count, f"{len(self.got)} of {count} deliveries arrived"
        return self.got

    def start(self) -> None:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                headers = {k: v for k, v in self.headers.items()}
                signed = verify(
                    receiver.secret,
                    headers.get("X-Piweb-Timestamp", ""),
                    body,
                    headers.get("X-Piweb-Signature", ""),
                    now=time.time(),
                )
                receiver.got.append(Received(headers, body, time.monotonic(), signed))
                code = receiver.answers.pop(0) if receiver.answers else 200
                self.send_response(code)
                self.send_header("Content-Type", "text/plain")
                self.end_headers()
                self.wfile.write(b"ok" if code < 300 else b"receiver trouble")

            def log_message(self, format: str, *args: Any) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
            self.server = None


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    found = Receiver(free_port())
    found.start()
    yield found
    found.stop()


@pytest.fixture(autouse=True)
def _hook_settings(settings: Any) -> None:
    """Receivers on loopback are allowed, and backoff takes a second instead of half a minute."""
    settings.PIWEB_HOOKS_ALLOW_PRIVATE = True
    settings.PIWEB_HOOKS_TIMEOUT_SECONDS = 2.0
    settings.PIWEB_HOOKS_BACKOFF_FIRST_SECONDS = 1.0
    settings.PIWEB_HOOKS_BACKOFF_MAX_SECONDS = 2.0
    settings.PIWEB_HOOKS_SWEEP_GRACE_SECONDS = 0.0


@pytest.fixture
def eager_tasks() -> Iterator[None]:
    """Run queued tasks in-process as they are queued (after commit), a countdown or not."""
    eager, propagates = celery_app.conf.task_always_eager, celery_app.conf.task_eager_propagates
    celery_app.conf.task_always_eager, celery_app.conf.task_eager_propagates = True, True
    yield
    celery_app.conf.task_always_eager, celery_app.conf.task_eager_propagates = eager, propagates


@dataclass(frozen=True, slots=True)
class Crew:
    owner: Any
    editor: Any
    viewer: Any
    outsider: Any
    team: Team
    session: ChatSession  # shared with the team
    private: ChatSession  # the owner's, shared with nobody

    def client(self, who: Any) -> APIClient:
        client = APIClient()
        client.force_authenticate(user=who)
        return client


@pytest.fixture
def crew(user: Callable[..., Any]) -> Crew:
    owner, editor, viewer, outsider = user("olga"), user("eddie"), user("vera"), user("oscar")
    team = Team.objects.create(name="crew")
    TeamMembership.objects.create(team=team, user=owner, role=TeamMembership.Role.OWNER)
    TeamMembership.objects.create(team=team, user=editor, role=TeamMembership.Role.EDITOR)
    TeamMembership.objects.create(team=team, user=viewer, role=TeamMembership.Role.VIEWER)
    session = services.import_jsonl(actor=owner, data=session_file(small_tree())).session
    services.share_with_team(session=session, team=team, access="editor", actor=owner)
    private = services.import_jsonl(
        actor=owner, data=session_file(small_tree(), {**HEADER, "id": "private"}), filename="private.jsonl"
    ).session
    services.rename_session(session=private, name="Merger plans", actor=owner)
    return Crew(owner, editor, viewer, outsider, team, session, private)


def make_hook(
    client: APIClient, receiver: Receiver, events: list[str], *, team: Team | None = None, **extra: Any
) -> int:
    """Create a hook through the API; the receiver learns its secret (shown this once)."""
    url = f"/api/teams/{team.pk}/hooks/" if team is not None else "/api/hooks/"
    response = client.post(url, {"name": "ci", "url": receiver.url, "events": events, **extra}, format="json")
    assert response.status_code == 201, response.content
    receiver.secret = response.json()["secret"]
    return int(response.json()["hook"]["id"])
