"""What a session is called where no name was given: its first prompt, as Pi's session picker shows it."""

from __future__ import annotations

from documents.plain import plain_text

__all__ = ["TITLE_CHARS", "title_of"]

# Long enough to tell sessions apart in a list, short enough for a page title and a tab.
TITLE_CHARS = 80


def title_of(name: str, first_prompt: str, pi_id: str) -> str:
    """Return the session's name; without one, its first prompt as text on one line (Markdown marks
    dropped, cut with an ellipsis); without a prompt, its id."""
    if name.strip():
        return name
    flat = " ".join(plain_text(first_prompt).split())
    if flat:
        return flat if len(flat) <= TITLE_CHARS else flat[: TITLE_CHARS - 1].rstrip() + "…"
    return pi_id
