"""``piweb-sync`` installs on its own: a fresh virtualenv with only the client's folder, no Django."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sessions_app.models import ApiToken, ChatSession

from .pi import ROOT

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

HEADER = (
    '{"type":"session","version":3,"id":"fresh-install","timestamp":"2026-03-01T10:00:00.000Z","cwd":"/w"}'
)
LINE = (
    '{"type":"message","id":"a1","parentId":null,"timestamp":"2026-03-01T10:00:01Z",'
    '"message":{"role":"user","content":"hello","timestamp":1}}'
)


def test_a_fresh_venv_with_only_the_client_pushes(
    live_server: Any, user: Callable[..., Any], tmp_path: Path
) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    # Built from a copy: an install from a folder leaves a build/ directory beside its sources.
    source = shutil.copytree(ROOT / "clients" / "piweb-sync", tmp_path / "piweb-sync")
    install = subprocess.run(
        [str(python), "-m", "pip", "install", "-q", str(source)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if install.returncode != 0 and "Could not fetch URL" in install.stderr + install.stdout:
        pytest.skip("the package index cannot be reached from here")
    assert install.returncode == 0, install.stderr[-2000:]
    assert subprocess.run([str(python), "-c", "import django"], capture_output=True, check=False).returncode
    owner = user()
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    (sessions / "s.jsonl").write_text(HEADER + "\n" + LINE + "\n")
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("PIWEB_", "PI_", "XDG_"))},
        "PIWEB_URL": live_server.url,
        "PIWEB_TOKEN": ApiToken.objects.create(user=owner)[1],
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
    }
    done = subprocess.run(
        [str(venv / "bin" / "piweb-sync"), "push", "--once", str(sessions)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    assert ChatSession.objects.get(owner=owner, pi_id="fresh-install").entry_count == 1
