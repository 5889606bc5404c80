"""``piweb-runner`` with the real Pi CLI in RPC mode, its tools in a temporary git repository, and piweb on
daphne with a private Redis: a prompt sent from piweb makes Pi read, edit and run git in the workspace;
a teammate's socket follows the reply and each tool live; the session on piweb equals Pi's file.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from actionlog.models import ActionLog
from agent.models import AgentRun
from providers.llm import testserver as script
from providers.llm.testserver import ProviderServer
from runners import services as runner_services
from runners.models import Runner, digest
from sessions_app import services
from sessions_app.models import ApiToken, ChatSession
from tests.conftest import CLIENT_SRC
from tests.e2e.pi import NODE, PI_CLI, PiHome, file_lines, pi_installed, stored_lines
from tests.e2e.test_pi_piweb_live import Follower, git_repository
from tests.e2e.test_pi_piweb_package import exported, piweb
from tests.live.servers import AsgiServer

__all__ = ["piweb"]

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.slow,
    pytest.mark.timeout(300),
    pytest.mark.skipif(not pi_installed(), reason="Pi is not installed: run `npm ci --prefix bench`"),
]

PI = [str(NODE), str(PI_CLI), "--no-extensions", "--no-skills", "--no-prompt-templates", "--no-context-files"]


class RunnerProcess:
    """``python -m piweb_runner`` serving one workspace, as its owner would start it."""

    def __init__(self, home: PiHome, server: str, token: str, workspace: Path) -> None:
        self.start(home, server, token, workspace)

    def start(self, home: PiHome, server: str, token: str, workspace: Path) -> None:
        self.args = (home, server, token, workspace)
        env = {
            **home.env,
            "PIWEB_URL": server,
            "PIWEB_RUNNER_TOKEN": token,
            "PIWEB_RUNNER_PI": shlex.join(PI),
            "PYTHONPATH": str(CLIENT_SRC),
        }
        env.pop("PIWEB_TOKEN", None)
        self.state = Path(env["XDG_STATE_HOME"]) / "piweb-runner"
        command = [sys.executable, "-m", "piweb_runner", "-w", f"work={workspace}", "--name", "box", "-v"]
        # Its own process group: a test that kills the runner kills its Pi with it, as a machine crash does.
        self.proc = subprocess.Popen(
            command, env=env, stderr=subprocess.PIPE, text=True, start_new_session=True
        )

    def file(self, pi_id: str) -> Path:
        return self.state / "sessions" / f"{pi_id}.jsonl"

    def restart(self) -> None:
        self.start(*self.args)

    def kill(self) -> None:
        """SIGKILL the runner and its Pi at once, as a crash or a power cut would."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=10)

    def stop(self) -> str:
        if self.proc.poll() is None:
            self.proc.terminate()
        try:
            _, err = self.proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            _, err = self.proc.communicate()
        # The server records the runner leaving: let it finish before the test's tables are emptied.
        token = self.args[2]
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            found = Runner.objects.filter(token_digest=digest(token)).first()
            if found is None or not found.online:
                break
            time.sleep(0.1)
        time.sleep(0.3)
        return err or ""


@dataclass(frozen=True, slots=True)
class Stack:
    ada: Any
    session: ChatSession
    runner: Runner
    home: PiHome
    process: RunnerProcess
    api_token: str
    server: AsgiServer


def wait_for(check: Callable[[], Any], what: str, timeout: float = 30) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        found = check()
        if found:
            return found
        assert time.monotonic() < deadline, f"{what} did not happen in {timeout}s"
        time.sleep(0.1)


@pytest.fixture
def provider() -> Iterator[ProviderServer]:
    server = ProviderServer().start()
    yield server
    server.stop()


def pi_written_session(home: PiHome, provider: ProviderServer, owner: Any) -> ChatSession:
    """A one-turn session Pi wrote in ``home``'s work folder (made a git repository), for ``owner``."""
    git_repository(home.work)
    provider.enqueue(script.reply("Hello."))
    home.pi("-p", "hello")
    [local] = home.files()
    return services.import_jsonl(actor=owner, data=local.read_bytes(), filename=local.name).session


