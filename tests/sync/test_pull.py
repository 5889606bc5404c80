"""``piweb-sync pull`` writes sessions where Pi finds them, ending at the node the user continues from."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sessions_app import services
from sessions_app.models import ApiToken, ChatSession

from .helpers import Cli, append, chain, header, write

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def setup(live_server: Any, user: Callable[..., Any], tmp_path: Path) -> tuple[Any, Cli, Path]:
    owner = user()
    cli = Cli(live_server.url, ApiToken.objects.create(user=owner)[1], tmp_path)
    return owner, cli, tmp_path / "agent" / "sessions"


def _import(owner: Any, lines: list[str]) -> ChatSession:
    return services.import_jsonl(actor=owner, data="".join(line + "\n" for line in lines).encode()).session


def test_pull_writes_pis_layout_and_name_and_push_sends_only_what_pi_adds(setup: Any) -> None:
    owner, cli, sessions = setup
    source = _import(owner, [header(cwd="/home/me/project"), *chain(4)])
    fork = services.fork_session(session=source, entry_id="e1", actor=owner, position="at").session
    code, out, _ = cli("pull", str(fork.pk))
    assert code == 0
    path = Path(out.strip())
    assert path.parent == sessions / "--home-me-project--"
    stamp = fork.pi_timestamp.replace(":", "-").replace(".", "-")
    assert path.name == f"{stamp}_{fork.pi_id}.jsonl"
    assert path.read_bytes() == b"".join(services.export_jsonl(fork))

    # Pi continues the pulled fork; push follows the whole folder and sends just the new lines.
    last = json.loads(path.read_text().splitlines()[-1])["id"]
    append(
        path,
        [
            json.dumps(
                {
                    "type": "label",
                    "id": "n1",
                    "parentId": last,
                    "timestamp": "x",
                    "targetId": last,
                    "label": "mine",
                }
            )
        ],
    )
    code, _, err = cli("push", "--once", "-v")
    assert code == 0 and "1 new line(s) stored, 0 already there" in err
    assert b"".join(services.export_jsonl(fork)) == path.read_bytes()


def test_pull_at_a_node_ends_the_file_there_and_twice_gives_the_same_file(setup: Any, tmp_path: Path) -> None:
    owner, cli, _ = setup
    session = _import(owner, [header(), *chain(5)])
    code, out, _ = cli("pull", str(session.pk), "--at", "e2", "--dir", str(tmp_path / "flat"))
    assert code == 0
    path = Path(out.strip())
    assert path.parent == tmp_path / "flat"
    lines = path.read_text().splitlines()
    marker = json.loads(lines[-1])
    assert marker["type"] == "custom" and marker["parentId"] == "e2"
    assert lines[:-1] == b"".join(services.export_jsonl(session)).decode().splitlines()
    first = path.read_bytes()
    code, _, err = cli("pull", "-v", str(session.pk), "--at", "e2", "--dir", str(tmp_path / "flat"))
    assert code == 0 and path.read_bytes() == first
    # Neither the file nor the session changed: the server answered 304 and nothing was sent again.
    assert "is current" in err

    # Once the session changes, the same pull downloads and merges again.
    services.set_label(session=session, actor=owner, target_id="e1", label="later")
    code, _, err = cli("pull", "-v", str(session.pk), "--at", "e2", "--dir", str(tmp_path / "flat"))
    assert code == 0 and "is current" not in err
    assert '"label":"later"' in path.read_text()

    code, _, err = cli("pull", str(session.pk), "--at", "nope")
    assert code == 1 and "Entry nope not found" in err


def test_pull_merges_web_entries_into_the_users_own_file(setup: Any) -> None:
    owner, cli, sessions = setup
    local = sessions / "--w--" / "2026-03-01T10-00-00-000Z_sync-demo.jsonl"
    write(local, [header(), *chain(3)])
    assert cli("push", "--once")[0] == 0
    append(local, chain(1, start=3))  # Pi went on; not pushed yet
    session = ChatSession.objects.get(owner=owner, pi_id="sync-demo")
    services.set_label(session=session, actor=session.owner, target_id="e0", label="from the web")
    code, out, _ = cli("pull", "sync-demo")
    assert code == 0 and Path(out.strip()) == local
    text = local.read_text().splitlines()
    assert '"label":"from the web"' in text[-1] and len(text) == 6
    # Pi's unpushed line still goes up; the merged label is recognised, not stored twice.
    code, _, err = cli("push", "--once", "-v")
    assert "1 new line(s) stored, 1 already there" in err
    assert sorted(b"".join(services.export_jsonl(session)).decode().splitlines()) == sorted(text)
