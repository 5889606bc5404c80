"""Someone who signs in with SSO has no password: they make a token on the API tokens page, and
``piweb-sync login`` and ``push`` work with it (the real client, in a process of its own)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model

from sessions_app.models import ChatSession, SessionShare
from teams.models import Team
from tests.conftest import CLIENT_SRC
from tests.factories import HEADER, small_tree
from tests.faults.stack import ROOT

from .conftest import OidcStack, csrf_of, sign_in

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]


def _piweb_sync(home: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "PYTHONPATH": str(CLIENT_SRC),
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / "config"),
        "XDG_STATE_HOME": str(home / "state"),
        "PI_CODING_AGENT_DIR": str(home / "agent"),
    }
    command = [sys.executable, "-m", "piweb_sync", *args]
    return subprocess.run(command, input=stdin, capture_output=True, text=True, env=env, cwd=ROOT, timeout=60)


def test_an_sso_user_makes_a_token_and_piweb_sync_pushes_with_it(
    oidc_stack: OidcStack, tmp_path: Path
) -> None:
    oidc_stack.provider.person("hana", "hana@example.com", ["eng"])
    browser, _ = sign_in(oidc_stack, "hana")
    hana = get_user_model().objects.get(username="hana")
    assert not hana.has_usable_password()
    # Engineering shares members' new sessions with the team by default.
    Team.objects.filter(name="Engineering").update(default_share="viewer")

    page = browser.get(f"{oidc_stack.piweb.base_url}/tokens/")
    assert page.status_code == 200 and "piweb-sync login" in page.text
    created = browser.post(
        f"{oidc_stack.piweb.base_url}/api/tokens/",
        json={"name": "laptop"},
        headers={"X-CSRFToken": csrf_of(page.text), "Referer": f"{oidc_stack.piweb.base_url}/tokens/"},
    )
    assert created.status_code == 201, created.text
    token = created.json()["token"]
    listed = browser.get(f"{oidc_stack.piweb.base_url}/api/tokens/").json()["results"]
    assert [t["name"] for t in listed] == ["laptop"] and "token" not in listed[0]

    refused = _piweb_sync(tmp_path, "login", "--server", oidc_stack.piweb.base_url, stdin="not-a-token\n")
    assert refused.returncode == 1 and "refused the token" in refused.stderr
    login = _piweb_sync(tmp_path, "login", "--server", oidc_stack.piweb.base_url, stdin=token + "\n")
    assert login.returncode == 0, login.stderr

    folder = tmp_path / "agent" / "sessions" / "--w--"
    folder.mkdir(parents=True)
    lines = [json.dumps({**HEADER, "id": "from-hana"}), *(json.dumps(v) for v in small_tree())]
    (folder / "s.jsonl").write_text("\n".join(lines) + "\n")
    push = _piweb_sync(tmp_path, "push", "--once")
    assert push.returncode == 0, push.stderr

    session = ChatSession.objects.get(pi_id="from-hana")
    assert session.owner == hana and session.entry_count == len(small_tree())
    assert SessionShare.objects.get(session=session).team.name == "Engineering"
