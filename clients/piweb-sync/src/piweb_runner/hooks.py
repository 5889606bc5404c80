"""The opt-in ``Piweb-Session: <url>`` trailer on the commits the runner's Pi makes.

Git runs hooks from ``core.hooksPath`` when it is set; the runner sets it for Pi's process alone, through
the environment (``GIT_CONFIG_COUNT``/``GIT_CONFIG_KEY_n``/``GIT_CONFIG_VALUE_n``), to a folder of its
own state. Each hook there first runs the repository's own hook of that name (from the repository's
``core.hooksPath`` when it has one, else ``.git/hooks``), so nothing the repository does is skipped;
``commit-msg`` then adds the trailer with ``git interpret-trailers``. No file of the repository and
no git config file is written.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

__all__ = ["HOOKS", "trailer_env", "write_hooks"]

HOOKS = (
    "applypatch-msg",
    "pre-applypatch",
    "post-applypatch",
    "pre-commit",
    "pre-merge-commit",
    "prepare-commit-msg",
    "commit-msg",
    "post-commit",
    "pre-rebase",
    "post-checkout",
    "post-merge",
    "pre-push",
    "post-rewrite",
    "push-to-checkout",
    "pre-auto-gc",
    "reference-transaction",
    "sendemail-validate",
)

_OWN = """#!/bin/sh
# piweb-runner: the repository's own hook of this name runs first, as it would without the runner.
own_dir="${PIWEB_OWN_HOOKS:-$(git rev-parse --git-common-dir)/hooks}"
own="$own_dir/$(basename "$0")"
if [ -x "$own" ]; then "$own" "$@" || exit $?; fi
"""
_TRAILER = """if [ -n "$PIWEB_SESSION_URL" ]; then
  git interpret-trailers --in-place --if-exists addIfDifferent \\
    --trailer "Piweb-Session: $PIWEB_SESSION_URL" "$1" || exit $?
fi
"""


def write_hooks(state: Path) -> Path:
    """Write the hook scripts under the runner's state folder (again each time: an upgrade changes them)."""
    folder = state / "git-hooks"
    folder.mkdir(parents=True, exist_ok=True)
    for name in HOOKS:
        path = folder / name
        path.write_text(_OWN + (_TRAILER if name == "commit-msg" else ""), encoding="utf-8")
        path.chmod(0o755)
    return folder


def _own_hooks(workspace: Path) -> str:
    """The repository's own ``core.hooksPath`` (absolute), or "" for ``.git/hooks``."""

    def git(*args: str) -> str:
        try:
            done = subprocess.run(
                ["git", "-C", str(workspace), *args], capture_output=True, text=True, timeout=10, check=False
            )
        except (OSError, subprocess.SubprocessError):
            return ""
        return done.stdout.strip() if done.returncode == 0 else ""

    configured = git("config", "--get", "core.hooksPath")
    if not configured:
        return ""
    path = Path(configured).expanduser()
    if not path.is_absolute():
        path = Path(git("rev-parse", "--show-toplevel") or str(workspace)) / path
    return str(path)


def trailer_env(state: Path, workspace: Path, session_url: str) -> dict[str, str]:
    """The environment for Pi's process: this one, with the hooks folder and the session's URL added."""
    env = dict(os.environ)
    count = int(env.get("GIT_CONFIG_COUNT") or 0)
    env["GIT_CONFIG_COUNT"] = str(count + 1)
    env[f"GIT_CONFIG_KEY_{count}"] = "core.hooksPath"
    env[f"GIT_CONFIG_VALUE_{count}"] = str(write_hooks(state))
    env["PIWEB_SESSION_URL"] = session_url
    own = _own_hooks(workspace)
    if own:
        env["PIWEB_OWN_HOOKS"] = own
    else:
        env.pop("PIWEB_OWN_HOOKS", None)
    return env
