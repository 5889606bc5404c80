"""Summarizers behind one protocol: a deterministic offline one and one that asks a model.

Both answer a ``SummaryRequest`` with a Pi-shaped assistant message, so the compaction code checks
and uses their answers the same way. The offline summarizer needs no network and no key: it lays out
the transcript's facts (requests, constraints, results, errors, paths) in the same sections a model
is asked for, which keeps compaction usable in tests, demos and air-gapped installs.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from compaction_app.domain.prompts import (
    BRANCH_HEADINGS,
    HISTORY_HEADINGS,
    SUMMARIZATION_SYSTEM_PROMPT,
    TURN_PREFIX_HEADINGS,
    SummaryKind,
)
from compaction_app.domain.summary import (
    OFFLINE_API,
    SPLIT_TURN_SEPARATOR,
    Summarizer,
    SummaryRequest,
    SummaryResponse,
)
from pitree.jsjson import utf16_len
from pitree.messages import BRANCH_SUMMARY_PREFIX, COMPACTION_SUMMARY_PREFIX
from providers.facade import (
    ProviderConfig,
    complete,
    estimate_request_tokens,
    output_limits,
    retry_transient,
)

__all__ = [
    "DEFAULT_MAX_OUTPUT_TOKENS",
    "LLMSummarizer",
    "OfflineSummarizer",
    "Summarizer",
    "SummaryRequest",
    "SummaryResponse",
]

DEFAULT_MAX_OUTPUT_TOKENS = 4096
CHARS_PER_TOKEN = 4  # the ratio the token estimates use
_MAX_BULLET = 300
_MAX_ERROR = 500
_MAX_BULLETS_PER_SECTION = 40

# --- reading a serialized transcript ------------------------------------------------------------------

_PART = re.compile(r"(?:^|\n\n)\[(User|Assistant tool calls|Assistant|Tool result)\]: ")
_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+|\n+")
_PATH = re.compile(
    r"(?<![\w/.:-])(?:~|\.{1,2})?/?(?:[\w.-]+/)+[\w.-]+"
    r"|(?<![\w/.-])[\w-]+(?:\.[\w-]+)*\.(?:py|pyi|ts|tsx|js|jsx|mjs|md|json|jsonl|toml|ya?ml|txt|rs|go|java|"
    r"kt|c|h|cc|cpp|hpp|cs|rb|php|html|css|scss|sql|sh|cfg|ini|lock|xml|csv|env)\b"
)
_FUNCTION = re.compile(r"(?<![\w.])([A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)*)\((?=[^()]{0,80}\))")
_CALL = re.compile(r"(\w+)\(((?:[^()\"]|\"(?:[^\"\\]|\\.)*\")*)\)")
_CALL_ARG = re.compile(r"(\w+)=(\"(?:[^\"\\]|\\.)*\"|[^,]+)")
_ERROR = re.compile(
    r"\b(?:error|errors|exception|traceback|failed|failure|fails|failing|not found|cannot|can't|"
    r"denied|invalid|refused|timed out|undefined|panic)\b|\w+(?:Error|Exception):",
    re.IGNORECASE,
)
_CONSTRAINT = re.compile(
    r"\b(?:must|mustn't|must not|don't|do not|doesn't|never|always|prefer|preferably|should not|"
    r"shouldn't|avoid|without|only use|keep)\b",
    re.IGNORECASE,
)
_DONE = re.compile(
    r"\b(?:done|added|fixed|created|updated|implemented|wrote|written|applied|passed|passes|completed|"
    r"finished|removed|renamed|refactored|resolved|installed|merged|now (?:includes|works|returns|uses))\b",
    re.IGNORECASE,
)
_FUTURE = re.compile(r"\b(?:I will|I'll|let me|going to|next,? I|now I|working on|I am|I'm)\b", re.IGNORECASE)
_DECISION = re.compile(
    r"\b(?:decided|decide|chose|choose|instead|because|going with|opted|will use|switch(?:ed)? to|"
    r"rather than)\b",
    re.IGNORECASE,
)
_TOOL_SUCCESS = re.compile(
    r"\b(?:passed|ok|success(?:ful(?:ly)?)?|applied|wrote|created|done)\b", re.IGNORECASE
)
# A user's own words mention errors loosely; only pasted error output counts as one.
_REPORTED_ERROR = re.compile(r"\w+(?:Error|Exception)\b|Traceback|\berror:", re.IGNORECASE)
_FILE_TAGS = re.compile(r"\n*<(read-files|modified-files)>\n.*?\n</\1>", re.DOTALL)


@dataclass(frozen=True, slots=True)
class _Part:
    role: str  # "User", "Assistant", "Assistant tool calls" or "Tool result"
    text: str


def _parts(conversation: str) -> list[_Part]:
    matches = list(_PART.finditer(conversation))
    out: list[_Part] = []
    for i, match in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(conversation)
        out.append(_Part(match.group(1), conversation[match.end() : end]))
    return out


def _one_line(text: str, limit: int = _MAX_BULLET) -> str:
    text = " ".join(text.split())
    if utf16_len(text) <= limit:
        return text
    return text[: limit - 1].rstrip() + "…"


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE_END.split(text) if s and s.strip()]


def _lead(text: str, sentences: int = 2) -> str:
    return _one_line(" ".join(_sentences(text)[:sentences]))


def _paths(text: str) -> list[str]:
    found = []
    for match in _PATH.finditer(text):
        path = match.group(0).rstrip(".")
        if "://" in text[max(0, match.start() - 8) : match.start() + 3] or len(path) < 3:
            continue
        found.append(path)
    return found


def _errors(text: str) -> list[str]:
    return [_one_line(line, _MAX_ERROR) for line in text.splitlines() if line.strip() and _ERROR.search(line)]


def _calls(text: str) -> list[tuple[str, dict[str, str]]]:
    calls = []
    for match in _CALL.finditer(text):
        args: dict[str, str] = {}
        for arg in _CALL_ARG.finditer(match.group(2)):
            raw = arg.group(2).strip()
            try:
                value = json.loads(raw)
            except ValueError:
                value = raw
            if isinstance(value, str):  # only string arguments name paths and commands
                args[arg.group(1)] = value
        calls.append((match.group(1), args))
    return calls


class _Sections:
    """Bullets per heading, first-seen order, duplicates dropped."""

    def __init__(self, headings: Iterable[str]) -> None:
        self.bullets: dict[str, list[str]] = {h: [] for h in headings}

    def add(self, heading: str, *items: str) -> None:
        bucket = self.bullets.setdefault(heading, [])
        for item in items:
            item = item.strip()
            if item and item not in bucket:
                bucket.append(item)

    def prepend(self, heading: str, *items: str) -> None:
        bucket = self.bullets.setdefault(heading, [])
        fresh = [i.strip() for i in items if i.strip() and i.strip() not in bucket]
        bucket[:0] = fresh


def _flat_headings(layout: tuple[tuple[str, tuple[str, ...]], ...]) -> list[str]:
    out: list[str] = []
    for heading, subheadings in layout:
        out.extend(subheadings or (heading,))
    return out


# Headings of earlier summaries mapped onto the history layout when merging.
_MERGE_MAP = {
    "## Original Request": "## Goal",
    "## Progress So Far": "### Done",
    "## Context Needed to Continue": "## Critical Context",
    "### In Progress": "### Done",  # earlier work in progress has moved on by the next compaction
}


def _parse_summary(text: str) -> dict[str, list[str]]:
    """Return the bullets of an earlier summary by heading; free text lands under Critical Context."""
    text = _FILE_TAGS.sub("", text).replace(SPLIT_TURN_SEPARATOR.strip(), "")
    out: dict[str, list[str]] = {}
    heading: str | None = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line in ("---", "**Turn Context (split turn):**"):
            continue
        if line.startswith("#"):
            heading = line
            continue
        item = line[2:].strip() if line[:2] in ("- ", "* ") else line
        if item in ("(none)", ""):
            continue
        target = _MERGE_MAP.get(heading or "", heading) if heading else "## Critical Context"
        if heading == "## Progress":
            target = "### Done"
        out.setdefault(target or "## Critical Context", []).append(item)
    return out


def _structured(kind: SummaryKind, conversation: str, previous: str | None) -> tuple[list[str], _Sections]:
    layout = {SummaryKind.TURN_PREFIX: TURN_PREFIX_HEADINGS, SummaryKind.BRANCH: BRANCH_HEADINGS}.get(
        kind, HISTORY_HEADINGS
    )
    headings = _flat_headings(layout)
    sections = _Sections(headings)
    prefix = kind is SummaryKind.TURN_PREFIX
    goal = "## Original Request" if prefix else "## Goal"
    done = "## Progress So Far" if prefix else "### Done"
    context = "## Context Needed to Continue" if prefix else "## Critical Context"

    if previous and kind is SummaryKind.UPDATE:
        for heading, items in _parse_summary(previous).items():
            sections.add(heading if heading in sections.bullets else context, *items)

    parts = _parts(conversation)
    last_user = max((i for i, p in enumerate(parts) if p.role == "User"), default=-1)
    user_requests: list[str] = []
    paths: list[str] = []
    functions: list[str] = []
    errors: list[str] = []
    last_assistant = max((i for i, p in enumerate(parts) if p.role == "Assistant"), default=-1)
    for index, part in enumerate(parts):
        text = part.text
        if part.role == "User":
            if text.startswith((COMPACTION_SUMMARY_PREFIX, BRANCH_SUMMARY_PREFIX)):
                inner = text.split("<summary>\n", 1)[-1].rsplit("</summary>", 1)[0]
                sections.add(done, f"Earlier: {_lead(inner)}")
                continue
            user_requests.append(text)
            errors.extend(line for line in _errors(text) if _REPORTED_ERROR.search(line))
            paths.extend(_paths(text))
            functions.extend(f"{m.group(1)}()" for m in _FUNCTION.finditer(text))
            sections.add(
                "## Constraints & Preferences",
                *[_one_line(s) for s in _sentences(text) if _CONSTRAINT.search(s)],
            )
            continue
        elif part.role == "Assistant":
            for sentence in _sentences(text):
                if _FUTURE.search(sentence):
                    # Only the latest statement of intent is still open; earlier ones were followed up.
                    if index == last_assistant and index > last_user and not prefix:
                        sections.add("### In Progress", _one_line(sentence))
                elif _DONE.search(sentence):
                    sections.add(done, _one_line(sentence))
                if _DECISION.search(sentence) and not prefix:
                    sections.add("## Key Decisions", _one_line(sentence))
        elif part.role == "Assistant tool calls":
            for name, args in _calls(text):
                path = args.get("path")
                if name in ("edit", "write") and path:
                    sections.add(done, f"{'Edited' if name == 'edit' else 'Wrote'} {path}")
                elif name == "bash" and args.get("command"):
                    sections.add(done, _one_line(f"Ran `{args['command']}`"))
            paths.extend(p for _, a in _calls(text) for k, p in a.items() if k == "path" and p)
            continue
        elif part.role == "Tool result":
            first = next((line for line in text.splitlines() if line.strip()), "")
            if _TOOL_SUCCESS.search(first) and not _ERROR.search(first):
                sections.add(done, _one_line(f"Result: {first}"))
        errors.extend(_errors(text))
        paths.extend(_paths(text))
        functions.extend(f"{m.group(1)}()" for m in _FUNCTION.finditer(text))

    if user_requests:
        sections.prepend(goal, _lead(user_requests[0]))
        if not prefix:
            latest = user_requests[-1]
            unanswered = last_user == len(parts) - 1
            sections.prepend(
                "## Next Steps", ("Answer: " if unanswered else "Continue with: ") + _lead(latest)
            )
    if errors and not prefix:
        sections.add("### Blocked", *errors[-3:])
    if kind is not SummaryKind.BRANCH:
        sections.add(context, *[f"File: {p}" for p in dict.fromkeys(paths)])
        if functions:
            sections.add(context, "Functions: " + ", ".join(dict.fromkeys(functions)))
        sections.add(context, *[f"Error: {e}" for e in dict.fromkeys(errors)])
    return headings, sections


def _render(layout: tuple[tuple[str, tuple[str, ...]], ...], sections: _Sections) -> str:
    blocks: list[str] = []
    for heading, subheadings in layout:
        lines = [heading]
        for sub in subheadings or (None,):
            if sub is not None:
                lines.append(sub)
            items = sections.bullets.get(sub or heading) or ["(none)"]
            lines.extend(f"- {item}" for item in items)
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def _fit(layout: tuple[tuple[str, tuple[str, ...]], ...], sections: _Sections, budget: int) -> str:
    """Drop the oldest bullets of the fullest sections until the text fits ``budget`` UTF-16 units."""
    for items in sections.bullets.values():
        del items[: max(0, len(items) - _MAX_BULLETS_PER_SECTION)]
    text = _render(layout, sections)
    length = utf16_len(text)
    while length > budget:
        heading, items = max(sections.bullets.items(), key=lambda kv: len(kv[1]))
        if len(items) <= 1:
            break
        # The goal's first bullet is the original request; trim what came after it instead.
        victim = 1 if heading in ("## Goal", "## Original Request", "## Next Steps") else 0
        removed = items.pop(victim)
        length -= utf16_len(removed) + 3
    text = _render(layout, sections)
    if utf16_len(text) > budget:
        text = text[: max(0, budget - 1)].rstrip() + "…" if budget > 0 else ""
    return text


def _now_ms() -> int:
    return int(time.time() * 1000)


def _usage() -> dict[str, Any]:
    """No model ran, so nothing was spent: zero, so totals that add usage up (Pi's) stay honest."""
    return {
        "input": 0,
        "output": 0,
        "cacheRead": 0,
        "cacheWrite": 0,
        "totalTokens": 0,
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
    }


@dataclass(frozen=True, slots=True)
class OfflineSummarizer:
    """Lay the transcript's facts out in the requested sections, without calling any model."""

    max_output_tokens: int = DEFAULT_MAX_OUTPUT_TOKENS
    clock: Callable[[], int] = field(default=_now_ms)

    def summarize(self, request: SummaryRequest) -> SummaryResponse:
        """Return a structured summary that fits the request's output cap."""
        layout = {SummaryKind.TURN_PREFIX: TURN_PREFIX_HEADINGS, SummaryKind.BRANCH: BRANCH_HEADINGS}.get(
            request.kind, HISTORY_HEADINGS
        )
        _, sections = _structured(request.kind, request.conversation, request.previous_summary)
        if request.custom_instructions:
            focus = _one_line(request.custom_instructions)
            if request.kind is SummaryKind.TURN_PREFIX:
                sections.add("## Context Needed to Continue", f"Focus: {focus}")
            else:
                sections.add("## Next Steps", f"Focus: {focus}")
        cap = request.max_output_tokens or self.max_output_tokens
        text = _fit(layout, sections, cap * CHARS_PER_TOKEN)
        return {
            "role": "assistant",
            "content": [{"type": "text", "text": text}],
            "api": OFFLINE_API,
            "provider": "piweb",
            "model": "offline-structured",
            "usage": _usage(),
            "stopReason": "stop",
            "timestamp": self.clock(),
        }


@dataclass(frozen=True, slots=True)
class LLMSummarizer:
    """Ask a provider's model for the summary: Pi's system prompt, one user message, no prompt cache.

    ``thinking_level`` is the session's: a reasoning model thinks at it while summarizing, as in Pi.
    """

    config: ProviderConfig
    thinking_level: str | None = None
    timeout: float = 120.0
    attempts: int = 3
    base_delay: float = 2.0
    sleep: Callable[[float], object] | None = None
    clock: Callable[[], int] = field(default=_now_ms)

    def summarize(self, request: SummaryRequest) -> SummaryResponse:
        """Return the model's answer; provider failures come back as stopReason "error"."""
        message = {
            "role": "user",
            "content": [{"type": "text", "text": request.prompt}],
            "timestamp": self.clock(),
        }
        # The model's output limit fitted into its window after the prompt, as Pi sends it.
        prompt_tokens = estimate_request_tokens(
            [{"role": "system", "content": SUMMARIZATION_SYSTEM_PROMPT}, message]
        )
        cap, budget = output_limits(
            self.config,
            prompt_tokens,
            request.max_output_tokens or self.config.max_output_tokens,
            self.thinking_level,
        )
        # A fresh routing id per summary: a summary must not be pinned to the chat's backend or cache.
        session_id = str(uuid.uuid4())

        def call() -> dict[str, Any]:
            return complete(
                self.config,
                system=SUMMARIZATION_SYSTEM_PROMPT,
                messages=[message],
                max_tokens=cap,
                session_id=session_id,
                cache=False,
                timeout=self.timeout,
                thinking_level=self.thinking_level,
                thinking_budget=budget,
            )

        return retry_transient(call, attempts=self.attempts, base_delay=self.base_delay, sleep=self.sleep)
