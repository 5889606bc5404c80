"""A round trip with the real Pi CLI: Pi works, piweb follows, the team edits, Pi continues both branches.

Every request Pi sends must equal what piweb builds for the same leaf: system prompt, messages, tools.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from compaction_app.services import compact_session
from compaction_app.summarizers import OfflineSummarizer
from providers.llm import testserver as script
from providers.llm.testserver import ProviderServer
from sessions_app import services
from sessions_app.models import ApiToken, ChatSession
from tests.procs import wait_until

from .pi import PiHome, file_lines, pi_installed, piweb_request, prompt_text, stored_lines

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.slow,
    pytest.mark.skipif(not pi_installed(), reason="Pi is not installed: run `npm ci --prefix bench`"),
]


def _entries(lines: list[str]) -> list[dict[str, Any]]:
    return [json.loads(line) for line in lines]


def _text(entry: dict[str, Any]) -> str:
    content = entry["message"]["content"]
    return content if isinstance(content, str) else "".join(b.get("text", "") for b in content)


def _by_text(lines: list[str], role: str, start: str) -> dict[str, Any]:
    return next(
        e
        for e in _entries(lines)
        if e.get("type") == "message" and e["message"]["role"] == role and _text(e).startswith(start)
    )


def _contained_in_order(local: list[str], stored: list[str]) -> bool:
    """Every local line is stored, in the file's order (web entries may sit between them)."""
    position = 0
    for line in local:
        try:
            position = stored.index(line, position) + 1
        except ValueError:
            return False
    return True


def _check_request(body: dict[str, Any], session: ChatSession) -> str:
    """Pi's request equals piweb's context at the prompt's parent; return that leaf."""
    prompt = prompt_text(body)
    user = _by_text(stored_lines(session), "user", prompt)
    expected = piweb_request(session, user["parentId"])
    assert body["messages"][:-1] == expected["messages"], f"request for {prompt[:20]!r} differs"
    assert body.get("tools") == expected.get("tools")
    return user["parentId"]


def test_round_trip_with_pi(
    live_server: Any, user: Callable[..., Any], tmp_path: Path, settings: Any
) -> None:
    settings.PIWEB_COMPACTION = {"keepRecentTokens": 300}  # so the short fork has something to compact
    owner = user()
    token = ApiToken.objects.create(user=owner)[1]
    provider = ProviderServer().start()
    home = PiHome(tmp_path, provider.url, live_server.url, token)
    try:
        # Pi works for four turns; the third reports a nearly full window, so Pi compacts by itself.
        provider.enqueue(
            script.reply("one " + "alpha " * 250),
            script.reply("two " + "beta " * 250),
            script.reply("three " + "gamma " * 250, usage={"input": 3500}),
            script.reply("## Goal\nShip the feature.\n\n## Progress\nThree turns done."),
            script.reply("four"),
        )
        home.start_push()
        home.pi("-p", "first " + "word " * 250)
        for prompt in ("second", "third", "fourth"):
            home.pi("-c", "-p", prompt)
        [local] = home.files()
        assert local.parent.name == "--" + str(home.work).lstrip("/").replace("/", "-") + "--"
        assert "compaction" in [e["type"] for e in _entries(file_lines(local))]

        pi_id = json.loads(local.read_text().splitlines()[0])["id"]
        wait_until(lambda: ChatSession.objects.filter(owner=owner, pi_id=pi_id).exists(), 30, "the session")
        session = ChatSession.objects.get(owner=owner, pi_id=pi_id)
        wait_until(lambda: stored_lines(session) == file_lines(local), 30, "push to follow Pi")
        checked = [
            _check_request(r.body, session) for r in provider.requests if "# Conversation" not in str(r.body)
        ]
        assert len(checked) == 4

        # The team labels, forks, compacts the fork and moves the original's leaf, all in piweb.
        lines = file_lines(local)
        one = _by_text(lines, "assistant", "one ")["id"]
        two = _by_text(lines, "assistant", "two ")["id"]
        services.set_label(session=session, actor=session.owner, target_id=one, label="good point")
        fork = services.fork_session(session=session, entry_id=two, actor=owner, position="at").session
        header = json.loads(b"".join(services.export_jsonl(fork)).decode().splitlines()[0])
        assert header["parentSession"] == str(local.resolve())  # Pi's form: the source file's path
        outcome = compact_session(
            session=fork, actor=fork.owner, reason="manual", summarizer=OfflineSummarizer()
        )
        assert outcome.entry_id is not None
        services.navigate_without_summary(session=session, actor=session.owner, target_id=one)

        # Pi continues the original: sync keeps going past the web's entries.
        provider.enqueue(script.reply("five"))
        home.pi("--session", str(local), "-p", "fifth")
        wait_until(
            lambda: _contained_in_order(file_lines(local), stored_lines(session)), 30, "sync after edits"
        )
        assert (
            _check_request(provider.requests[-1].body, session) == _by_text(lines, "assistant", "four")["id"]
        )

        # The fork comes home: pulled into Pi's folder for its cwd, continued there, followed back.
        pulled = home.sync("pull", str(fork.pk))
        assert pulled.returncode == 0, pulled.stderr
        fork_file = Path(pulled.stdout.strip())
        assert fork_file.parent == local.parent
        fork.refresh_from_db()
        provider.enqueue(script.reply("six"))
        home.pi("--session", str(fork_file), "-p", "sixth")
        wait_until(lambda: stored_lines(fork) == file_lines(fork_file), 30, "push to follow the fork")
        assert _check_request(provider.requests[-1].body, fork) == fork.leaf_entry_id  # at the compaction

        # A leaf moved in piweb without a new entry survives the trip: Pi resumes where piweb stands.
        session.refresh_from_db()  # push moved the leaf to Pi's last line
        services.navigate_without_summary(session=session, actor=session.owner, target_id=one)
        pulled = home.sync("pull", pi_id)
        assert pulled.returncode == 0 and Path(pulled.stdout.strip()) == local, pulled.stderr
        provider.enqueue(script.reply("seven"))
        home.pi("--session", str(local), "-p", "seventh")

        # The merged web lines sit in another order locally; every line is stored exactly once, but the
        # leaf marker: the client's own bookkeeping, never stored. Pi's next line hangs under its node.
        def local_ids() -> set[str]:
            return {e["id"] for e in _entries(file_lines(local)) if e.get("customType") != "piweb.leaf"}

        def stored_ids() -> set[str]:
            return {e["id"] for e in _entries(stored_lines(session))}

        wait_until(lambda: local_ids() <= stored_ids(), 30, "the last push")
        assert len(stored_lines(session)) == len(set(stored_lines(session)))
        assert [e for e in _entries(stored_lines(session)) if e.get("customType") == "piweb.leaf"] == []
        body = provider.requests[-1].body
        assert _check_request(body, session) == one  # stored under the marker's node
        assert body["messages"][:-1] == piweb_request(session, one)["messages"]
        marker = _entries(file_lines(local))[-3]  # the marker, then Pi's two lines
        assert marker["customType"] == "piweb.leaf" and marker["parentId"] == one
        assert [line.split()[0] for line in home.sync("status").stdout.splitlines()] == ["synced", "synced"]
    finally:
        errors = home.stop_push()
        provider.stop()
    assert "conflict" not in errors and "error" not in errors, errors