def start_stack(
    piweb: AsgiServer,
    provider: ProviderServer,
    ada: Any,
    tmp_path: Path,
    *,
    via: str | None = None,
    team: Any = None,
    api: str = "openai-completions",
) -> Stack:
    """Ada's session (written by Pi, imported), her runner on a git repository (reaching piweb at ``via``,
    its own address unless a test puts something between them; the team's when ``team`` is given), her
    API token. ``api`` is the wire format Pi speaks to the scripted provider."""
    api_token = ApiToken.objects.create(user=ada)[1]
    home = PiHome(tmp_path, provider.url, piweb.base_url, api_token, api=api)
    session = pi_written_session(home, provider, ada)
    runner, token = runner_services.create_runner(actor=ada, name="box", team=team)
    process = RunnerProcess(home, via or piweb.base_url, token, home.work)
    try:
        wait_for(lambda: ready(runner.pk), "the runner coming online")
    except BaseException:
        process.stop()
        raise
    return Stack(ada, session, runner, home, process, api_token, piweb)


@pytest.fixture
def stack(piweb: Any, provider: ProviderServer, user: Callable[..., Any], tmp_path: Path) -> Iterator[Any]:
    found = start_stack(piweb, provider, user("ada", first_name="Ada", last_name="King"), tmp_path)
    try:
        yield found
    finally:
        err = found.process.stop()
        if os.environ.get("PIWEB_TEST_VERBOSE"):
            print(err)


def ready(pk: int) -> bool:
    runner = Runner.objects.get(pk=pk)
    return runner.online and runner.workspaces() == ["work"]


def running(run_id: str) -> bool:
    return AgentRun.objects.get(public_id=run_id).status == AgentRun.Status.RUNNING


def ask(runner_id: int) -> dict[str, Any]:
    return {"runnerId": runner_id, "workspace": "work", "prompt": "x"}


def dispatch(stack: Any, prompt: str, model: str = "") -> str:
    answer = httpx.post(
        f"{stack.server.base_url}/api/sessions/{stack.session.pk}/runs/remote/",
        json={"runnerId": stack.runner.pk, "workspace": "work", "prompt": prompt, "model": model},
        headers={"Authorization": f"Bearer {stack.api_token}"},
        timeout=10,
    )
    assert answer.status_code == 202, answer.text
    return str(answer.json()["runId"])


def finished(run_id: str, timeout: float = 60) -> AgentRun:
    return wait_for(
        lambda: (run := AgentRun.objects.get(public_id=run_id)).is_finished and run, "the run ending", timeout
    )


@pytest.fixture(params=["openai-completions", "anthropic-messages"])
def wired(
    request: pytest.FixtureRequest,
    piweb: Any,
    provider: ProviderServer,
    user: Callable[..., Any],
    tmp_path: Path,
) -> Iterator[Stack]:
    """The stack, with Pi speaking one of the provider wire formats."""
    found = start_stack(piweb, provider, user("ada", first_name="Ada"), tmp_path, api=request.param)
    try:
        yield found
    finally:
        found.process.stop()


def test_a_prompt_from_piweb_makes_pi_edit_a_real_file_and_the_team_watches(
    wired: Stack, provider: ProviderServer
) -> None:
    stack = wired
    follower = Follower(stack.server, stack.session.pk, stack.api_token)
    try:
        provider.enqueue(
            script.tool_call("read", {"path": "notes.txt"}),
            script.tool_call(
                "edit", {"path": "notes.txt", "edits": [{"oldText": "3.11", "newText": "3.12"}]}, id="call_2"
            ),
            script.tool_call("bash", {"command": "git diff --stat"}, id="call_3"),
            script.reply("Bumped the Python version to 3.12 in notes.txt.", delay=0.01),
        )
        run_id = dispatch(stack, "Bump the Python version in notes.txt", model="fake/fake-model")
        run = finished(run_id)
        assert run.status == AgentRun.Status.SUCCEEDED, run.error
        # The work is on disk, done by Pi's own tools in the workspace.
        assert (stack.home.work / "notes.txt").read_text() == "The build needs Python 3.12.\n"
        # The session on piweb is the file Pi wrote, line for line.
        local = stack.process.file(stack.session.pi_id)
        session = ChatSession.objects.get(pk=stack.session.pk)
        assert stored_lines(session) == file_lines(local)
        assert exported(session) == local.read_bytes()
        # The teammate's socket saw the run start, the reply stream, each tool run with its output, the end.
        follower.wait(lambda: any(m.get("event") == "run_ended" for _, m in follower.heard))
        events = [m for _, m in follower.heard if m.get("type") == "event" or "event" in m]
        names = [m.get("event") for m in events]
        assert "run_started" in names and "run_ended" in names
        deltas = [m for m in events if m.get("event") == "run_delta" and m.get("kind") == "text"]
        streamed = "".join(m["delta"] for m in deltas)
        assert streamed == "Bumped the Python version to 3.12 in notes.txt."
        tools = [(m["toolName"], m["phase"]) for m in events if m.get("event") == "run_tool"]
        assert ("edit", "start") in tools and ("edit", "end") in tools
        ran = [m for m in events if m.get("event") == "run_tool" and m["phase"] == "end"]
        git = next(m for m in ran if m["toolName"] == "bash")
        assert "notes.txt" in git["output"]
    finally:
        follower.close()
    actions = set(ActionLog.objects.filter(session=stack.session).values_list("action", flat=True))
    assert "runner_dispatch" in actions
    assert ActionLog.objects.filter(action="runner_online").exists()


