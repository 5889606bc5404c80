"""The git state of a folder, as piweb records it beside a session: remote URL, branch and HEAD.

Read with ``git`` itself (a folder that is not a work tree, or a machine without git, gives nothing).
The remote URL loses any user, password or token before it leaves the machine.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

__all__ = ["commits_between", "git_state", "head_of", "strip_credentials"]

TIMEOUT = 10


def _git(folder: str | Path, *args: str) -> str | None:
    try:
        done = subprocess.run(
            ["git", "-C", str(folder), *args],
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
            check=False,
            errors="replace",
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def strip_credentials(url: str) -> str:
    """``https://user:token@host/x?y`` → ``https://host/x``; ``git@host:x`` → ``host:x``."""
    url = url.strip()
    if "://" in url:
        parts = urlsplit(url)
        return urlunsplit((parts.scheme, parts.netloc.rpartition("@")[2], parts.path, "", ""))
    head, colon, rest = url.partition(":")
    if colon and "/" not in head and "@" in head:
        return f"{head.rpartition('@')[2]}:{rest}"
    return url


def head_of(folder: str | Path) -> str:
    return _git(folder, "rev-parse", "--verify", "-q", "HEAD") or ""


def git_state(folder: str | Path) -> dict[str, str] | None:
    """``{"repository", "branch", "head"}`` of the work tree at ``folder``, or None when it is not one."""
    if not folder or not Path(folder).is_dir():
        return None
    if _git(folder, "rev-parse", "--is-inside-work-tree") != "true":
        return None
    branch = _git(folder, "symbolic-ref", "--short", "-q", "HEAD") or ""
    remote = ""
    if branch:
        name = _git(folder, "config", "--get", f"branch.{branch}.remote") or ""
        remote = (_git(folder, "remote", "get-url", name) or "") if name and name != "." else ""
    if not remote:
        remote = _git(folder, "remote", "get-url", "origin") or ""
    # Bounded as the server takes them (longer values would only be dropped there).
    return {
        "repository": strip_credentials(remote)[:4000],
        "branch": branch[:1000],
        "head": head_of(folder)[:100],
    }


def commits_between(folder: str | Path, before: str, after: str, limit: int = 200) -> list[dict[str, str]]:
    """The commits reachable from ``after`` and not from ``before`` (all of ``after``'s when ``before`` is
    empty), oldest first, with their subjects."""
    if not after or after == before:
        return []
    span = f"{before}..{after}" if before else after
    out = _git(folder, "log", "--reverse", f"--max-count={limit}", "--format=%H%x09%s", span)
    commits = []
    for line in (out or "").splitlines():
        sha, _, subject = line.partition("\t")
        if sha:
            commits.append({"sha": sha, "subject": subject})
    return commits
