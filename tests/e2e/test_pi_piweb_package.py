"""The Pi package (clients/pi-piweb) with the real Pi CLI, the loopback provider and piweb on daphne.

Pi loads the package with ``-e``; each run's entries reach piweb through ``/api/sync/`` while Pi works
or as it quits. The server's export must equal Pi's file byte for byte, also after piweb was away for
part of the session (the lines waited in the package's spool and went out on the next start).
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from providers.llm import testserver as script
from providers.llm.testserver import ProviderServer
from sessions_app import services
from sessions_app.models import ApiToken, ChatSession
from tests.live.servers import AsgiServer, private_piweb

from .pi import NODE, PI_CLI, ROOT, PiHome, file_lines, pi_installed, stored_lines

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.slow,
    pytest.mark.timeout(300),
    pytest.mark.skipif(not pi_installed(), reason="Pi is not installed: run `npm ci --prefix bench`"),
]
PACKAGE = ROOT / "clients" / "pi-piweb"


@pytest.fixture
def piweb(tmp_path: Path) -> Iterator[AsgiServer]:
    with private_piweb(tmp_path) as server:
        yield server


def run_pi(home: PiHome, *args: str) -> float:
    """One print-mode turn with the package loaded; return how long Pi took, start to exit."""
    command = [str(NODE), str(PI_CLI), "--tools", "read", "--no-extensions", "--no-skills"]
    command += ["--no-prompt-templates", "--no-context-files", "-e", str(PACKAGE), *args]
    started = time.monotonic()
    done = subprocess.run(
        command, cwd=home.work, env=home.env, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, f"pi failed: {done.stderr[-2000:]}"
    return time.monotonic() - started


def exported(session: ChatSession) -> bytes:
    session.refresh_from_db()
    return b"".join(services.export_jsonl(session))


def test_pi_package_feeds_piweb(piweb: AsgiServer, user: Callable[..., Any], tmp_path: Path) -> None:
    owner = user()
    token = ApiToken.objects.create(user=owner)[1]
    provider = ProviderServer().start()
    home = PiHome(tmp_path, provider.url, piweb.base_url, token)
    spool = tmp_path / "state" / "pi-piweb"
    try:
        # A multi-turn session while piweb answers: after each turn the export is Pi's file, exactly.
        provider.enqueue(script.reply("one"), script.reply("two"), script.reply("three"))
        run_pi(home, "-p", "first")
        [local] = home.files()
        pi_id = json.loads(local.read_text().splitlines()[0])["id"]
        session = ChatSession.objects.get(owner=owner, pi_id=pi_id)
        assert exported(session) == local.read_bytes()
        for prompt in ("second", "third"):
            run_pi(home, "-c", "-p", prompt)
            assert exported(session) == local.read_bytes()

        # piweb goes away for two turns: Pi works on, its lines wait in the spool.
        piweb.service.stop()
        provider.enqueue(script.reply("four"), script.reply("five"))
        offline = [run_pi(home, "-c", "-p", prompt) for prompt in ("fourth", "fifth")]
        waiting = (spool / f"{pi_id}.jsonl").read_text().splitlines()
        assert len(waiting) == len(file_lines(local)) - len(stored_lines(session)) > 0

        # piweb is back: the next start sends what waited, then its own turn, in order and once each.
        piweb.service.start()
        provider.enqueue(script.reply("six"))
        run_pi(home, "-c", "-p", "sixth")
        assert exported(session) == local.read_bytes()
        assert stored_lines(session) == file_lines(local)
        assert (spool / f"{pi_id}.jsonl").read_text() == ""
        # Pi with piweb away is as quick as with piweb here (the 2 s shutdown allowance is never used).
        assert max(offline) < 15

        # piweb-sync pushing the same file finds nothing new: both clients feed one session.
        pushed = home.sync("push", "--once")
        assert pushed.returncode == 0, pushed.stderr
        assert stored_lines(session) == file_lines(local)
        assert exported(session) == local.read_bytes()
        assert ChatSession.objects.filter(owner=owner).count() == 1
    finally:
        provider.stop()
        home.stop_push()


def test_private_folder_is_never_sent(piweb: AsgiServer, user: Callable[..., Any], tmp_path: Path) -> None:
    owner = user()
    token = ApiToken.objects.create(user=owner)[1]
    provider = ProviderServer().start()
    home = PiHome(tmp_path, provider.url, piweb.base_url, token)
    config = tmp_path / "config" / "piweb-sync" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text(f'ignore = ["{home.work.parent}"]\n')
    config.chmod(0o600)
    try:
        provider.enqueue(script.reply("secret"))
        run_pi(home, "-p", "private work")
        assert len(home.files()) == 1
        assert not ChatSession.objects.filter(owner=owner).exists()
    finally:
        provider.stop()
