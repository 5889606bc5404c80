"""What git and its hosts print, read as values: commits from ``git commit`` output, pull-request URLs, and
repository URLs with their credentials taken out.

- ``git commit`` prints ``[<branch> <sha>] <subject>`` (``[<branch> (root-commit) <sha>] <subject>`` for
  a repository's first commit, ``[detached HEAD <sha>] ...`` off a branch), the SHA abbreviated.
- Pull requests: ``https://github.com/<owner>/<repo>/pull/<n>`` and GitLab's
  ``https://<host>/<group>/.../<project>/-/merge_requests/<n>`` (gitlab.com or a self-hosted GitLab) are
  normalized (``https``, lower-case host and path, no trailing part), so a URL pasted from a browser tab
  finds the one ``gh pr create`` printed. The address ``git push`` offers for opening one ("Create a pull
  request ... by visiting:", "To create a merge request ..., visit:") is kept as the plain text it is.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

__all__ = [
    "MAX_SUBJECT_CHARS",
    "MAX_URL_CHARS",
    "FoundCommit",
    "commits_in",
    "is_sha",
    "normalize_pr_url",
    "pr_urls_in",
    "strip_credentials",
]

MAX_SUBJECT_CHARS = 500
MAX_URL_CHARS = 500
MAX_SCANNED_CHARS = 200_000  # a bash result past this is a build log, not a commit's few lines

_COMMIT_LINE = re.compile(
    r"^\[(?P<branch>[^\]\n]{1,250}?)(?: \(root-commit\))? (?P<sha>[0-9a-f]{7,40})\] (?P<subject>[^\n]*)$",
    re.MULTILINE,
)
_GITHUB_PR = re.compile(
    r"https?://(?:www\.)?github\.com/(?P<owner>[\w.-]+)/(?P<repo>[\w.-]+)/pull/(?P<n>\d{1,9})\b",
    re.IGNORECASE,
)
_GITLAB_MR = re.compile(
    r"https?://(?P<host>[\w.-]+(?::\d+)?)/(?P<path>[\w.-]+(?:/[\w.-]+)+)/-/merge_requests/(?P<n>\d{1,9})\b",
    re.IGNORECASE,
)
# The line git push relays from the host, offering to open a pull request for the pushed branch.
_OFFER = re.compile(r"(?:by visiting|visit):?\s*\n?\s*(?:remote:\s*)?(?P<url>https?://\S+)", re.IGNORECASE)
_HEX = re.compile(r"[0-9a-f]{7,40}")
_ESCAPES = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")  # colours a terminal tool may have kept


@dataclass(frozen=True, slots=True)
class FoundCommit:
    sha: str  # lower-case hex, abbreviated as git printed it
    branch: str
    subject: str


def is_sha(text: str) -> bool:
    """Whether ``text`` is 7 to 40 hex digits (any case), as a commit is written."""
    return _HEX.fullmatch(text.strip().lower()) is not None


def commits_in(output: str) -> list[FoundCommit]:
    """The commits ``git commit`` reported in a command's output, in order, each once."""
    text = _ESCAPES.sub("", output[:MAX_SCANNED_CHARS])
    found: dict[str, FoundCommit] = {}
    for match in _COMMIT_LINE.finditer(text):
        sha = match["sha"]
        if sha not in found:
            found[sha] = FoundCommit(sha, match["branch"], match["subject"].strip()[:MAX_SUBJECT_CHARS])
    return list(found.values())


def normalize_pr_url(url: str) -> str | None:
    """The one spelling of a GitHub pull request or GitLab merge request URL, or None for another URL."""
    url = url.strip()
    github = _GITHUB_PR.match(url)
    if github is not None:
        return (
            f"https://github.com/{github['owner'].lower()}/{github['repo'].lower()}/pull/{int(github['n'])}"
        )
    gitlab = _GITLAB_MR.match(url)
    if gitlab is not None:
        return (
            f"https://{gitlab['host'].lower()}/{gitlab['path'].lower()}/-/merge_requests/{int(gitlab['n'])}"
        )
    return None


def pr_urls_in(output: str) -> list[str]:
    """The pull-request URLs a command's output names (normalized), then the addresses ``git push`` offered
    for opening one (as printed), each once and in that order."""
    text = _ESCAPES.sub("", output[:MAX_SCANNED_CHARS])
    found: list[str] = []
    for pattern in (_GITHUB_PR, _GITLAB_MR):
        for match in pattern.finditer(text):
            url = normalize_pr_url(match.group(0))
            if url is not None and url not in found:
                found.append(url)
    for match in _OFFER.finditer(text):
        url = match["url"].rstrip(".,;)'\"")[:MAX_URL_CHARS]
        if normalize_pr_url(url) is None and url not in found:
            found.append(url)
    return found


def strip_credentials(url: str) -> str:
    """A repository URL without user, password or token: ``https://tok@host/x`` → ``https://host/x``,
    ``git@host:x`` → ``host:x``; a query or fragment (where tokens also travel) is dropped too."""
    url = url.strip()[: MAX_URL_CHARS * 2]
    if "://" in url:
        parts = urlsplit(url)
        host = parts.netloc.rpartition("@")[2]
        return urlunsplit((parts.scheme, host, parts.path, "", ""))[:MAX_URL_CHARS]
    # scp-like ``user@host:path``, or a local path (kept: it names the folder, nothing secret).
    head, colon, rest = url.partition(":")
    if colon and "/" not in head and "@" in head:
        return f"{head.rpartition('@')[2]}:{rest}"[:MAX_URL_CHARS]
    return url[:MAX_URL_CHARS]
