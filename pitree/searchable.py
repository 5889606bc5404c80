"""What a session search looks at in an entry, and the short excerpt shown for a hit.

The searchable text of an entry is the text a person reads in it: the text blocks of user, assistant and
tool-result messages, a bash execution's command and output, custom messages, and the summaries of
compactions and branch summaries. Thinking, tool-call arguments and images are left out. The text is
capped so one huge tool output cannot make an entry unsearchable (PostgreSQL's text-search vectors are
limited to 1 MB) or the index large.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from pitree.messages import content_text

__all__ = ["MAX_SEARCH_CHARS", "Match", "marked", "parse_query", "query_terms", "search_text", "snippet"]

MAX_SEARCH_CHARS = 32_000
SNIPPET_CHARS = 160
# What a database text column cannot hold: NUL and lone UTF-16 surrogates (JSON allows both).
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
_WORD = re.compile(r"\w+", re.UNICODE)


def search_text(value: Any) -> str:
    """Return the searchable text of one parsed entry ("" for entries with nothing to search)."""
    if not isinstance(value, dict):
        return ""
    kind = value.get("type")
    parts: list[str] = []
    if kind == "message":
        message = value.get("message")
        if isinstance(message, dict):
            if message.get("role") == "bashExecution":
                parts += [_text(message.get("command")), _text(message.get("output"))]
            elif message.get("role") in ("branchSummary", "compactionSummary"):
                parts.append(_text(message.get("summary")))
            else:
                parts.append(content_text(message.get("content"), "\n"))
    elif kind == "custom_message":
        parts.append(content_text(value.get("content"), "\n"))
    elif kind in ("compaction", "branch_summary"):
        parts.append(_text(value.get("summary")))
    text = "\n".join(p for p in parts if p)
    if len(text) > MAX_SEARCH_CHARS:
        text = text[:MAX_SEARCH_CHARS]
    return _UNSTORABLE.sub(" ", text) if not text.isascii() or "\x00" in text else text


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def query_terms(query: str) -> list[str]:
    """Return the words a hit holds for this query, lower-cased, in order, without repeats: the words of
    its conditions that are not negated (``or`` and ``-word`` are not shown as matches). A query without
    any such word finds nothing."""
    seen: dict[str, None] = {}
    for group in parse_query(query):
        for match in group:
            if not match.negated:
                for word in match.words:
                    seen.setdefault(word, None)
    return list(seen)


@dataclass(frozen=True, slots=True)
class Match:
    """One condition of a query: these words standing together (one word, or a "phrase"), or not."""

    words: tuple[str, ...]
    negated: bool = False


_TOKEN = re.compile(r'(-?)"([^"]*)"?|(\S+)')


def parse_query(query: str) -> list[list[Match]]:
    """Read a query as web search syntax, as PostgreSQL's ``websearch_to_tsquery`` does: groups joined by
    ``or``, each a list of conditions that must all hold (words, "quoted phrases", ``-word``).

    Words are lower-cased ``\\w+`` runs; a token of several (``foo.bar``) is a phrase. Empty groups are
    dropped, so a query with no words at all is ``[]``.
    """
    groups: list[list[Match]] = [[]]
    for found in _TOKEN.finditer(query.lower()):
        minus, quoted, bare = found.groups()
        if bare is not None and bare == "or":
            groups.append([])
            continue
        negated = bool(minus) or (bare is not None and bare.startswith("-") and len(bare) > 1)
        words = tuple(_WORD.findall(quoted if bare is None else bare))
        if words:
            groups[-1].append(Match(words, negated))
    return [group for group in groups if group]


def snippet(text: str, terms: list[str], width: int = SNIPPET_CHARS) -> str:
    """Return about ``width`` characters of ``text`` around the first query word it contains."""
    lowered = text.lower()
    at = min((i for i in (lowered.find(t) for t in terms) if i >= 0), default=0)
    start = max(0, at - width // 3)
    end = min(len(text), start + width)
    piece = " ".join(text[start:end].split())
    return ("…" if start > 0 else "") + piece + ("…" if end < len(text) else "")


def marked(text: str, terms: list[str]) -> list[tuple[str, bool]]:
    """Split ``text`` into pieces, each saying whether it is an occurrence of a query word (any case)."""
    lowered = text.lower()
    spans: list[tuple[int, int]] = []
    for term in terms:
        at = lowered.find(term) if term else -1
        while at >= 0:
            spans.append((at, at + len(term)))
            at = lowered.find(term, at + len(term))
    pieces: list[tuple[str, bool]] = []
    end = 0
    for start, stop in sorted(spans):
        if stop <= end:
            continue
        start = max(start, end)
        if start > end:
            pieces.append((text[end:start], False))
        pieces.append((text[start:stop], True))
        end = stop
    if end < len(text):
        pieces.append((text[end:], False))
    return pieces
