"""Commits and pull requests behind sessions, from real ``git`` output in bash results: linked to the entry
that made them at write time (import, append), found by SHA or PR URL through the API and the search box
for those who may read the session only, shown on the session page; a push's workspace is recorded
without credentials."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from rest_framework.test import APIClient

from provenance.models import Commit, WorkspaceState
from sessions_app import services
from sessions_app.models import ChatSession
from teams import services as team_services
from teams.models import TeamMembership
from tests.factories import HEADER, user_message

pytestmark = pytest.mark.django_db

GIT = ["git", "-c", "user.email=ada@example.org", "-c", "user.name=Ada", "-c", "init.defaultBranch=main"]
PR_OUTPUT = (
    "remote: Create a pull request for 'fix' on GitHub by visiting:\n"
    "remote:      https://github.com/Acme/Widgets/pull/new/fix\n"
    "Creating pull request for fix into main in Acme/Widgets\n\nhttps://github.com/Acme/Widgets/pull/42\n"
)
OFFER = "https://github.com/Acme/Widgets/pull/new/fix"


def git(folder: Path, *args: str) -> str:
    done = subprocess.run([*GIT, *args], cwd=folder, check=True, capture_output=True, text=True)
    return done.stdout


def commit(folder: Path, name: str, subject: str) -> tuple[str, str]:
    """Change a file and commit it; return git's own output and the full SHA."""
    (folder / name).write_text(subject + "\n")
    git(folder, "add", name)
    output = git(folder, "commit", "-m", subject)
    return output, git(folder, "rev-parse", "HEAD").strip()


def bash_turn(call_id: str, parent: str, command: str, output: str) -> list[dict[str, Any]]:
    """An assistant message running ``command`` with the bash tool, and its result printing ``output``."""
    call = {"type": "toolCall", "id": call_id, "name": "bash", "arguments": {"command": command}}
    return [
        {
            "type": "message",
            "id": f"{call_id}-a",
            "parentId": parent,
            "timestamp": "2026-01-02T03:04:07.000Z",
            "message": {"role": "assistant", "content": [call], "stopReason": "toolUse", "timestamp": 2},
        },
        {
            "type": "message",
            "id": f"{call_id}-r",
            "parentId": f"{call_id}-a",
            "timestamp": "2026-01-02T03:04:08.000Z",
            "message": {
                "role": "toolResult",
                "toolCallId": call_id,
                "toolName": "bash",
                "content": [{"type": "text", "text": output}],
                "isError": False,
                "timestamp": 3,
            },
        },
    ]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    git(tmp_path, "init", "-q")
    return tmp_path


@pytest.fixture
def world(repo: Path, user: Callable[..., Any]) -> dict[str, Any]:
    """Ada's session: c1 made the root commit; then c2 a fix and its pull request; c3, on a second branch
    under c1, another commit."""
    ada = user("ada")
    out1, sha1 = commit(repo, "a.txt", "First import")
    out2, sha2 = commit(repo, "b.txt", "Fix the parser")
    out3, sha3 = commit(repo, "c.txt", "Try another way")
    entries = [
        user_message("u1", None, "start the project"),
        *bash_turn("c1", "u1", 'git add -A && git commit -m "First import"', out1),
        user_message("u2", "c1-r", "fix the parser and open a PR"),
        *bash_turn("c2", "u2", 'git commit -am "Fix the parser"', out2),
        *bash_turn("c4", "c2-r", "gh pr create --fill", PR_OUTPUT),
        user_message("u3", "c1-r", "or rather"),
        *bash_turn("c3", "u3", 'git commit -am "Try another way"', out3),
    ]
    header = {**HEADER, "id": "prov-1", "cwd": str(repo)}
    data = "".join(json.dumps(v) + "\n" for v in [header, *entries]).encode()
    session = services.import_jsonl(actor=ada, data=data, filename="s.jsonl").session
    return {"ada": ada, "session": session, "shas": (sha1, sha2, sha3), "outputs": (out1, out2, out3)}


def as_user(account: Any) -> APIClient:
    client = APIClient()
    client.force_authenticate(user=account)
    return client


def test_an_imported_git_commit_is_linked_to_the_bash_result_that_made_it(world: dict[str, Any]) -> None:
    sha1, sha2, _ = world["shas"]
    assert "(root-commit)" in world["outputs"][0]  # git's own first-commit line
    answer = as_user(world["ada"]).get("/api/provenance/", {"commit": sha1})
    assert answer.status_code == 200, answer.content
    [found] = answer.json()["sessions"]
    assert found["id"] == world["session"].pk and found["url"] == f"/sessions/{world['session'].pk}/"
    assert [(e["entryId"], e["subject"]) for e in found["entries"]] == [("c1-r", "First import")]
    # Seven hex digits find it too, and so does the abbreviation git printed.
    assert (
        as_user(world["ada"])
        .get("/api/provenance/", {"commit": sha2[:7]})
        .json()["sessions"][0]["entries"][0]["entryId"]
        == "c2-r"
    )
    assert as_user(world["ada"]).get("/api/provenance/", {"commit": "not-hex"}).status_code == 400


