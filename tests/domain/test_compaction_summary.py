"""Assembling a compaction from summaries, and refusing unusable summaries."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from compaction_app.domain.preparation import CompactionPreparation, prepare_compaction
from compaction_app.domain.prompts import SummaryKind
from compaction_app.domain.settings import CompactionSettings
from compaction_app.domain.summary import SummarizationError, SummaryRequest, compact
from pitree.entries import Entry


@dataclass
class Scripted:
    """Answer each request with the next scripted assistant message and remember the requests."""

    replies: list[dict[str, Any]]
    requests: list[SummaryRequest] = field(default_factory=list)

    def summarize(self, request: SummaryRequest) -> dict[str, Any]:
        self.requests.append(request)
        return self.replies.pop(0)


def _reply(text: str, stop: str = "stop", **extra: Any) -> dict[str, Any]:
    usage = {"input": 10, "output": 5, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 15}
    return {
        "role": "assistant",
        "content": [{"type": "text", "text": text}],
        "stopReason": stop,
        "usage": usage,
        **extra,
    }


def _path(*messages: tuple[str, dict[str, Any]]) -> list[Entry]:
    out: list[Entry] = []
    for entry_id, message in messages:
        parent = out[-1].id if out else None
        payload = {
            "type": "message",
            "id": entry_id,
            "parentId": parent,
            "timestamp": "2026-01-01T00:00:00Z",
            "message": message,
        }
        out.append(Entry(seq=len(out), id=entry_id, parent_id=parent, type="message", payload=payload))
    return out


def _user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text}]}


def _assistant(text: str, *calls: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": [{"type": "text", "text": text}, *calls], "stopReason": "stop"}


def _plan(keep: int, *messages: tuple[str, dict[str, Any]]) -> CompactionPreparation:
    prep = prepare_compaction(_path(*messages), CompactionSettings(keep_recent_tokens=keep))
    assert prep is not None
    return prep


def test_history_summary_gets_file_lists_and_details() -> None:
    edit = {"type": "toolCall", "id": "c1", "name": "edit", "arguments": {"path": "src/app.py"}}
    prep = _plan(
        2,  # "Thanks" alone is 2 tokens
        ("u1", _user("Fix the bug in src/app.py please")),
        ("a1", _assistant("Fixed it.", edit)),
        ("u2", _user("Thanks")),
    )
    summarizer = Scripted([_reply("## Goal\n- fix")])
    result = compact(prep, summarizer, "mention tests")
    assert result.summary == "## Goal\n- fix\n\n<modified-files>\nsrc/app.py\n</modified-files>"
    assert result.first_kept_entry_id == "u2"
    assert result.details == {"readFiles": [], "modifiedFiles": ["src/app.py"]}
    (request,) = summarizer.requests
    assert request.kind is SummaryKind.HISTORY
    assert request.prompt.startswith("<conversation>\n[User]: Fix the bug in src/app.py please")
    assert request.prompt.endswith("\n\nAdditional focus: mention tests")


def test_split_turn_without_history_uses_no_prior_history() -> None:
    prep = _plan(
        10,
        ("u1", _user("Refactor everything")),
        ("a1", _assistant("x" * 80)),
        ("a2", _assistant("y" * 80)),
    )
    assert prep.is_split_turn and not prep.history
    summarizer = Scripted([_reply("prefix summary")])
    result = compact(prep, summarizer)
    assert result.summary == "No prior history.\n\n---\n\n**Turn Context (split turn):**\n\nprefix summary"
    assert [r.kind for r in summarizer.requests] == [SummaryKind.TURN_PREFIX]
    assert summarizer.requests[0].prompt.startswith("# Conversation\n[User]: Refactor everything")


def test_split_turn_with_history_joins_both_and_adds_usage() -> None:
    prep = _plan(
        10,
        ("u0", _user("Earlier question")),
        ("a0", _assistant("Earlier answer")),
        ("u1", _user("Refactor everything")),
        ("a1", _assistant("x" * 80)),
        ("a2", _assistant("y" * 80)),
    )
    result = compact(prep, Scripted([_reply("history"), _reply("prefix")]))
    assert result.summary == "history\n\n---\n\n**Turn Context (split turn):**\n\nprefix"
    assert result.usage is not None and result.usage["totalTokens"] == 30


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        (_reply("", "error", errorMessage="rate limited"), "Summarization failed: rate limited"),
        (_reply("", "error"), "Summarization failed: Unknown error"),
        (
            _reply("partial", "length"),
            "Summarization failed: generation hit the token cap and the summary is incomplete",
        ),
        (
            {
                "role": "assistant",
                "stopReason": "toolUse",
                "content": [{"type": "toolCall", "id": "t", "name": "read", "arguments": {}}],
            },
            "Summarization attempted to call a tool",
        ),
    ],
)
def test_unusable_summaries_are_refused(reply: dict[str, Any], message: str) -> None:
    prep = _plan(2, ("u1", _user("Question one")), ("a1", _assistant("Answer one")), ("u2", _user("Thanks")))
    with pytest.raises(SummarizationError) as caught:
        compact(prep, Scripted([reply]))
    assert str(caught.value) == message


def test_turn_prefix_failure_names_the_turn_prefix() -> None:
    prep = _plan(10, ("u1", _user("Refactor")), ("a1", _assistant("x" * 80)), ("a2", _assistant("y" * 80)))
    with pytest.raises(SummarizationError, match=r"^Turn prefix summarization failed: boom$"):
        compact(prep, Scripted([_reply("", "error", errorMessage="boom")]))
