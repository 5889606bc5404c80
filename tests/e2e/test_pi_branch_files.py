"""The files view against the real Pi CLI and git: what piweb says a branch changed is what git says.

Pi works in a temporary git repository with its read, edit, write and bash tools (one edit succeeds, one
fails: its oldText is not in the file), then commits through bash. Its session file, imported into piweb,
must give the files git reports between the first commit and HEAD, with git's +/− counts, and the content
at the leaf must be the committed text.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from rest_framework.test import APIClient

from providers.llm import testserver as script
from providers.llm.testserver import ProviderServer
from sessions_app import services

from .pi import NODE, PI_CLI, PiHome, pi_installed

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.slow,
    pytest.mark.skipif(not pi_installed(), reason="Pi is not installed: run `npm ci --prefix bench`"),
]

APP = "def greet(name):\n    return 'hello ' + name\n\n\ndef main():\n    print(greet('world'))\n"
GIT_ENV = {
    "GIT_AUTHOR_NAME": "Pi",
    "GIT_AUTHOR_EMAIL": "pi@example.test",
    "GIT_COMMITTER_NAME": "Pi",
    "GIT_COMMITTER_EMAIL": "pi@example.test",
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "GIT_CONFIG_NOSYSTEM": "1",
}


def git(work: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", *args], cwd=work, env=GIT_ENV, capture_output=True, text=True, timeout=30, check=True
    )
    return done.stdout


def test_the_files_pi_changed_are_what_git_committed(user: Callable[..., Any], tmp_path: Path) -> None:
    owner = user("pi-files")
    provider = ProviderServer().start()
    home = PiHome(tmp_path, provider.url, "http://127.0.0.1:1", "unused")
    home.env.update(GIT_ENV)
    work = home.work
    try:
        git(work, "init", "-q", "-b", "main")
        (work / "app.py").write_text(APP)
        (work / "README.md").write_text("# Project\n")
        git(work, "add", "-A")
        git(work, "commit", "-qm", "first")
        first = git(work, "rev-parse", "HEAD").strip()

        edits = [
            {
                "oldText": "    return 'hello ' + name",
                "newText": "    greeting = 'hello'\n    return f'{greeting} {name}'",
            },
            {"oldText": "print(greet('world'))", "newText": "print(greet('team'))"},
        ]
        provider.enqueue(
            script.tool_call("read", {"path": "app.py"}, id="call_read"),
            script.tool_call("edit", {"path": "app.py", "edits": edits}, id="call_edit"),
            script.tool_call(
                "edit",
                {"path": "app.py", "edits": [{"oldText": "not in the file", "newText": "x"}]},
                id="call_bad_edit",
            ),
            script.tool_call(
                "write",
                {"path": "docs/notes.md", "content": "# Notes\n\nGreets the team.\n"},
                id="call_write",
            ),
            script.tool_call(
                "bash", {"command": "git add -A && git commit -qm 'Greet the team'"}, id="call_bash"
            ),
            script.reply("Done: app.py greets the team, and docs/notes.md says so."),
        )
        command = [
            str(NODE),
            str(PI_CLI),
            "--tools",
            "read,edit,write,bash",
            "--no-extensions",
            "--no-skills",
        ]
        command += ["--no-prompt-templates", "--no-context-files", "-p", "Greet the team instead."]
        done = subprocess.run(
            command, cwd=work, env=home.env, capture_output=True, text=True, timeout=120, check=False
        )
        assert done.returncode == 0, done.stderr[-2000:]
    finally:
        provider.stop()

    assert git(work, "log", "--format=%s", "-1").strip() == "Greet the team"
    numstat = {}
    for row in git(work, "diff", "--numstat", f"{first}..HEAD").splitlines():
        added, removed, name = row.split("\t")
        numstat[name] = (int(added), int(removed))
    assert set(numstat) == {"app.py", "docs/notes.md"}

    [session_file] = home.files()
    results = [json.loads(line) for line in session_file.read_text().splitlines()[1:]]
    failed = [e["message"]["toolCallId"] for e in results if e.get("message", {}).get("isError") is True]
    assert failed == ["call_bad_edit"]  # Pi refused the edit whose oldText is not in the file
    stored = services.import_jsonl(
        actor=owner, data=session_file.read_bytes(), filename=session_file.name
    ).session
    api = APIClient()
    api.force_authenticate(user=owner)
    url = f"/api/sessions/{stored.pk}/files/"
    body = api.get(url).json()

    changed = {f["path"]: (f["added"], f["removed"]) for f in body["files"] if f["changeCount"]}
    assert changed == numstat
    kinds = {f["path"]: f["kinds"] for f in body["files"]}
    assert kinds == {"app.py": ["edited", "read"], "docs/notes.md": ["created"]}
    assert body["files"][0]["path"] == "docs/notes.md"  # the most recently touched first
    assert [c["command"] for c in body["commands"]] == ["git add -A && git commit -qm 'Greet the team'"]

    for name in numstat:
        detail = api.get(url, {"path": name}).json()["file"]
        assert detail["content"] == git(work, "show", f"HEAD:{name}"), name
        assert detail["commandsSince"] == 1  # the commit ran after: the panel says it may have changed it
    app = api.get(url, {"path": "app.py"}).json()["file"]
    [edit] = app["changes"]  # the failed edit is not a change
    lines = [line for hunk in edit["hunks"] for line in hunk["lines"]]
    assert "+    greeting = 'hello'" in lines and "-    print(greet('world'))" in lines
    # Anchored to Pi's tool result: the entry that selects it in the tree.
    anchored = api.get(f"/api/sessions/{stored.pk}/entries/{edit['entryId']}/").json()
    assert anchored["entry"]["message"]["role"] == "toolResult"
    assert anchored["entry"]["message"]["toolCallId"] == "call_edit"
