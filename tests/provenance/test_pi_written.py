"""A session written by Pi itself (the real CLI, its bash tool, a scripted model on loopback) in a temporary
git repository, pushed by the real ``piweb-sync``: the commit Pi's ``git commit`` printed is linked to
that tool result, the PR URL its output named is found, and the push says where the folder stands."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from rest_framework.test import APIClient

from provenance.models import WorkspaceState
from providers.llm import testserver as script
from providers.llm.testserver import ProviderServer
from sessions_app.models import ApiToken, ChatSession, Entry
from tests.e2e.pi import NODE, PI_CLI, PiHome, pi_installed

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.slow,
    pytest.mark.timeout(300),
    pytest.mark.skipif(not pi_installed(), reason="Pi is not installed: run `npm ci --prefix bench`"),
]

WHO = "-c user.email=ada@example.org -c user.name=Ada"


def git(folder: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=folder, check=True, capture_output=True, text=True).stdout


def test_a_commit_pi_made_with_its_bash_tool_is_found_by_its_sha(
    live_server: Any, user: Callable[..., Any], tmp_path: Path
) -> None:
    owner = user("ada")
    token = ApiToken.objects.create(user=owner)[1]
    provider = ProviderServer().start()
    try:
        home = PiHome(tmp_path, provider.url, live_server.url, token)
        git(home.work, "init", "-q", "-b", "main")
        git(home.work, "remote", "add", "origin", "https://ada:ghp_secret@github.com/acme/widgets.git")
        provider.enqueue(
            script.tool_call(
                "bash",
                {"command": f'echo hi > hello.txt && git add hello.txt && git {WHO} commit -m "Say hi"'},
            ),
            script.tool_call("bash", {"command": "echo https://github.com/acme/widgets/pull/9"}, id="call_2"),
            script.reply("Committed and opened the PR."),
        )
        command = [str(NODE), str(PI_CLI), "--tools", "read,bash", "--no-extensions", "--no-skills"]
        command += ["--no-prompt-templates", "--no-context-files", "-p", "commit a greeting"]
        done = subprocess.run(
            command, cwd=home.work, env=home.env, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, done.stderr[-2000:]
        pushed = home.sync("push", "--once")
        assert pushed.returncode == 0, pushed.stderr
    finally:
        provider.stop()
    sha = git(home.work, "rev-parse", "HEAD").strip()
    session = ChatSession.objects.get(owner=owner)
    client = APIClient()
    client.force_authenticate(user=owner)
    [found] = client.get("/api/provenance/", {"commit": sha}).json()["sessions"]
    [made] = found["entries"]
    result = json.loads(Entry.objects.get(session=session, entry_id=made["entryId"]).raw)["message"]
    assert result["role"] == "toolResult" and result["toolName"] == "bash"
    assert f"{sha[:7]}] Say hi" in json.dumps(result)
    assert made["subject"] == "Say hi"
    [by_pr] = client.get("/api/provenance/", {"pr": "https://github.com/Acme/Widgets/pull/9"}).json()[
        "sessions"
    ]
    assert by_pr["id"] == session.pk
    seen = WorkspaceState.objects.get(session=session)
    assert (seen.repository, seen.branch, seen.head) == ("https://github.com/acme/widgets.git", "main", sha)
