"""Commits made by the runner's Pi, with the real Pi CLI and ``piweb-runner`` in a temporary git repository:
a commit whose ``git commit`` output Pi's bash tool printed is linked to that result, one made silently
to the run's last entry (the runner compares HEAD before and after the run); with ``--commit-trailer``
each commit names the session, while the repository's own hook still runs and its config is untouched.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from agent.models import AgentRun
from provenance.models import Commit, WorkspaceState
from providers.llm import testserver as script
from providers.llm.testserver import ProviderServer
from runners import services as runner_services
from sessions_app.models import ApiToken
from tests.conftest import CLIENT_SRC
from tests.e2e.pi import PiHome, pi_installed
from tests.e2e.test_pi_piweb_package import piweb
from tests.runners.test_runner_end_to_end import (
    PI,
    RunnerProcess,
    Stack,
    dispatch,
    finished,
    pi_written_session,
    ready,
    wait_for,
)

__all__ = ["piweb"]

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.slow,
    pytest.mark.timeout(300),
    pytest.mark.skipif(not pi_installed(), reason="Pi is not installed: run `npm ci --prefix bench`"),
]

WHO = "-c user.email=ada@example.org -c user.name=Ada"
REPO_HOOK = '#!/bin/sh\nprintf "\\nChecked-By: the repository hook\\n" >> "$1"\n'


class TrailerRunner(RunnerProcess):
    """The runner started with ``--commit-trailer``."""

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
        command = [sys.executable, "-m", "piweb_runner", "-w", f"work={workspace}", "--name", "box"]
        self.proc = subprocess.Popen(
            [*command, "--commit-trailer"], env=env, stderr=subprocess.PIPE, text=True, start_new_session=True
        )


@pytest.fixture
def provider() -> Iterator[ProviderServer]:
    server = ProviderServer().start()
    yield server
    server.stop()


@pytest.fixture
def stack(piweb: Any, provider: ProviderServer, user: Callable[..., Any], tmp_path: Path) -> Iterator[Stack]:
    ada = user("ada")
    api_token = ApiToken.objects.create(user=ada)[1]
    home = PiHome(tmp_path, provider.url, piweb.base_url, api_token)
    session = pi_written_session(home, provider, ada)
    runner, token = runner_services.create_runner(actor=ada, name="box")
    process = TrailerRunner(home, piweb.base_url, token, home.work)
    try:
        wait_for(lambda: ready(runner.pk), "the runner coming online")
        yield Stack(ada, session, runner, home, process, api_token, piweb)
    finally:
        process.stop()


def git(folder: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=folder, check=True, capture_output=True, text=True).stdout


def test_commits_of_a_run_are_linked_to_its_entries_and_carry_the_session(
    stack: Stack, provider: ProviderServer
) -> None:
    work = stack.home.work
    hook = work / ".git" / "hooks" / "commit-msg"
    hook.write_text(REPO_HOOK)
    hook.chmod(0o755)
    config = (work / ".git" / "config").read_bytes()
    before = git(work, "rev-parse", "HEAD").strip()
    provider.enqueue(
        script.tool_call(
            "bash", {"command": f'echo "3.12" >> notes.txt && git {WHO} commit -am "Bump the notes"'}, id="c1"
        ),
        script.tool_call(
            "bash", {"command": f'git {WHO} commit -q --allow-empty -m "Mark the release"'}, id="c2"
        ),
        script.reply("Committed twice."),
    )
    run = finished(dispatch(stack, "Commit the notes, then mark the release"))
    assert run.status == AgentRun.Status.SUCCEEDED, run.error
    shas = git(work, "rev-list", "--reverse", f"{before}..HEAD").split()
    assert len(shas) == 2
    session_url = f"{stack.server.base_url}/sessions/{stack.session.pk}/"
    # The trailer names the session; the repository's own commit-msg hook ran as well.
    for sha in shas:
        message = git(work, "log", "-1", "--format=%B", sha)
        assert f"Piweb-Session: {session_url}" in message, message
        assert "Checked-By: the repository hook" in message, message
    assert (work / ".git" / "config").read_bytes() == config
    assert hook.read_text() == REPO_HOOK
    # Both commits are linked with their full SHA: the first to the bash result that printed it.
    rows = wait_for(
        lambda: (found := list(Commit.objects.filter(session=stack.session).order_by("pk"))) and found,
        "the commits being linked",
    )
    by_sha = {r.sha: r for r in rows}
    assert set(by_sha) == set(shas)
    first, second = by_sha[shas[0]], by_sha[shas[1]]
    answer = httpx.get(
        f"{stack.server.base_url}/api/provenance/",
        params={"commit": shas[0]},
        headers={"Authorization": f"Bearer {stack.api_token}"},
    ).json()
    [found] = answer["sessions"]
    entry_ids = [e["entryId"] for e in found["entries"]]
    assert entry_ids == [first.entry_id]
    printed = httpx.get(
        f"{stack.server.base_url}/api/sessions/{stack.session.pk}/entries/{first.entry_id}/",
        headers={"Authorization": f"Bearer {stack.api_token}"},
    ).json()
    assert "Bump the notes" in str(printed)
    assert (first.subject, first.found) == ("Bump the notes", "output")
    # The silent one is the run's: linked to its last entry, by the runner's before/after comparison.
    assert (second.subject, second.found) == ("Mark the release", "runner")
    assert second.entry_id is not None
    seen = WorkspaceState.objects.filter(session=stack.session, source="runner").latest("pk")
    assert seen.head == shas[1]
