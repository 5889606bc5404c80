"""Turn a compaction plan into a compaction: ask for summaries, check them, and assemble the result.

Only the summarizer behind the ``Summarizer`` protocol touches the outside world. A response that
failed, was cut off by the output cap, or tried to call a tool is refused with Pi's message, and
then nothing is produced: a partial summary would silently lose history.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from compaction_app.domain.fileops import compute_file_lists, format_file_operations
from compaction_app.domain.preparation import CompactionPreparation
from compaction_app.domain.prompts import SummaryKind, build_prompt
from compaction_app.domain.serialization import serialize_conversation
from pitree.jsjson import js_truthy
from pitree.messages import content_text, convert_to_llm

__all__ = [
    "BRANCH_LABEL",
    "HISTORY_LABEL",
    "NO_PRIOR_HISTORY",
    "OFFLINE_API",
    "SPLIT_TURN_SEPARATOR",
    "TURN_PREFIX_LABEL",
    "CompactionResult",
    "SummarizationAborted",
    "SummarizationError",
    "Summarizer",
    "SummaryRequest",
    "SummaryResponse",
    "combine_usage",
    "compact",
    "response_text",
    "summarization_failure",
    "validated_summary",
    "with_offline_mark",
]

SPLIT_TURN_SEPARATOR = "\n\n---\n\n**Turn Context (split turn):**\n\n"
NO_PRIOR_HISTORY = "No prior history."
HISTORY_LABEL = "Summarization"
TURN_PREFIX_LABEL = "Turn prefix summarization"
BRANCH_LABEL = "Branch summarization"
NO_FIRST_KEPT_ID = "First kept entry has no UUID - session may need migration"

# A Pi-shaped assistant message: content, stopReason, usage, errorMessage, provider, model, timestamp.
SummaryResponse = Mapping[str, Any]


@dataclass(frozen=True, slots=True, kw_only=True)
class SummaryRequest:
    """One summary to write: the transcript, what kind of summary, and the output cap."""

    kind: SummaryKind
    conversation: str  # serialize_conversation output
    previous_summary: str | None = None
    custom_instructions: str | None = None
    replace_instructions: bool = False  # branch summaries only: the custom text is the whole instruction
    max_output_tokens: int | None = None  # None: the summarizer's own limit

    @property
    def prompt(self) -> str:
        """Return the user text a model receives for this request."""
        return build_prompt(
            self.kind,
            self.conversation,
            previous_summary=self.previous_summary,
            custom_instructions=self.custom_instructions,
            replace_instructions=self.replace_instructions,
        )


class Summarizer(Protocol):
    def summarize(self, request: SummaryRequest) -> SummaryResponse:
        """Return the assistant message answering ``request``; failures come back in it, not raised."""
        ...


class SummarizationError(Exception):
    """A summary could not be produced; the message is the one users see."""


class SummarizationAborted(SummarizationError):
    """The summary call was cancelled."""


@dataclass(frozen=True, slots=True, kw_only=True)
class CompactionResult:
    """What a compaction entry records."""

    summary: str
    first_kept_entry_id: str
    tokens_before: float
    details: dict[str, Any]  # {"readFiles", "modifiedFiles"}, and "offline": true without a model
    usage: dict[str, Any] | None


# The ``api`` of a summary written without a model. Entries built from such summaries say so in their
# ``details`` (``"offline": true``), so readers (and the UI) can tell them from a model's summaries.
OFFLINE_API = "offline"


def with_offline_mark(details: dict[str, Any], responses: Sequence[SummaryResponse]) -> dict[str, Any]:
    """Add ``"offline": true`` to an entry's details when every summary in it came from no model."""
    if responses and all(r.get("api") == OFFLINE_API for r in responses):
        return {**details, "offline": True}
    return details


def response_text(response: SummaryResponse) -> str:
    """Return the text blocks of a response joined by newlines."""
    return content_text(response.get("content"), "\n")


def summarization_failure(
    response: SummaryResponse, label: str, *, check_aborted: bool = False
) -> str | None:
    """Return why a response cannot be used as a summary, or None when it can."""
    stop = response.get("stopReason")
    if check_aborted and stop == "aborted":
        return f"{label} aborted"
    if stop == "error":
        message = response.get("errorMessage")
        return f"{label} failed: {message if js_truthy(message) else 'Unknown error'}"
    if stop == "length":
        return f"{label} failed: generation hit the token cap and the summary is incomplete"
    content = response.get("content")
    if isinstance(content, list) and any(
        isinstance(b, Mapping) and b.get("type") == "toolCall" for b in content
    ):
        return f"{label} attempted to call a tool"
    return None