def test_a_caller_who_cannot_read_the_session_learns_nothing(
    world: dict[str, Any], user: Callable[..., Any]
) -> None:
    eve_user = user("eve")
    eve = as_user(eve_user)
    sha1 = world["shas"][0]
    known = eve.get("/api/provenance/", {"commit": sha1})
    unknown = eve.get("/api/provenance/", {"commit": "0123456789abcdef0123456789abcdef01234567"})
    assert (known.status_code, known.content) == (unknown.status_code, unknown.content)
    assert known.json() == {"sessions": []}
    pr = eve.get("/api/provenance/", {"pr": "https://github.com/acme/widgets/pull/42"})
    other_pr = eve.get("/api/provenance/", {"pr": "https://github.com/acme/widgets/pull/43"})
    assert (pr.status_code, pr.content) == (other_pr.status_code, other_pr.content)
    # Nor through her session list.
    page = Client()
    page.force_login(eve_user)
    assert f"/sessions/{world['session'].pk}/" not in page.get("/", {"q": sha1}).content.decode()
    # Nor by the session's own commit list.
    assert eve.get(f"/api/sessions/{world['session'].pk}/commits/").status_code == 404
    # Once the session is shared with her team, the same question finds it.
    team = team_services.create_team(actor=world["ada"], name="widgets")
    TeamMembership.objects.create(team=team, user=eve_user, role=TeamMembership.Role.VIEWER)
    services.share_with_team(session=world["session"], team=team, access="viewer", actor=world["ada"])
    [found] = eve.get("/api/provenance/", {"commit": sha1}).json()["sessions"]
    assert found["id"] == world["session"].pk


def test_a_pull_request_url_finds_its_session_in_any_spelling(world: dict[str, Any]) -> None:
    ada = as_user(world["ada"])
    for url in (
        "https://github.com/Acme/Widgets/pull/42",
        "http://www.github.com/acme/widgets/pull/42/files",
    ):
        [found] = ada.get("/api/provenance/", {"pr": url}).json()["sessions"]
        assert [e["entryId"] for e in found["entries"]] == ["c4-r"]
    assert ada.get("/api/provenance/", {"pr": "https://github.com/acme/widgets/pull/7"}).json() == {
        "sessions": []
    }


def test_a_branch_shows_only_its_commits_and_a_path_link_only_what_it_shows(world: dict[str, Any]) -> None:
    sha1, sha2, sha3 = world["shas"]
    session = world["session"]
    ada = as_user(world["ada"])
    every = ada.get(f"/api/sessions/{session.pk}/commits/").json()["commits"]
    assert [c["sha"][:7] for c in every] == [sha1[:7], sha2[:7], sha3[:7]]
    listed = ada.get(f"/api/sessions/{session.pk}/commits/").json()["pullRequests"]
    assert [(p["url"], p["normalized"], p["entryId"]) for p in listed] == [
        ("https://github.com/acme/widgets/pull/42", True, "c4-r"),
        (OFFER, False, "c4-r"),  # the address git push offered, kept as printed
    ]
    one = ada.get(f"/api/sessions/{session.pk}/commits/", {"entry": "c2-r"}).json()["commits"]
    assert [c["subject"] for c in one] == ["Fix the parser"]
    branch = ada.get(f"/api/sessions/{session.pk}/commits/", {"leaf": "c3-r"}).json()["commits"]
    assert [(c["subject"], c["entryId"]) for c in branch] == [
        ("First import", "c1-r"),
        ("Try another way", "c3-r"),
    ]
    link = services.create_share_link(session=session, actor=world["ada"], scope="path", entry_id="c2-r")
    visitor = APIClient()
    seen = visitor.get(f"/api/sessions/{session.pk}/commits/", HTTP_X_SHARE_TOKEN=link.raw_token).json()
    assert [c["subject"] for c in seen["commits"]] == ["First import", "Fix the parser"]
    assert seen["workspace"] is None


def test_the_search_box_and_the_session_page_show_commits(world: dict[str, Any]) -> None:
    sha1, sha2, _ = world["shas"]
    session = world["session"]
    page = Client()
    page.force_login(world["ada"])
    mark = f'href="/sessions/{session.pk}/"'
    for params in (
        {"q": sha1},  # a pasted full SHA
        {"q": f"commit:{sha2[:8]}"},
        {"commit": sha2[:7]},
        {"q": "https://github.com/Acme/Widgets/pull/42"},  # a pasted PR URL
        {"q": "pr:https://github.com/acme/widgets/pull/42"},
    ):
        assert mark in page.get("/", params).content.decode(), params
    assert mark not in page.get("/", {"q": "commit:" + "f" * 40}).content.decode()
    assert f'href="/sessions/{session.pk}/#commits"' in page.get("/").content.decode()  # "3 commits"
    assert "3 commits" in page.get("/").content.decode()
    html = page.get(f"/sessions/{session.pk}/").content.decode()
    assert "Commits" in html and "Fix the parser" in html
    assert f"?commit={sha1[:7]}#entry=c1-r" in html
    assert 'href="https://github.com/acme/widgets/pull/42"' in html
    assert OFFER in html and f'href="{OFFER}"' not in html


