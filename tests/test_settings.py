"""Every PIWEB_* setting is declared once in settings.py, read from the environment, and documented."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from django.conf import settings as django_settings

from agent.compaction import settings_for
from compaction_app.services import compaction_settings

REPO = Path(__file__).resolve().parent.parent


def test_every_piweb_setting_is_in_the_configuration_table() -> None:
    names = {name for name in dir(django_settings) if name.startswith("PIWEB_")}
    table = (REPO / "docs" / "configuration.md").read_text()
    assert names and [n for n in sorted(names) if f"| `{n}`" not in table] == []


def test_no_code_reads_an_undeclared_piweb_setting() -> None:
    pattern = re.compile(r"getattr\(\s*\w*settings\s*,\s*[\"']PIWEB_")
    readers = [
        str(path.relative_to(REPO))
        for folder in ("piweb", "sessions_app", "compaction_app")
        for path in (REPO / folder).rglob("*.py")
        if pattern.search(path.read_text())
    ]
    assert readers == []


def test_compaction_defaults_are_pis(settings: Any) -> None:
    settings.PIWEB_COMPACTION = None
    resolved = compaction_settings("p", "m")
    assert (resolved.reserve_tokens, resolved.keep_recent_tokens) == (16384, 20000)


def test_the_environment_sets_compaction_for_manual_and_automatic_compaction_alike() -> None:
    script = (
        "import django, json; django.setup(); "
        "from compaction_app.services import compaction_settings; "
        "from agent.compaction import settings_for; "
        "a, b = compaction_settings('p', 'm'), settings_for('p', 'm'); "
        "print(json.dumps([a.as_dict(), b.as_dict()]))"
    )
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "piweb.settings",
        "PIWEB_COMPACTION_RESERVE_TOKENS": "1000",
        "PIWEB_COMPACTION_KEEP_RECENT_TOKENS": "300",
        "PIWEB_COMPACTION": '{"modelOverrides": {"p/big": {"keepRecentTokens": 5000}}}',
    }
    out = subprocess.run(
        [sys.executable, "-c", script], env=env, cwd=REPO, capture_output=True, text=True, check=True
    )
    manual, automatic = json.loads(out.stdout.strip().splitlines()[-1])
    assert manual == automatic == {"enabled": True, "reserveTokens": 1000, "keepRecentTokens": 300}


def test_a_model_override_wins_over_the_environment_defaults(settings: Any) -> None:
    settings.PIWEB_COMPACTION_KEEP_RECENT_TOKENS = 300
    settings.PIWEB_COMPACTION = {"modelOverrides": {"p/big": {"keepRecentTokens": 5000}}}
    assert settings_for("p", "big").keep_recent_tokens == 5000
    assert settings_for("p", "small").keep_recent_tokens == 300
