"""Sync by identity with the real Pi CLI and the real client: two machines, a migrated file, lost state,
pull at the leaf, and leaf markers that are never stored.

Each machine is its own Pi agent folder and its own client state against one live server; Pi writes
every session line itself, and Pi loads what the server exports.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from piweb_sync.config import pi_session_subdir

from actionlog.models import ActionLog
from providers.llm import testserver as script
from providers.llm.testserver import ProviderServer
from sessions_app import services
from sessions_app.models import ApiToken, ChatSession, Entry
from tests.e2e.pi import PiHome, file_lines, pi_installed, prompt_text

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not pi_installed(), reason="Pi is not installed: run `npm ci --prefix bench`"),
]


@pytest.fixture
def provider() -> Iterator[ProviderServer]:
    server = ProviderServer().start()
    yield server
    server.stop()


@pytest.fixture
def machines(
    live_server: Any, user: Callable[..., Any], tmp_path: Path, provider: ProviderServer
) -> tuple[Any, Callable[[str], PiHome]]:
    owner = user()
    token = ApiToken.objects.create(user=owner)[1]

    def machine(name: str) -> PiHome:
        return PiHome(tmp_path / name, provider.url, live_server.url, token)

    return owner, machine


def _ok(done: Any) -> str:
    assert done.returncode == 0, done.stderr
    return done.stdout + done.stderr


def _entries(lines: list[str]) -> list[dict[str, Any]]:
    return [json.loads(line) for line in lines]


def _stored(session: ChatSession) -> list[dict[str, Any]]:
    rows = Entry.objects.filter(session=session).order_by("seq").values_list("raw", flat=True)
    return [json.loads(raw) for raw in rows]


def _session(owner: Any, local: Path) -> ChatSession:
    pi_id = json.loads(local.read_text().splitlines()[0])["id"]
    return ChatSession.objects.get(owner=owner, pi_id=pi_id)


def _turns(home: PiHome, provider: ProviderServer, prompts: list[str], *, file: Path | None = None) -> Path:
    """Pi works one turn per prompt (continuing ``file``, or a new session then ``-c``)."""
    for index, prompt in enumerate(prompts):
        provider.enqueue(script.reply(f"answer to {prompt}"))
        if file is not None:
            home.pi("--session", str(file), "-p", prompt)
        else:
            home.pi(*(["-c"] if index else []), "-p", prompt)
    return file or home.files()[0]


def _context_texts(home: PiHome, provider: ProviderServer, file: Path, prompt: str) -> list[str]:
    """Continue ``file`` in Pi and return the texts of the messages Pi sent (its context at the resume)."""
    provider.enqueue(script.reply("ok"))
    home.pi("--session", str(file), "-p", prompt)
    body = provider.requests[-1].body
    assert prompt_text(body) == prompt
    texts = []
    for message in body["messages"][:-1]:
        content = message.get("content")
        texts.append(
            content if isinstance(content, str) else "".join(p.get("text", "") for p in content or [])
        )
    return texts


def test_two_machines_that_diverged_keep_both_tails_each_under_its_parent(
    machines: Any, provider: ProviderServer, tmp_path: Path
) -> None:
    owner, machine = machines
    a, b = machine("a"), machine("b")
    local_a = _turns(a, provider, [f"shared {i}" for i in range(3)])
    local_b = b.sessions / local_a.relative_to(a.sessions)
    local_b.parent.mkdir(parents=True)
    shutil.copy(local_a, local_b)  # both machines hold the same lines, both pushed them
    _ok(a.sync("push", "--once"))
    assert "0 line(s) stored" in _ok(b.sync("push", "--once", "-v"))
    shared = file_lines(local_a)

    _turns(a, provider, ["only on a"], file=local_a)
    _turns(b, provider, ["only on b"], file=local_b)
    tail_a, tail_b = file_lines(local_a)[len(shared) :], file_lines(local_b)[len(shared) :]
    assert tail_a and tail_b and set(tail_a).isdisjoint(tail_b)
    _ok(a.sync("push", "--once"))
    out = _ok(b.sync("push", "--once", "-v"))
    assert f"{len(tail_b)} new line(s) stored" in out

    session = _session(owner, local_a)
    stored = [json.dumps(e) for e in _stored(session)]
    for line in [*shared, *tail_a, *tail_b]:
        assert stored.count(json.dumps(json.loads(line))) == 1  # every line once, none dropped
    by_id = {e["id"]: e for e in _stored(session)}
    last_shared = json.loads(shared[-1])["id"]
    assert by_id[json.loads(tail_a[0])["id"]]["parentId"] == last_shared
    assert by_id[json.loads(tail_b[0])["id"]]["parentId"] == last_shared
    session.refresh_from_db()
    assert session.leaf_entry_id == json.loads(tail_b[-1])["id"]  # the leaf follows the last push
    assert _ok(b.sync("status")).startswith("synced")

    # Pi loads the server's file and resumes at its leaf: the shared history, then B's tail only.
    c = machine("c")
    pulled = Path(_ok(c.sync("pull", str(session.pk), "--dir", str(tmp_path / "c-files"))).strip())
    texts = _context_texts(c, provider, pulled, "on c")
    assert "only on b" in texts and "only on a" not in texts and "shared 0" in texts


def test_a_file_pi_migrated_and_rewrote_stores_nothing_twice(
    machines: Any, provider: ProviderServer, tmp_path: Path
) -> None:
    owner, machine = machines
    a = machine("a")
    old = a.sessions / pi_session_subdir(str(a.work)) / "2026-03-01T10-00-00-000Z_old-one.jsonl"
    old.parent.mkdir(parents=True)
    v1 = [
        {"type": "session", "id": "old-one", "timestamp": "2026-03-01T10:00:00.000Z", "cwd": str(a.work)},
        {"type": "message", "timestamp": "2026-03-01T10:00:01.000Z",
         "message": {"role": "user", "content": "the old question", "timestamp": 1}},
        {"type": "message", "timestamp": "2026-03-01T10:00:02.000Z",
         "message": {"role": "assistant", "content": [{"type": "text", "text": "the old answer"}],
                     "api": "openai-completions", "provider": "fake", "model": "fake-model",
                     "usage": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2,
                               "cost": {"input": 0, "output": 0, "total": 0}},
                     "stopReason": "stop", "timestamp": 2}},
    ]  # fmt: skip
    old.write_text("".join(json.dumps(v) + "\n" for v in v1))
    _ok(a.sync("push", "--once"))
    session = ChatSession.objects.get(owner=owner, pi_id="old-one")
    assert len(_stored(session)) == 2

    _turns(a, provider, ["a new question"], file=old)  # Pi migrates the file (new ids), then appends
    lines = file_lines(old)
    assert json.loads(old.read_text().splitlines()[0])["version"] == 3
    _ok(a.sync("push", "--once"))
    stored = _stored(session)
    assert len(stored) == len(lines)  # as many entries as Pi has: nothing stored twice
    assert sum(1 for e in stored if e.get("type") == "message" and e["message"]["role"] == "user") == 2
    parents = {e["id"] for e in stored}
    assert [e for e in stored if e["parentId"] is not None and e["parentId"] not in parents] == []
    session.refresh_from_db()
    assert session.leaf_entry_id == json.loads(lines[-1])["id"]
    assert _ok(a.sync("status")).startswith("synced")
    before = old.read_bytes()
    pulled = Path(_ok(a.sync("pull", "old-one")).strip().splitlines()[-1])
    assert pulled == old and old.read_bytes() == before  # the server's ids for the old lines are known

    # Pi loads the server's file: one tree, the old exchange still in the context at the leaf.
    pulled = Path(_ok(a.sync("pull", str(session.pk), "--dir", str(tmp_path / "elsewhere"))).strip())
    texts = _context_texts(a, provider, pulled, "again")
    assert "the old question" in texts and "a new question" in texts


def test_status_says_synced_after_lost_state_when_nothing_is_new(
    machines: Any, provider: ProviderServer
) -> None:
    _, machine = machines
    a = machine("a")
    local = _turns(a, provider, ["one", "two"])
    _ok(a.sync("push", "--once"))
    for state in (a.root / "state").rglob("state.json"):
        state.unlink()
    assert _ok(a.sync("status")).startswith("synced")
    assert "new line" not in _ok(a.sync("push", "--once", "-v"))
    assert _ok(a.sync("status")).startswith("synced")
    _turns(a, provider, ["three"], file=local)
    assert _ok(a.sync("status")).startswith("behind")


def test_a_plain_pull_resumes_at_the_servers_leaf(machines: Any, provider: ProviderServer) -> None:
    owner, machine = machines
    a = machine("a")
    local = _turns(a, provider, ["one"])
    _ok(a.sync("push", "--once"))
    session = _session(owner, local)
    branch_point = session.leaf_entry_id
    # Pi goes on while the team runs a turn in piweb from the same node: two branches.
    _turns(a, provider, ["two on pi"], file=local)
    services.append_entries(
        session=session,
        actor=owner,
        entries=[
            {"type": "message", "parentId": branch_point, "timestamp": "2026-03-01T10:00:09.000Z",
             "message": {"role": "user", "content": [{"type": "text", "text": "asked on the web"}],
                         "timestamp": 9}},
        ],
    )  # fmt: skip
    _ok(a.sync("push", "--once"))  # the leaf follows the push: Pi's last line, not the web's
    session.refresh_from_db()
    assert session.leaf_entry_id == json.loads(file_lines(local)[-1])["id"]

    _ok(a.sync("pull", session.pi_id))  # the web's line lands last in the file, so a marker follows it
    marker = _entries(file_lines(local))[-1]
    assert marker["customType"] == "piweb.leaf" and marker["parentId"] == session.leaf_entry_id
    texts = _context_texts(a, provider, local, "three")
    assert "two on pi" in texts and "asked on the web" not in texts


def test_leaf_markers_are_never_stored_and_pis_next_lines_hang_under_the_node(
    machines: Any, provider: ProviderServer
) -> None:
    owner, machine = machines
    a = machine("a")
    local = _turns(a, provider, ["one", "two"])
    _ok(a.sync("push", "--once"))
    session = _session(owner, local)
    count = len(_stored(session))
    earlier = _entries(file_lines(local))[-3]["id"]  # the first answer
    _ok(a.sync("pull", session.pi_id, "--at", earlier))
    marker = _entries(file_lines(local))[-1]
    assert marker["customType"] == "piweb.leaf"
    _ok(a.sync("push", "--once"))
    texts = _context_texts(a, provider, local, "from the first answer")
    assert "two" not in texts and "answer to one" in texts
    out = _ok(a.sync("push", "--once", "-v"))
    assert "conflict" not in out
    stored = _stored(session)
    assert [e for e in stored if e.get("customType") == "piweb.leaf"] == []
    new = stored[count:]
    assert new and all(e["id"] != marker["id"] for e in new)
    assert new[0]["parentId"] == earlier  # under the node the marker pointed at
    session.refresh_from_db()
    assert session.leaf_entry_id == new[-1]["id"]
    assert _ok(a.sync("status")).startswith("synced")
    rows = ActionLog.objects.filter(session=session, action="sync")
    assert rows.count() >= 3 and rows.order_by("-pk").first().detail["lines"] == len(new)  # type: ignore[union-attr]
