"""What a comment body may hold, and the people it mentions.

A mention is ``@`` followed by a username, at the start of the text or after a character that cannot
be part of a word or an address (so ``me@example.com`` mentions nobody). A trailing full stop ends
the sentence, not the name.
"""

from __future__ import annotations

import re

__all__ = ["MAX_COMMENT_CHARS", "InvalidComment", "check_body", "mentioned_names", "snippet"]

# Long enough for a pasted stack trace, short enough to render and email without thought.
MAX_COMMENT_CHARS = 20_000

_MENTION = re.compile(r"(?<![\w@.+-])@([A-Za-z0-9_][A-Za-z0-9_.+-]{0,149})")


class InvalidComment(ValueError):
    """The comment cannot be stored as sent; the message names the problem."""

    def __init__(self, message: str, *, field: str = "body") -> None:
        super().__init__(message)
        self.message = message
        self.field = field


def check_body(body: object) -> str:
    """Return the body to store, or raise InvalidComment (empty, too long, or not storable text)."""
    if not isinstance(body, str):
        raise InvalidComment("The comment's body must be text.")
    if not body.strip():
        raise InvalidComment("The comment is empty.")
    if len(body) > MAX_COMMENT_CHARS:
        raise InvalidComment(
            f"The comment is {len(body)} characters long; at most {MAX_COMMENT_CHARS} are allowed."
        )
    if "\x00" in body or any(0xD800 <= ord(c) <= 0xDFFF for c in body):
        raise InvalidComment("The comment holds a NUL character or a lone surrogate, which cannot be stored.")
    return body


def mentioned_names(body: str) -> list[str]:
    """Return the usernames ``body`` mentions, each once, in the order they first appear."""
    names: list[str] = []
    for match in _MENTION.finditer(body):
        name = match.group(1).rstrip(".")
        if name and name not in names:
            names.append(name)
    return names


def snippet(body: str, limit: int = 140) -> str:
    """Return the body on one line, cut to ``limit`` characters with an ellipsis."""
    flat = " ".join(body.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
