"""Find secrets in one stored line with the pattern detectors of ``detect-secrets``.

A line is scanned as the JSON value it holds: every string in it, wherever it sits (a tool result, a
bash output, an argument), is searched, so JSON escapes (``\\n`` in a pasted key) never hide or fake a
match. A finding names the string by its JSON pointer and the secret by its character span in that
string; the secret itself is never kept. The detectors used are the pattern ones: the entropy and
keyword heuristics flag every hash and id a coding transcript is full of.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from itertools import accumulate
from typing import Any

from detect_secrets.plugins.artifactory import ArtifactoryDetector
from detect_secrets.plugins.aws import AWSKeyDetector
from detect_secrets.plugins.azure_storage_key import AzureStorageKeyDetector
from detect_secrets.plugins.base import RegexBasedDetector
from detect_secrets.plugins.basic_auth import BasicAuthDetector
from detect_secrets.plugins.discord import DiscordBotTokenDetector
from detect_secrets.plugins.github_token import GitHubTokenDetector
from detect_secrets.plugins.gitlab_token import GitLabTokenDetector
from detect_secrets.plugins.jwt import JwtTokenDetector
from detect_secrets.plugins.mailchimp import MailchimpDetector
from detect_secrets.plugins.npm import NpmDetector
from detect_secrets.plugins.openai import OpenAIDetector
from detect_secrets.plugins.private_key import PrivateKeyDetector
from detect_secrets.plugins.pypi_token import PypiTokenDetector
from detect_secrets.plugins.sendgrid import SendGridDetector
from detect_secrets.plugins.slack import SlackDetector
from detect_secrets.plugins.square_oauth import SquareOAuthDetector
from detect_secrets.plugins.stripe import StripeDetector
from detect_secrets.plugins.telegram_token import TelegramBotTokenDetector
from detect_secrets.plugins.twilio import TwilioKeyDetector

from pitree.redacted import marker

__all__ = ["PRIVATE_KEY", "Finding", "kind_of", "masked", "scan_value", "secret_spans"]

DETECTORS: tuple[type[RegexBasedDetector], ...] = (
    ArtifactoryDetector,
    AWSKeyDetector,
    AzureStorageKeyDetector,
    BasicAuthDetector,
    DiscordBotTokenDetector,
    GitHubTokenDetector,
    GitLabTokenDetector,
    JwtTokenDetector,
    MailchimpDetector,
    NpmDetector,
    OpenAIDetector,
    PrivateKeyDetector,
    PypiTokenDetector,
    SendGridDetector,
    SlackDetector,
    SquareOAuthDetector,
    StripeDetector,
    TelegramBotTokenDetector,
    TwilioKeyDetector,
)

PRIVATE_KEY = "private-key"
# A private key's detector matches its first line only; the secret is the whole block, to its end marker
# (or to the end of the string when the paste was cut).
_KEY_END = re.compile(
    r"-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|---- END SSH2 ENCRYPTED PRIVATE KEY ----"
)
_BOUNDARY = frozenset(" \t\n=:\"'")
# Detectors whose pattern captures the secret apart from the words around it (a password in a URL, a
# key after its variable name); the other captures (GitHub's, GitLab's) are only a token's prefix.
_CAPTURES_SECRET = frozenset({"aws-access-key", "basic-auth-credentials", "npm-tokens"})


@dataclass(frozen=True, slots=True, kw_only=True)
class Finding:
    """A secret in a line: which string (JSON pointer), where in it (characters), and what kind."""

    kind: str
    path: str
    start: int
    end: int


def kind_of(secret_type: str) -> str:
    """Return the marker's name for a detector's type: "AWS Access Key" becomes "aws-access-key"."""
    return re.sub(r"[^a-z0-9]+", "-", secret_type.lower()).strip("-")


@cache
def _patterns() -> tuple[tuple[str, re.Pattern[str]], ...]:
    # secret_type is a plain class attribute on each detector; the library types it as a property.
    return tuple((kind_of(d.secret_type), p) for d in DETECTORS for p in d().denylist)  # type: ignore[arg-type]


def secret_spans(text: str) -> list[tuple[str, int, int]]:
    """Return (kind, start, end) of every secret in ``text``, earliest first, overlaps merged."""
    return _spans_of([text])[0]


def _spans_of(texts: list[str]) -> list[list[tuple[str, int, int]]]:
    """Return the secrets of each text. The texts are searched joined by newlines, one pass a pattern:
    no detector's pattern matches across a newline, and one long search costs far less than many short
    ones (a line holds a dozen strings, most of them ids and timestamps)."""
    joined = "\n".join(texts)
    starts = list(accumulate((len(t) + 1 for t in texts[:-1]), initial=0))
    found: list[list[tuple[str, int, int]]] = [[] for _ in texts]
    for kind, pattern in _patterns():
        for match in pattern.finditer(joined):
            group = 0
            if kind in _CAPTURES_SECRET:
                group = next((i for i in range(1, pattern.groups + 1) if match.group(i)), 0)
            start, end = match.span(group)
            index = bisect_right(starts, start) - 1
            text, base = texts[index], starts[index]
            start, end = start - base, min(end - base, len(text))
            # Some patterns take the character before or after a token as its boundary.
            while start < end and text[start] in _BOUNDARY:
                start += 1
            while end > start and text[end - 1] in _BOUNDARY:
                end -= 1
            if kind == PRIVATE_KEY:
                start = _block_start(text, start)
                closing = _KEY_END.search(text, end)
                end = closing.end() if closing else len(text)
            if start < end:
                found[index].append((kind, start, end))
    return [_merged(spans) for spans in found]


def _merged(spans: list[tuple[str, int, int]]) -> list[tuple[str, int, int]]:
    spans.sort(key=lambda s: (s[1], -s[2]))
    merged: list[tuple[str, int, int]] = []
    for kind, start, end in spans:
        if merged and start < merged[-1][2]:
            last = merged[-1]
            merged[-1] = (last[0], last[1], max(last[2], end))
            continue
        merged.append((kind, start, end))
    return merged


def _block_start(text: str, start: int) -> int:
    """Return where the key's marker line begins: the dashes before the "BEGIN" the detector matched."""
    dashes = len(text[:start]) - len(text[:start].rstrip("-"))
    return start - dashes


def scan_value(value: Any) -> list[Finding]:
    """Return every secret in a parsed line, in document order."""
    strings = [(path, text) for path, text in _strings(value, "") if len(text) >= 4]
    if not strings:
        return []
    spans = _spans_of([text for _, text in strings])
    return [
        Finding(kind=kind, path=path, start=start, end=end)
        for (path, _), found in zip(strings, spans, strict=True)
        for kind, start, end in found
    ]


def _strings(value: Any, path: str) -> Iterator[tuple[str, str]]:
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(item, f"{path}/{_escape(str(key))}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _strings(item, f"{path}/{index}")


def _escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def masked(text: str) -> str:
    """Return ``text`` with every secret in it replaced by its marker (``[REDACTED:<kind>]``)."""
    for kind, start, end in sorted(secret_spans(text), key=lambda span: -span[1]):
        text = text[:start] + marker(kind) + text[end:]
    return text
