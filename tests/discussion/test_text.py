"""Comment bodies and mentions, without a database."""

from __future__ import annotations

import pytest

from discussion.domain.text import MAX_COMMENT_CHARS, InvalidComment, check_body, mentioned_names


def test_mentions_are_found_once_in_order_and_addresses_are_not_mentions() -> None:
    body = "@bob look, @alice. mail me@example.com or ask @bob again (@carol_2)"
    assert mentioned_names(body) == ["bob", "alice", "carol_2"]


@pytest.mark.parametrize("body", ["", "   \n\t"])
def test_an_empty_comment_is_refused(body: str) -> None:
    with pytest.raises(InvalidComment, match="empty"):
        check_body(body)


def test_an_oversized_comment_is_refused_with_both_lengths() -> None:
    with pytest.raises(
        InvalidComment, match=f"{MAX_COMMENT_CHARS + 1} characters.*at most {MAX_COMMENT_CHARS}"
    ):
        check_body("x" * (MAX_COMMENT_CHARS + 1))
    assert check_body("x" * MAX_COMMENT_CHARS) == "x" * MAX_COMMENT_CHARS


def test_unstorable_text_is_refused() -> None:
    with pytest.raises(InvalidComment, match="NUL"):
        check_body("a\x00b")


def test_a_preview_reads_markdown_as_text() -> None:
    from documents.plain import plain_text

    assert plain_text("**why** is `x` _so_ slow?") == "why is x so slow?"
    assert plain_text("# Plan\n- [docs](https://example.com/docs)\n> quoted") == "Plan\ndocs\nquoted"
    assert plain_text("snake_case_name and 2*3*4") == "snake_case_name and 2*3*4"
    assert plain_text("![chart](c.png) ~~old~~ new") == "chart old new"
