"""Markdown read as plain text, for one-line previews, titles and inbox lines (pure)."""

from __future__ import annotations

import re

__all__ = ["plain_text"]


_FENCE = re.compile(r"```[^\n]*\n?")
_IMAGE = re.compile(r"!\[([^\]]*)\]\([^)]*\)")
_LINK = re.compile(r"\[([^\]]+)\]\([^)]*\)")
_LINE_MARK = re.compile(r"^\s{0,3}(?:#{1,6}|>|[-*+]|\d+[.)])\s+", re.MULTILINE)
_STRONG = re.compile(r"(\*\*|__)(?=\S)(.*?\S)\1", re.DOTALL)
_EMPHASIS = re.compile(r"(^|[^\w*])([*_])(?=\S)([^*_\n]*?\S)\2(?!\w)")
_CODE = re.compile(r"`([^`]*)`")
_STRIKE = re.compile(r"~~(.*?)~~")


def plain_text(body: str) -> str:
    """Return Markdown as text for a one-line preview: what the marks mean stays, the marks go."""
    text = _FENCE.sub(" ", body)
    text = _IMAGE.sub(r"\1", text)
    text = _LINK.sub(r"\1", text)
    text = _LINE_MARK.sub("", text)
    text = _STRONG.sub(r"\2", text)
    text = _EMPHASIS.sub(r"\1\3", text)
    text = _CODE.sub(r"\1", text)
    return _STRIKE.sub(r"\1", text)