def validated_summary(response: SummaryResponse, label: str, *, check_aborted: bool = False) -> str:
    """Return the response's summary text; raise SummarizationError when it is unusable."""
    failure = summarization_failure(response, label, check_aborted=check_aborted)
    if failure is not None:
        if check_aborted and response.get("stopReason") == "aborted":
            raise SummarizationAborted(failure)
        raise SummarizationError(failure)
    return response_text(response)


def _num(value: Any) -> float:
    return value if isinstance(value, int | float) and not isinstance(value, bool) else 0


def _add_usage(first: Mapping[str, Any], second: Mapping[str, Any]) -> dict[str, Any]:
    """Two calls' usage added as Pi adds them: optional counters only when either has them, and a
    total that counts as the provider's only when both were."""
    out: dict[str, Any] = {k: _num(first.get(k)) + _num(second.get(k)) for k in ("input", "output")}
    out["cacheRead"] = _num(first.get("cacheRead")) + _num(second.get("cacheRead"))
    out["cacheWrite"] = _num(first.get("cacheWrite")) + _num(second.get("cacheWrite"))
    for optional in ("cacheWrite1h", "reasoning"):
        if optional in first or optional in second:
            out[optional] = _num(first.get(optional)) + _num(second.get(optional))
    out["totalTokens"] = _num(first.get("totalTokens")) + _num(second.get("totalTokens"))
    one = _cost_of(first)
    two = _cost_of(second)
    cost: dict[str, Any] = {
        k: _num(one.get(k)) + _num(two.get(k))
        for k in ("input", "output", "cacheRead", "cacheWrite", "total")
    }
    cost["totalFromProvider"] = one.get("totalFromProvider") is True and two.get("totalFromProvider") is True
    out["cost"] = cost
    return out


def combine_usage(usages: Sequence[Mapping[str, Any] | None]) -> dict[str, Any] | None:
    """Return the usage of several calls added together (costs included), or None without any."""
    present = [u for u in usages if isinstance(u, Mapping)]
    if not present:
        return None
    total = dict(present[0])
    for usage in present[1:]:
        total = _add_usage(total, usage)
    return total


def _transcript(messages: Sequence[Mapping[str, Any]]) -> str:
    return serialize_conversation(convert_to_llm(messages))


def compact(
    prep: CompactionPreparation,
    summarizer: Summarizer,
    custom_instructions: str | None = None,
    *,
    max_output_tokens: int | None = None,
) -> CompactionResult:
    """Summarise a prepared compaction; raise SummarizationError when any summary is unusable."""
    if not prep.first_kept_entry_id:
        raise SummarizationError(NO_FIRST_KEPT_ID)
    previous = prep.previous_summary if isinstance(prep.previous_summary, str) else None
    usages: list[Mapping[str, Any] | None] = []
    responses: list[SummaryResponse] = []

    def history_summary() -> str:
        request = SummaryRequest(
            kind=SummaryKind.UPDATE if previous else SummaryKind.HISTORY,
            conversation=_transcript(prep.messages_to_summarize),
            previous_summary=previous,
            custom_instructions=custom_instructions,
            max_output_tokens=max_output_tokens,
        )
        response = summarizer.summarize(request)
        text = validated_summary(response, HISTORY_LABEL)
        usages.append(response.get("usage"))
        responses.append(response)
        return text

    if prep.is_split_turn and prep.turn_prefix:
        if prep.history:
            history = history_summary()
        else:
            # Nothing new before the split turn: the previous summary (if any) still stands as is.
            history = (
                previous if prep.previous_summary is not None and previous is not None else NO_PRIOR_HISTORY
            )
        request = SummaryRequest(
            kind=SummaryKind.TURN_PREFIX,
            conversation=_transcript(prep.turn_prefix_messages),
            custom_instructions=custom_instructions,
            max_output_tokens=max_output_tokens,
        )
        response = summarizer.summarize(request)
        prefix = validated_summary(response, TURN_PREFIX_LABEL)
        usages.append(response.get("usage"))
        responses.append(response)
        summary = history + SPLIT_TURN_SEPARATOR + prefix
    else:
        summary = history_summary()

    read_files, modified_files = compute_file_lists(prep.file_ops)
    summary += format_file_operations(read_files, modified_files)
    return CompactionResult(
        summary=summary,
        first_kept_entry_id=prep.first_kept_entry_id,
        tokens_before=prep.tokens_before,
        details=with_offline_mark({"readFiles": read_files, "modifiedFiles": modified_files}, responses),
        usage=combine_usage(usages),
    )


def _cost_of(usage: Mapping[str, Any]) -> Mapping[str, Any]:
    cost = usage.get("cost")
    return cost if isinstance(cost, Mapping) else {}
