"""``piweb-sync push`` from a session whose folder is a git work tree: the server records the repository
(credentials stripped on the machine already), the branch and HEAD, and a new HEAD after a commit."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from provenance.models import WorkspaceState
from sessions_app.models import ApiToken, ChatSession
from tests.sync.helpers import Cli, append, chain, header, write

pytestmark = pytest.mark.django_db(transaction=True)

GIT = ["git", "-c", "user.email=ada@example.org", "-c", "user.name=Ada", "-c", "init.defaultBranch=main"]


def git(folder: Path, *args: str) -> str:
    return subprocess.run(
        [*GIT, *args], cwd=folder, check=True, capture_output=True, text=True
    ).stdout.strip()


def test_a_push_from_a_git_work_tree_says_where_it_stands(
    live_server: Any, user: Callable[..., Any], tmp_path: Path
) -> None:
    owner = user()
    cli = Cli(live_server.url, ApiToken.objects.create(user=owner)[1], tmp_path)
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    git(repo, "checkout", "-q", "-b", "fix/parser")
    git(repo, "remote", "add", "origin", "https://ada:ghp_secret@github.com/acme/widgets.git")
    git(repo, "commit", "-q", "--allow-empty", "-m", "start")
    file = tmp_path / "agent" / "sessions" / "s.jsonl"
    write(file, [header(cwd=str(repo)), *chain(2)])
    assert cli("push", "--once")[0] == 0
    session = ChatSession.objects.get(owner=owner, pi_id="sync-demo")
    seen = WorkspaceState.objects.get(session=session)
    assert (seen.repository, seen.branch, seen.head, seen.source) == (
        "https://github.com/acme/widgets.git",
        "fix/parser",
        git(repo, "rev-parse", "HEAD"),
        "sync",
    )
    git(repo, "commit", "-q", "--allow-empty", "-m", "more")
    append(file, chain(2, start=2))
    assert cli("push", "--once")[0] == 0
    heads = list(WorkspaceState.objects.filter(session=session).order_by("pk").values_list("head", flat=True))
    assert heads == [seen.head, git(repo, "rev-parse", "HEAD")]
