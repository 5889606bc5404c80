"""Tidy Pi LLM-form messages before they are put on the wire."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from pitree.tree import js_trim
from providers.llm.types import Message, ProviderConfig

_MISSING_RESULT = "No result provided"
# What a text-only model reads in place of pictures: Pi's notes, word for word, so both send the same.
USER_IMAGE_OMITTED = "(image omitted: model does not support images)"
TOOL_IMAGE_OMITTED = "(tool image omitted: model does not support images)"
# What Pi sends as a tool result's text when it has none, word for word.
SEE_ATTACHED_IMAGE = "(see attached image)"
NO_TOOL_OUTPUT = "(no tool output)"


def _without_images(content: Iterable[Mapping[str, Any]], note: str) -> list[Message]:
    """Each run of pictures becomes one note; a picture right after the note (or a text equal to it)
    adds none."""
    out: list[Message] = []
    after_note = False
    for block in content:
        if block.get("type") == "image":
            if not after_note:
                out.append({"type": "text", "text": note})
            after_note = True
            continue
        out.append(dict(block))
        after_note = block.get("text") == note
    return out


def omit_images(message: Mapping[str, Any]) -> Mapping[str, Any]:
    """A message as a text-only model receives it: user and tool-result pictures replaced by notes."""
    role, content = message.get("role"), message.get("content")
    if role == "user" and isinstance(content, list):
        return {**message, "content": _without_images(content, USER_IMAGE_OMITTED)}
    if role == "toolResult" and isinstance(content, list):
        return {**message, "content": _without_images(content, TOOL_IMAGE_OMITTED)}
    return message


def _replayable(block: Mapping[str, Any], same_model: bool) -> Message | None:
    """One assistant block as ``config``'s model may be sent it; None when it is left out.

    Reasoning is only the model's own to read: another model's thinking is dropped (its signature or
    sealed data is void elsewhere, and as text it would read as part of the reply), and so are the
    signatures on text and tool calls. The model's own thinking is kept while it holds something to
    replay: a seal or signature, or text that is not blank.
    """
    kind = block.get("type")
    if kind == "thinking":
        if not same_model:
            return None
        if block.get("redacted") or block.get("thinkingSignature"):
            return dict(block)
        return dict(block) if js_trim(str(block.get("thinking") or "")) else None
    if same_model:
        return dict(block)
    if kind == "text":
        return {"type": "text", "text": block.get("text")}
    if kind == "toolCall":
        return {k: v for k, v in block.items() if k != "thoughtSignature"}
    return dict(block)


def for_model(
    messages: Iterable[Mapping[str, Any]],
    config: ProviderConfig,
    rename_call: Callable[[str], str] | None = None,
) -> list[Message]:
    """The messages as ``config``'s model is sent them: other models' turns stripped of what only their
    own model can read, and their tool call ids rewritten by ``rename_call`` (with the results that
    answer them) where the wire format takes fewer ids than the other provider made."""
    out: list[Message] = []
    renamed: dict[str, str] = {}
    for message in messages:
        message = {**message, "content": []} if message.get("content") is None else dict(message)
        role = message.get("role")
        if role == "toolResult":
            new_id = renamed.get(str(message.get("toolCallId")))
            if new_id is not None:
                message["toolCallId"] = new_id
        elif role == "assistant":
            same = (message.get("provider"), message.get("api"), message.get("model")) == (
                config.provider,
                config.api,
                config.model_id,
            )
            content = []
            for block in message["content"]:
                kept = _replayable(block, same)
                if kept is None:
                    continue
                if not same and rename_call is not None and kept.get("type") == "toolCall":
                    old = str(kept.get("id"))
                    if (new := rename_call(old)) != old:
                        renamed[old] = new
                        kept["id"] = new
                content.append(kept)
            message["content"] = content
        out.append(message)
    return out


def prepare_messages(messages: Iterable[Mapping[str, Any]], *, accepts_images: bool = True) -> list[Message]:
    """Drop failed turns and pair every tool call with exactly one result.

    Failed or aborted assistant turns are partial and providers reject replaying them. Both wire formats
    require each tool call to be answered before the next turn, so unanswered calls get an error result
    and results whose call is gone are dropped. A model that takes no pictures gets notes in their place.
    """
    if not accepts_images:
        messages = [omit_images(m) for m in messages]
    out: list[Message] = []
    pending: dict[str, str] = {}  # open tool call id -> tool name

    def close_pending() -> None:
        for call_id, name in pending.items():
            out.append(
                {
                    "role": "toolResult",
                    "toolCallId": call_id,
                    "toolName": name,
                    "content": [{"type": "text", "text": _MISSING_RESULT}],
                    "isError": True,
                    "timestamp": 0,
                }
            )
        pending.clear()

    for message in messages:
        role = message.get("role")
        if role == "toolResult":
            if pending.pop(str(message.get("toolCallId")), None) is not None:
                out.append(dict(message))
            continue
        close_pending()
        if role == "assistant":
            if message.get("stopReason") in ("error", "aborted") or not message.get("content"):
                continue
            pending = {b["id"]: b["name"] for b in message["content"] if b.get("type") == "toolCall"}
        out.append(dict(message))
    close_pending()
    return out


def text_of(content: str | Iterable[Mapping[str, Any]]) -> str:
    """Join the text blocks of a content field."""
    if isinstance(content, str):
        return content
    return "\n".join(b["text"] for b in content if b.get("type") == "text")


def images_of(content: str | Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Return the image blocks of a content field."""
    return [] if isinstance(content, str) else [b for b in content if b.get("type") == "image"]