def test_a_bash_result_appended_later_is_linked_too(world: dict[str, Any], repo: Path) -> None:
    out, sha = commit(repo, "d.txt", "Add the docs")
    session = ChatSession.objects.get(pk=world["session"].pk)
    services.append_entries(
        session=session, entries=bash_turn("c5", "c3-r", "git commit -am docs", out), actor=world["ada"]
    )
    row = Commit.objects.get(session=session, sha=sha[:7])
    assert (row.entry_id, row.subject, row.found) == ("c5-r", "Add the docs", "output")


def test_a_push_records_the_workspace_without_credentials(api_client: APIClient, repo: Path) -> None:
    commit(repo, "a.txt", "First")
    head = git(repo, "rev-parse", "HEAD").strip()
    header = json.dumps({**HEADER, "id": "prov-sync", "cwd": str(repo)})
    first = user_message("u1", None, "hi")
    body = {
        "header": header,
        "from": {"lines": 0, "bytes": 0, "lastId": None},
        "to": {"lines": 1, "bytes": 0},
        "lines": [json.dumps(first)],
        "workspace": {
            "repository": "https://ada:ghp_token@github.com/acme/widgets.git",
            "branch": "main",
            "head": head,
        },
    }
    answer = api_client.post("/api/sync/", body, format="json")
    assert answer.status_code == 200, answer.content
    session = ChatSession.objects.get(pi_id="prov-sync")
    shown = api_client.get(f"/api/sessions/{session.pk}/commits/").json()["workspace"]
    assert shown["repository"] == "https://github.com/acme/widgets.git"
    assert (shown["branch"], shown["head"], shown["source"]) == ("main", head, "sync")
    # An old client sends no workspace: the push works as before.
    old = {**body, "from": {"lines": 1, "bytes": 0, "lastId": "u1"}, "to": {"lines": 2, "bytes": 0}}
    old.pop("workspace")
    old["lines"] = [json.dumps(user_message("u2", "u1", "again"))]
    assert api_client.post("/api/sync/", old, format="json").status_code == 200
    assert WorkspaceState.objects.filter(session=session).count() == 1


def test_reconcile_links_the_commits_of_sessions_stored_before(world: dict[str, Any]) -> None:
    from django.core.management import call_command

    session = world["session"]
    Commit.objects.filter(session=session).delete()
    call_command("reconcile", stdout=StringIO())
    linked = Commit.objects.filter(session=session).order_by("seq").values_list("entry_id", flat=True)
    assert list(linked) == ["c1-r", "c2-r", "c3-r"]
    call_command("reconcile", stdout=StringIO())  # again: nothing twice
    assert Commit.objects.filter(session=session).count() == 3


def test_hostile_values_are_refused_not_failed_on(world: dict[str, Any]) -> None:
    ada = as_user(world["ada"])
    pk = world["session"].pk
    for params in ({"pr": "https://x/\x00"}, {"commit": "abc\x00def"}, {"pr": "x" * 600}, {}):
        assert ada.get("/api/provenance/", params).status_code == 400, params
    assert ada.get(f"/api/sessions/{pk}/commits/", {"leaf": "a\x00b"}).status_code in (400, 404)
    assert ada.get(f"/api/sessions/{pk}/commits/", {"leaf": "nope"}).status_code == 404
    page = Client()
    page.force_login(world["ada"])
    for params in ({"pr": "https://x/\x00"}, {"q": "pr:\x00"}, {"commit": "xyz"}):
        assert page.get("/", params).status_code < 500, params
    assert "commit: A commit is 7 to 40 hex digits" in page.get("/", {"commit": "xyz"}).content.decode()


def test_a_workspace_piweb_cannot_keep_never_fails_its_push(api_client: APIClient) -> None:
    header = json.dumps({**HEADER, "id": "prov-odd"})
    body = {
        "header": header,
        "from": {"lines": 0, "bytes": 0, "lastId": None},
        "to": {"lines": 1, "bytes": 0},
        "lines": [json.dumps(user_message("u1", None, "hi"))],
        # A SHA-256 repository's HEAD and a branch name holding a control character.
        "workspace": {"repository": "https://example.org/r.git", "branch": "a\x01b", "head": "ab" * 32},
    }
    answer = api_client.post("/api/sync/", body, format="json")
    assert answer.status_code == 200, answer.content
    session = ChatSession.objects.get(pi_id="prov-odd")
    seen = WorkspaceState.objects.get(session=session)
    assert (seen.repository, seen.branch, seen.head) == ("https://example.org/r.git", "", "")
