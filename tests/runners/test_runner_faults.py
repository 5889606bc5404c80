"""Runner faults as real process kills: nothing Pi wrote and the runner sent is lost, the run says why it
ended, the next dispatch continues from the stored leaf; a revoked runner is shut out within 2 s."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from agent.models import AgentRun
from providers.llm import testserver as script
from providers.llm.testserver import ProviderServer
from runners.models import Runner
from sessions_app import services
from sessions_app.models import ApiToken, ChatSession
from teams import services as team_services
from teams.models import TeamMembership
from tests.e2e.pi import file_lines, pi_installed, stored_lines
from tests.e2e.test_pi_piweb_live import Follower
from tests.e2e.test_pi_piweb_package import exported
from tests.live.servers import AsgiServer, private_piweb

from .proxy import CuttableProxy
from .test_runner_end_to_end import Stack, dispatch, finished, provider, stack, start_stack, wait_for
from .test_runner_end_to_end import running as run_running

__all__ = ["provider", "stack"]

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.slow,
    pytest.mark.background,
    pytest.mark.timeout(300),
    pytest.mark.skipif(not pi_installed(), reason="Pi is not installed: run `npm ci --prefix bench`"),
]


@pytest.fixture
def piweb(tmp_path: Path) -> Iterator[AsgiServer]:
    """A server that gives a runner that went away 2 s to come back."""
    with private_piweb(tmp_path, PIWEB_RUNNER_GRACE="2") as server:
        yield server


def test_a_runner_killed_mid_run_loses_nothing_it_sent_and_the_next_run_continues(
    stack: Stack, provider: ProviderServer
) -> None:
    session = ChatSession.objects.get(pk=stack.session.pk)
    before = len(stored_lines(session))
    provider.enqueue(script.tool_call("bash", {"command": "sleep 30"}))
    run_id = dispatch(stack, "Run the long job")
    # The prompt and the tool call reach piweb while the tool runs; then the machine dies.
    wait_for(lambda: len(stored_lines(ChatSession.objects.get(pk=session.pk))) >= before + 2, "Pi's lines")
    local = stack.process.file(session.pi_id)
    written = file_lines(local)
    stack.process.kill()
    run = finished(run_id, timeout=30)
    assert run.status == AgentRun.Status.FAILED
    assert "went offline" in run.error
    stored = stored_lines(ChatSession.objects.get(pk=session.pk))
    assert stored == written[: len(stored)], "what is stored is what Pi wrote, in order, once"
    assert len(stored) >= before + 2

    # The runner is back: the next dispatch continues from the stored leaf.
    stack.process.restart()
    wait_for(lambda: Runner.objects.get(pk=stack.runner.pk).online, "the runner back")
    provider.enqueue(script.reply("Back again."))
    again = finished(dispatch(stack, "Are you there?"))
    assert again.status == AgentRun.Status.SUCCEEDED, again.error
    session = ChatSession.objects.get(pk=session.pk)
    assert stored_lines(session) == file_lines(stack.process.file(session.pi_id))
    last = json.loads(stored_lines(session)[-1])
    assert last["message"]["content"][0]["text"] == "Back again."


def test_a_revoked_runner_is_shut_out_within_two_seconds_and_its_run_stops(
    stack: Stack, provider: ProviderServer
) -> None:
    provider.enqueue(script.tool_call("bash", {"command": "sleep 30"}))
    run_id = dispatch(stack, "Run the long job")
    wait_for(lambda: run_running(run_id), "the run starting")
    revoked_at = time.monotonic()
    answer = httpx.delete(
        f"{stack.server.base_url}/api/runners/{stack.runner.pk}/",
        headers={"Authorization": f"Bearer {stack.api_token}"},
        timeout=10,
    )
    assert answer.status_code == 204
    code = stack.process.proc.wait(timeout=10)
    assert time.monotonic() - revoked_at < 2.0, "the runner's socket closed late"
    assert code == 3
    run = AgentRun.objects.get(public_id=run_id)
    assert run.status == AgentRun.Status.ABORTED and "revoked" in run.error
    # No dispatch reaches it any more.
    refused = httpx.post(
        f"{stack.server.base_url}/api/sessions/{stack.session.pk}/runs/remote/",
        json={"runnerId": stack.runner.pk, "workspace": "work", "prompt": "x"},
        headers={"Authorization": f"Bearer {stack.api_token}"},
        timeout=10,
    )
    assert refused.status_code == 404


def _appends_once(follower: Follower) -> None:
    """Every append the follower heard carries a later sequence than the one before: none twice."""
    seqs = follower.appended()
    assert seqs == sorted(set(seqs)), seqs


CUT_SECONDS = 30  # as long a cut as a train tunnel, well within the runner's grace (60 s)


@pytest.fixture
def patient(tmp_path: Path) -> Iterator[AsgiServer]:
    """A server with the default grace for a runner that went away (a minute)."""
    with private_piweb(tmp_path) as server:
        yield server


def test_a_network_cut_mid_run_loses_nothing_and_repeats_nothing(
    patient: AsgiServer, provider: ProviderServer, user: Any, tmp_path: Path
) -> None:
    piweb = patient
    proxy = CuttableProxy(piweb.port)
    stack = start_stack(piweb, provider, user("ada"), tmp_path, via=proxy.url)
    follower = Follower(piweb, stack.session.pk, stack.api_token)
    try:
        provider.enqueue(
            script.tool_call("bash", {"command": "sleep 3 && echo built"}),
            script.reply("Built while you were away."),
        )
        run_id = dispatch(stack, "Build it")
        wait_for(lambda: run_running(run_id), "the run starting")
        proxy.cut()  # Pi works on: its tool, its answer, written to the runner's file only
        cut_at = time.monotonic()
        local = stack.process.file(stack.session.pi_id)
        wait_for(lambda: "Built while you were away." in local.read_text(), "Pi finishing offline", 30)
        time.sleep(max(0.0, CUT_SECONDS - (time.monotonic() - cut_at)))
        assert AgentRun.objects.get(public_id=run_id).status == AgentRun.Status.RUNNING
        proxy.restore()
        run = finished(run_id, timeout=60)
        assert run.status == AgentRun.Status.SUCCEEDED, run.error
        session = ChatSession.objects.get(pk=stack.session.pk)
        assert stored_lines(session) == file_lines(local)
        total = len(file_lines(local))
        follower.wait(lambda: bool(follower.appended()) and follower.appended()[-1] >= total - 1)
        _appends_once(follower)
        # The page was told of the gap, then that the runner was back.
        states = [m["online"] for _, m in follower.heard if m.get("event") == "runner_state"]
        assert states[:1] == [False] and states[-1] is True, states
    finally:
        follower.close()
        stack.process.stop()
        proxy.close()


def test_a_server_restart_mid_run_loses_nothing(stack: Stack, provider: ProviderServer) -> None:
    provider.enqueue(
        script.tool_call("bash", {"command": "sleep 3 && echo done"}),
        script.reply("Finished across a restart."),
    )
    run_id = dispatch(stack, "Work through a restart")
    wait_for(lambda: run_running(run_id), "the run starting")
    stack.server.service.stop()
    local = stack.process.file(stack.session.pi_id)
    wait_for(lambda: "Finished across a restart." in local.read_text(), "Pi finishing", 30)
    stack.server.service.start()
    run = finished(run_id, timeout=60)
    assert run.status == AgentRun.Status.SUCCEEDED, run.error
    session = ChatSession.objects.get(pk=stack.session.pk)
    assert stored_lines(session) == file_lines(local)
    assert exported(session) == local.read_bytes()


def test_a_requester_removed_from_the_team_has_their_run_stopped_within_two_seconds(
    piweb: AsgiServer, provider: ProviderServer, user: Any, tmp_path: Path
) -> None:
    ada, bob = user("ada"), user("bob")
    team = team_services.create_team(actor=ada, name="crew")
    TeamMembership.objects.create(team=team, user=bob, role=TeamMembership.Role.EDITOR)
    stack = start_stack(piweb, provider, ada, tmp_path, team=team)
    try:
        services.share_with_team(session=stack.session, team=team, access="editor", actor=ada)
        bobs = ApiToken.objects.create(user=bob)[1]
        provider.enqueue(script.tool_call("bash", {"command": "sleep 30"}))
        answer = httpx.post(
            f"{piweb.base_url}/api/sessions/{stack.session.pk}/runs/remote/",
            json={"runnerId": stack.runner.pk, "workspace": "work", "prompt": "Run the long job"},
            headers={"Authorization": f"Bearer {bobs}"},
            timeout=10,
        )
        assert answer.status_code == 202, answer.text
        run_id = answer.json()["runId"]
        wait_for(lambda: run_running(run_id), "the run starting")
        removed_at = time.monotonic()
        gone = httpx.delete(
            f"{piweb.base_url}/api/teams/{team.pk}/members/bob/",
            headers={"Authorization": f"Bearer {stack.api_token}"},
            timeout=10,
        )
        assert gone.status_code in (200, 204), gone.text
        run = finished(run_id, timeout=10)
        assert time.monotonic() - removed_at < 2.0
        assert run.status == AgentRun.Status.ABORTED and "no longer change" in run.error
        # Ada's team runner itself serves on (its owner is still in the team).
        assert Runner.objects.get(pk=stack.runner.pk).revoked_at is None
    finally:
        stack.process.stop()