def test_steer_and_stop_reach_pi(stack: Any, provider: ProviderServer) -> None:
    # A steer sent while a tool runs is given to the model before its next request.
    provider.enqueue(
        script.tool_call("bash", {"command": "sleep 2"}),
        script.reply("Hi, as you asked."),
    )
    run_id = dispatch(stack, "Wait a little")
    wait_for(lambda: running(run_id), "the run starting")
    time.sleep(0.5)
    headers = {"Authorization": f"Bearer {stack.api_token}"}
    steered = httpx.post(
        f"{stack.server.base_url}/api/runs/{run_id}/steer/", json={"message": "Also say hi"}, headers=headers
    )
    assert steered.status_code == 202, steered.text
    assert finished(run_id).status == AgentRun.Status.SUCCEEDED
    last_request = provider.requests[-1].body
    assert "Also say hi" in json.dumps(last_request)
    assert any("Also say hi" in line for line in stored_lines(ChatSession.objects.get(pk=stack.session.pk)))

    # Stop while the reply streams: Pi aborts, what it wrote so far is kept, the run ends aborted.
    provider.enqueue(script.reply(" ".join(f"word{i}" for i in range(200)), delay=0.05))
    run_id = dispatch(stack, "Write a long answer")
    wait_for(lambda: running(run_id), "the run starting")
    time.sleep(1.0)
    stop = f"{stack.server.base_url}/api/sessions/{stack.session.pk}/runs/stop/"
    stopped = httpx.post(stop, headers=headers)
    assert stopped.status_code in (200, 202), stopped.text
    run = finished(run_id, timeout=30)
    assert run.status == AgentRun.Status.ABORTED
    session = ChatSession.objects.get(pk=stack.session.pk)
    local = stack.process.file(session.pi_id)
    assert stored_lines(session) == file_lines(local)
    last = json.loads(stored_lines(session)[-1])
    assert last["message"]["stopReason"] == "aborted"


def test_an_offline_or_foreign_runner_is_refused_at_once(stack: Any, user: Callable[..., Any]) -> None:
    eve = user("eve")
    foreign, _ = runner_services.create_runner(actor=eve, name="eves")
    headers = {"Authorization": f"Bearer {stack.api_token}"}
    url = f"{stack.server.base_url}/api/sessions/{stack.session.pk}/runs/remote/"
    answer = httpx.post(url, json=ask(foreign.pk), headers=headers)
    assert answer.status_code == 404
    # The runner says which models Pi offers there; another is refused before anything starts.
    assert Runner.objects.get(pk=stack.runner.pk).models() == ["fake/fake-model"]
    unknown = {**ask(stack.runner.pk), "model": "fake/other-model"}
    answer = httpx.post(url, json=unknown, headers=headers)
    assert answer.status_code == 409 and "does not offer the model" in answer.json()["error"]
    stack.process.stop()
    wait_for(lambda: not Runner.objects.get(pk=stack.runner.pk).online, "the runner going offline")
    answer = httpx.post(url, json=ask(stack.runner.pk), headers=headers)
    assert answer.status_code == 409 and "offline" in answer.json()["error"]
    assert not AgentRun.objects.filter(session=stack.session).exists()
