"""Agent messages: building the summary and custom roles, and converting them to LLM messages.

Messages are plain dicts in Pi's wire shape, so what piweb stores, shows and sends is the same JSON.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pitree.jsjson import js_truthy
from pitree.timestamps import js_date_ms

__all__ = [
    "BRANCH_SUMMARY_PREFIX",
    "BRANCH_SUMMARY_SUFFIX",
    "COMPACTION_SUMMARY_PREFIX",
    "COMPACTION_SUMMARY_SUFFIX",
    "bash_execution_to_text",
    "branch_summary_message",
    "compaction_summary_message",
    "content_text",
    "convert_to_llm",
    "custom_message",
]

COMPACTION_SUMMARY_PREFIX = (
    "The conversation history before this point was compacted into the following summary:\n\n<summary>\n"
)
COMPACTION_SUMMARY_SUFFIX = "\n</summary>"
BRANCH_SUMMARY_PREFIX = (
    "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n"
)
BRANCH_SUMMARY_SUFFIX = "</summary>"


def _ms(timestamp: Any) -> float | int:
    value = js_date_ms(timestamp)
    return int(value) if value == value else value


def custom_message(
    custom_type: Any, content: Any, display: Any, details: Any, timestamp: Any, *, missing: Iterable[str] = ()
) -> dict[str, Any]:
    """Return a ``custom`` role message built from a ``custom_message`` entry."""
    message: dict[str, Any] = {
        "role": "custom",
        "customType": custom_type,
        "content": content,
        "display": display,
        "details": details,
        "timestamp": _ms(timestamp),
    }
    for key in missing:
        message.pop(key, None)
    return message


def branch_summary_message(summary: Any, from_id: Any, timestamp: Any) -> dict[str, Any]:
    """Return the ``branchSummary`` role message for a ``branch_summary`` entry."""
    return {"role": "branchSummary", "summary": summary, "fromId": from_id, "timestamp": _ms(timestamp)}


def compaction_summary_message(summary: Any, tokens_before: Any, timestamp: Any) -> dict[str, Any]:
    """Return the ``compactionSummary`` role message for a ``compaction`` entry."""
    return {
        "role": "compactionSummary",
        "summary": summary,
        "tokensBefore": tokens_before,
        "timestamp": _ms(timestamp),
    }


def content_text(content: Any, separator: str = "") -> str:
    """Return a string content as is, or the text blocks of an array joined with ``separator``."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return separator.join(
        block["text"]
        for block in content
        if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str)
    )


def bash_execution_to_text(message: Mapping[str, Any]) -> str:
    """Render a ``bashExecution`` message as the user text the model sees."""
    text = f"Ran `{_js_str(message.get('command'))}`\n"
    output = message.get("output")
    if js_truthy(output):
        text += f"```\n{_js_str(output)}\n```"
    else:
        text += "(no output)"
    if js_truthy(message.get("cancelled")):
        text += "\n\n(command cancelled)"
    else:
        code = message.get("exitCode")
        if code is not None and code != 0:
            text += f"\n\nCommand exited with code {_js_str(code)}"
    if js_truthy(message.get("truncated")) and js_truthy(message.get("fullOutputPath")):
        text += f"\n\n[Output truncated. Full output: {_js_str(message.get('fullOutputPath'))}]"
    return text


def _js_str(value: Any) -> str:
    """Return ``String(value)`` for the values a message can hold."""
    from pitree.jsjson import js_number

    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int | float):
        return js_number(value)
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return ",".join("" if v is None else _js_str(v) for v in value)
    return "[object Object]"


def convert_to_llm(messages: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Convert agent messages to the user/assistant/toolResult/system messages a model receives."""
    out: list[dict[str, Any]] = []
    for message in messages:
        role = message.get("role")
        if role == "bashExecution":
            if js_truthy(message.get("excludeFromContext")):
                continue
            out.append(
                {
                    "role": "user",
                    "content": [{"type": "text", "text": bash_execution_to_text(message)}],
                    "timestamp": message.get("timestamp"),
                }
            )
        elif role == "custom":
            content = message.get("content")
            if isinstance(content, str):
                content = [{"type": "text", "text": content}]
            out.append({"role": "user", "content": content, "timestamp": message.get("timestamp")})
        elif role == "branchSummary":
            text = BRANCH_SUMMARY_PREFIX + _js_str(message.get("summary")) + BRANCH_SUMMARY_SUFFIX
            out.append(
                {
                    "role": "user",
                    "content": [{"type": "text", "text": text}],
                    "timestamp": message.get("timestamp"),
                }
            )
        elif role == "compactionSummary":
            text = COMPACTION_SUMMARY_PREFIX + _js_str(message.get("summary")) + COMPACTION_SUMMARY_SUFFIX
            out.append(
                {
                    "role": "user",
                    "content": [{"type": "text", "text": text}],
                    "timestamp": message.get("timestamp"),
                }
            )
        elif role in ("system", "user", "assistant", "toolResult"):
            out.append(dict(message))
    return out
