"""``piweb-sync push`` follows local files into a live server: nothing missed or twice, each file alone."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from sessions_app import services
from sessions_app.models import ApiToken, ChatSession

from .helpers import Cli, append, chain, entry, header, write

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def setup(live_server: Any, user: Callable[..., Any], tmp_path: Path) -> tuple[Any, Cli, Path]:
    owner = user()
    token = ApiToken.objects.create(user=owner)[1]
    cli = Cli(live_server.url, token, tmp_path)
    sessions = tmp_path / "agent" / "sessions"
    sessions.mkdir(parents=True)
    return owner, cli, sessions


def _stored_lines(owner: Any, pi_id: str = "sync-demo") -> list[str]:
    session = ChatSession.objects.get(owner=owner, pi_id=pi_id)
    return b"".join(services.export_jsonl(session)).decode().splitlines()


def test_follows_a_growing_file_across_a_torn_line_and_a_restart(setup: Any) -> None:
    owner, cli, sessions = setup
    file = sessions / "--w--" / "2026-03-01T10-00-00-000Z_sync-demo.jsonl"
    write(file, [header(), *chain(5)])
    assert cli("push", "--once") == (0, "", "")  # quiet by default
    assert _stored_lines(owner) == file.read_text().splitlines()

    torn = entry(5, "e4")
    with file.open("a", encoding="utf-8") as handle:
        handle.write(torn[:20])  # Pi is mid-write: the torn line waits for the next pass
    code, _, err = cli("push", "--once", "-v")
    assert code == 0 and "new line" not in err
    with file.open("a", encoding="utf-8") as handle:
        handle.write(torn[20:] + "\n" + entry(6, "e5") + "\n")

    code, _, err = cli("push", "--once", "-v")  # a new process: only the state file remembers
    assert code == 0 and "2 new line(s) stored, 0 already there" in err
    code, _, err = cli("push", "--once", "-v")
    assert "new line" not in err  # nothing resent
    assert _stored_lines(owner) == file.read_text().splitlines()


def test_web_edits_never_block_pis_next_lines(setup: Any, live_server: Any) -> None:
    owner, cli, sessions = setup
    file = sessions / "s.jsonl"
    write(file, [header(), *chain(4)])
    assert cli("push", "--once")[0] == 0
    session = ChatSession.objects.get(owner=owner, pi_id="sync-demo")
    # The team labels, renames and moves the leaf: the server's tail is no longer Pi's last line.
    services.set_label(session=session, actor=session.owner, target_id="e1", label="checkpoint")
    services.rename_session(session=session, actor=session.owner, name="From the web")
    services.set_leaf(session=session, actor=session.owner, entry_id="e1")
    append(file, chain(3, start=4))
    assert cli("push", "--once") == (0, "", "")
    stored = _stored_lines(owner)
    assert [line for line in stored if '"type":"message"' in line] == file.read_text().splitlines()[1:]
    assert len(stored) == len(file.read_text().splitlines()) + 2  # plus the label and the name
    session.refresh_from_db()
    assert session.leaf_entry_id == "e6"  # live sync follows Pi's leaf


def test_lost_state_resumes_at_the_servers_cursor(setup: Any, tmp_path: Path) -> None:
    owner, cli, sessions = setup
    file = sessions / "s.jsonl"
    write(file, [header(), *chain(3)])
    assert cli("push", "--once")[0] == 0
    append(file, chain(1, start=3))
    for state in (tmp_path / "state").rglob("state.json"):
        state.unlink()
    code, _, err = cli("push", "--once", "-v")
    assert code == 0
    assert "resuming at line 3" in err and "1 new line(s) stored, 0 already there" in err
    assert _stored_lines(owner) == file.read_text().splitlines()


def test_a_server_that_lost_the_session_gets_it_whole_again(setup: Any) -> None:
    owner, cli, sessions = setup
    file = sessions / "s.jsonl"
    write(file, [header(), *chain(3)])
    assert cli("push", "--once")[0] == 0
    ChatSession.objects.filter(owner=owner).delete()
    append(file, chain(1, start=3))
    assert cli("push", "--once")[0] == 0
    assert _stored_lines(owner) == file.read_text().splitlines()


def test_v2_files_conflicts_and_garbage_each_fail_alone(setup: Any) -> None:
    owner, cli, sessions = setup
    folder = sessions / "--w--"
    # Sorted first, so a file that stopped the pass would keep the good ones out.
    write(folder / "a-conflict.jsonl", [header("clash"), *chain(2, prefix="c")])
    write(folder / "b-garbage.jsonl", ['{"type":"message","id":"x"}', "nothing here"])
    hook = json.dumps(
        {
            "type": "message",
            "id": "h1",
            "parentId": "v0",
            "timestamp": "2026-03-01T10:00:02Z",
            "message": {"role": "hookMessage", "customType": "x", "content": "hi", "display": True},
        },
        separators=(",", ":"),
    )
    write(folder / "c-old.jsonl", [header("old-v2", version=2), entry(0, None, prefix="v"), hook])
    write(folder / "d-good.jsonl", [header("good"), *chain(3, prefix="g")])
    # The server already holds c1 with other bytes (an earlier, edited copy was imported): a real conflict.
    edited = [header("clash"), entry(0, None, prefix="c"), entry(1, "c0", prefix="c", text="edited")]
    services.import_jsonl(actor=owner, data="".join(line + "\n" for line in edited).encode())

    code, out, err = cli("push", "--once")
    assert code == 1  # something needs the user's attention; the rest went through
    assert "conflict: entry c1 is stored on the server with different content" in err
    assert "b-garbage.jsonl: error: not a Pi session file" in err
    assert _stored_lines(owner, "good") == (folder / "d-good.jsonl").read_text().splitlines()
    migrated = _stored_lines(owner, "old-v2")
    assert json.loads(migrated[0])["version"] == 3  # migrated as import (and Pi) migrate it
    assert json.loads(migrated[2])["message"]["role"] == "custom"

    code, out, _ = cli("status")
    lines = {Path(line.split()[1]).name: line for line in out.splitlines()}
    assert lines["a-conflict.jsonl"].startswith("conflict") and "entry c1" in lines["a-conflict.jsonl"]
    assert lines["b-garbage.jsonl"].startswith("error")
    assert lines["c-old.jsonl"].startswith("synced")
    assert lines["d-good.jsonl"].startswith("synced")

    append(folder / "d-good.jsonl", chain(2, start=3, prefix="g"))
    code, out, _ = cli("status")
    assert "2 line(s) not pushed" in next(line for line in out.splitlines() if "d-good" in line)
    # An unchanged conflicting file is not retried on every pass; the good one keeps going.
    code, _, err = cli("push", "--once", "-v")
    assert "d-good.jsonl: 2 new line(s) stored" in err and "a-conflict" not in err


def test_credentials_never_come_from_argv_and_the_config_file_must_be_private(
    setup: Any, live_server: Any, tmp_path: Path
) -> None:
    _, cli, _ = setup
    token = cli.env.pop("PIWEB_TOKEN")
    server = cli.env.pop("PIWEB_URL")
    code, _, err = cli("push", "--once")
    assert code == 2 and "no server" in err
    config = tmp_path / "config" / "piweb-sync" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text(f'server = "{server}"\ntoken = "{token}"\n')
    config.chmod(0o644)
    code, _, err = cli("push", "--once")
    assert code == 2 and "chmod 600" in err
    config.chmod(0o600)
    assert cli("push", "--once")[0] == 0


def test_sync_requires_a_token(live_server: Any) -> None:
    response = httpx.post(f"{live_server.url}/api/sync/", json={"header": "{}", "lines": []})
    assert response.status_code in (401, 403)
    assert "error" in response.json()


def test_synced_sessions_know_their_file_and_their_models_window(setup: Any) -> None:
    from django.conf import settings
    from rest_framework.test import APIClient

    from providers.models import LLMProvider

    owner, cli, sessions = setup
    file = sessions / "--w--" / "s.jsonl"
    change = json.dumps(
        {"type": "model_change", "id": "m0", "parentId": "e1", "timestamp": "x", "provider": "anthropic",
         "modelId": "claude-x"}
    )  # fmt: skip
    write(file, [header(), *chain(2), change])
    assert cli("push", "--once")[0] == 0
    session = ChatSession.objects.get(owner=owner, pi_id="sync-demo")
    assert session.source_filename == str(file.resolve())
    client = APIClient()
    client.force_authenticate(user=owner)
    default = client.get(f"/api/sessions/{session.pk}/context/").json()["contextWindow"]["window"]
    assert default == settings.PIWEB_DEFAULT_CONTEXT_WINDOW  # an unknown model: the server's default
    LLMProvider.objects.create(
        name="c", api="anthropic-messages", base_url="http://x", model_id="claude-x", provider="anthropic",
        context_window=123000, max_output_tokens=1000,
    )  # fmt: skip
    window = client.get(f"/api/sessions/{session.pk}/context/").json()["contextWindow"]
    assert window["window"] == 123000
