"""The runner's socket through the real ASGI stack: who may connect, and what a runner may write.

A runner writes Pi's file into the session of a run it was given, nothing else: anything else is refused
with a clear error and the session is left as it was.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from channels.testing import WebsocketCommunicator

from actionlog.models import ActionLog
from agent.models import AgentRun
from piweb.asgi import application
from runners import services as runner_services
from runners.models import Runner
from sessions_app import services
from sessions_app.models import ChatSession, Entry
from tests.factories import session_file, small_tree
from tests.ui.test_consumers import redis_layer_required, run

pytestmark = pytest.mark.django_db(transaction=True)
OTHER_HEADER = '{"type":"session","version":3,"id":"other"}'
session_lines: list[str] = []


def socket(token: str) -> WebsocketCommunicator:
    headers = [(b"host", b"127.0.0.1:8000"), (b"authorization", f"Runner {token}".encode())]
    return WebsocketCommunicator(application, "/ws/runner/", headers=headers)


async def connected(token: str) -> WebsocketCommunicator:
    ws = socket(token)
    ok, _ = await ws.connect()
    assert ok
    assert (await ws.receive_json_from(timeout=5))["type"] == "welcome"
    await ws.send_json_to({"type": "hello", "workspaces": ["work"], "piVersion": "1.6.0", "tools": ["read"]})
    await ws.send_json_to({"type": "ping"})
    assert (await ws.receive_json_from(timeout=5))["type"] == "pong"  # the hello was handled before
    return ws


@pytest.fixture
def setup(user: Callable[..., Any]) -> tuple[Any, ChatSession, Runner, str]:
    redis_layer_required()
    ada = user("ada")
    session = services.import_jsonl(actor=ada, data=session_file(small_tree()), filename="s.jsonl").session
    runner, token = runner_services.create_runner(actor=ada, name="box")
    return ada, session, runner, token


def lines_message(
    run_id: str, session: ChatSession, lines: list[str], header: str | None = None
) -> dict[str, Any]:
    """A batch after the session's lines as imported (the fixture's small tree, its leaf last)."""
    count, last = len(session_lines), session.leaf_entry_id
    return {
        "type": "lines",
        "run": run_id,
        "header": header or session.header_raw,
        "from": {"lines": count, "bytes": 0, "lastId": last},
        "to": {"lines": count + len(lines), "bytes": 0},
        "lines": lines,
    }


def entry(entry_id: str, parent: str | None, text: str = "ok") -> str:
    message = {"role": "assistant", "content": [{"type": "text", "text": text}], "timestamp": 1}
    value = {"type": "message", "id": entry_id, "parentId": parent, "timestamp": "2026-12-04T10:00:00Z"}
    return json.dumps({**value, "message": message}, separators=(",", ":"))


def test_a_wrong_or_revoked_token_is_refused(setup: Any) -> None:
    ada, _, runner, token = setup

    async def wrong() -> None:
        ws = socket("pwr_not-a-token")
        ok, code = await ws.connect()
        assert not ok and code == 4401

    run(wrong)
    runner_services.revoke_runner(actor=ada, runner=runner)

    async def revoked() -> None:
        ws = socket(token)
        ok, code = await ws.connect()
        assert not ok and code == 4401

    run(revoked)


def test_a_runner_writes_only_pi_entries_into_its_own_runs_session(setup: Any, settings: Any) -> None:
    ada, session, runner, token = setup
    settings.PIWEB_RUNNER_MAX_LINE_BYTES = 2000
    before = list(Entry.objects.filter(session=session).order_by("seq").values_list("raw", flat=True))
    session_lines[:] = before
    leaf = session.leaf_entry_id
    assert json.loads(before[-1])["id"] == leaf

    async def scenario() -> None:
        ws = await connected(token)
        info = (await Runner.objects.aget(pk=runner.pk)).info
        assert info["workspaces"] == ["work"] and info["piVersion"] == "1.6.0"
        work = await _dispatch(ada, session, runner)
        dispatch = await ws.receive_json_from(timeout=5)
        assert dispatch["type"] == "dispatch" and dispatch["run"] == work
        assert dispatch["prompt"] == "go" and dispatch["lines"] == before

        async def answer(message: dict[str, Any]) -> dict[str, Any]:
            await ws.send_json_to(message)
            return dict(await ws.receive_json_from(timeout=5))

        refusals = [
            # a run this runner was never given
            await answer(lines_message("00000000-0000-0000-0000-000000000000", session, [entry("x1", leaf)])),
            # a line that is not JSON, or not a Pi entry
            await answer(lines_message(work, session, [entry("x1", leaf), "not json"])),
            await answer(lines_message(work, session, ['{"type": "message"}'])),
            # a line far longer than any the runner may send
            await answer(lines_message(work, session, [entry("x1", leaf, "y" * 5000)])),
            # lines of another session's file
            await answer(lines_message(work, session, [entry("x1", leaf)], header=OTHER_HEADER)),
        ]
        for refused in refusals:
            assert refused["type"] == "refused", refused
        errors = [r["error"] for r in refusals]
        assert "no such run" in errors[0]
        # (Lines are numbered as in the session file, after its header.)
        assert f"line {len(before) + 2} is not JSON" in errors[1]
        assert "not a Pi entry" in errors[2]
        assert "over the 2000" in errors[3]
        assert "another session" in errors[4]
        # Nothing of it was stored; a good batch then is.
        raws = Entry.objects.filter(session=session).order_by("seq").values_list("raw", flat=True)
        assert [r async for r in raws] == before
        ack = await answer(lines_message(work, session, [entry("x1", leaf), entry("x2", "x1")]))
        assert ack["type"] == "ack" and ack["cursor"]["lines"] == len(before) + 2
        ended = await answer({"type": "ended", "run": work, "status": "finished"})
        assert ended["type"] == "refused" and "Unknown run status" in ended["error"]
        await ws.send_json_to({"type": "ended", "run": work, "status": "succeeded"})
        await ws.disconnect()

    run(scenario)
    stored = list(Entry.objects.filter(session=session).order_by("seq").values_list("raw", flat=True))
    assert stored[: len(before)] == before and len(stored) == len(before) + 2
    assert AgentRun.objects.get(session=session).status == AgentRun.Status.SUCCEEDED
    actions = list(ActionLog.objects.filter(action__startswith="runner_").values_list("action", flat=True))
    assert actions.count("runner_online") == 1 and actions.count("runner_offline") == 1
    assert "runner_dispatch" in actions and "runner_create" in actions


async def _dispatch(ada: Any, session: ChatSession, runner: Runner) -> str:
    from asgiref.sync import sync_to_async

    fresh = await Runner.objects.aget(pk=runner.pk)
    made = await sync_to_async(runner_services.dispatch_run)(
        actor=ada, session=session, runner=fresh, workspace="work", prompt="go"
    )
    return str(made.public_id)


def test_team_runners_serve_the_teams_editors_and_personal_ones_their_owner(user: Callable[..., Any]) -> None:
    from teams import services as team_services
    from teams.models import TeamMembership

    ada, bob, cy = user("ada"), user("bob"), user("cy")
    team = team_services.create_team(actor=ada, name="crew")
    TeamMembership.objects.create(team=team, user=bob, role=TeamMembership.Role.EDITOR)
    TeamMembership.objects.create(team=team, user=cy, role=TeamMembership.Role.VIEWER)
    shared, _ = runner_services.create_runner(actor=ada, name="team box", team=team)
    own, _ = runner_services.create_runner(actor=ada, name="ada box")
    assert {r.name for r in runner_services.runners_for(ada)} == {"team box", "ada box"}
    assert [r.name for r in runner_services.runners_for(bob)] == ["team box"]
    assert runner_services.runners_for(cy) == []
    with pytest.raises(PermissionError):
        runner_services.create_runner(actor=bob, name="not mine", team=team)
    with pytest.raises(PermissionError):
        runner_services.revoke_runner(actor=bob, runner=shared)
    assert own.token_id and shared.token_id != own.token_id
