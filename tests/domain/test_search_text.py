"""What an entry offers to search: the text people read, never thinking or tool arguments."""

from __future__ import annotations

import pytest

from pitree.searchable import (
    MAX_SEARCH_CHARS,
    marked,
    parse_query,
    query_terms,
    search_text,
    snippet,
)


def test_message_text_blocks_are_searchable_but_thinking_and_tool_calls_are_not() -> None:
    value = {
        "type": "message",
        "message": {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "secret plan"},
                {"type": "text", "text": "Visible answer"},
                {"type": "toolCall", "id": "c", "name": "bash", "arguments": {"command": "rm -rf"}},
            ],
        },
    }
    assert search_text(value) == "Visible answer"


def test_string_content_summaries_bash_and_custom_messages() -> None:
    assert search_text({"type": "message", "message": {"role": "user", "content": "plain"}}) == "plain"
    bash = {"type": "message", "message": {"role": "bashExecution", "command": "ls", "output": "a.txt"}}
    assert search_text(bash) == "ls\na.txt"
    assert search_text({"type": "compaction", "summary": "did things"}) == "did things"
    assert search_text({"type": "branch_summary", "summary": "left branch"}) == "left branch"
    assert search_text({"type": "custom_message", "content": [{"type": "text", "text": "ext"}]}) == "ext"
    assert search_text({"type": "label", "label": "x"}) == ""
    assert search_text(["not", "an", "object"]) == ""


def test_text_is_capped_and_cleaned_of_what_a_database_cannot_store() -> None:
    huge = {"type": "message", "message": {"role": "user", "content": "y" * (MAX_SEARCH_CHARS + 10)}}
    assert len(search_text(huge)) == MAX_SEARCH_CHARS
    odd = {"type": "message", "message": {"role": "user", "content": "a\x00b\ud800c"}}
    assert search_text(odd) == "a b c"


def test_query_words_and_snippet_around_the_first_match() -> None:
    # What a hit is marked with: not the operator "or", not a word the query excludes.
    assert query_terms('"Connection refused" OR -Port port') == ["connection", "refused", "port"]
    assert query_terms("order -error") == ["order"] and query_terms("-error") == []
    text = "x " * 200 + "the Needle is here" + " y" * 200
    piece = snippet(text, ["needle"])
    assert "Needle" in piece and piece.startswith("…") and piece.endswith("…") and len(piece) < 200


def test_snippets_mark_every_occurrence_of_each_query_word_as_written() -> None:
    pieces = marked("Cache the CACHE, then cachecache; parse", ["cache", "parse"])
    assert pieces == [
        ("Cache", True),
        (" the ", False),
        ("CACHE", True),
        (", then ", False),
        ("cache", True),
        ("cache", True),
        ("; ", False),
        ("parse", True),
    ]
    assert "".join(text for text, _ in marked("overlap: abcd", ["abc", "bcd"])) == "overlap: abcd"
    assert marked("nothing here", ["kumquat"]) == [("nothing here", False)]


Condition = tuple[tuple[str, ...], bool]  # the words, and whether they must not occur


@pytest.mark.parametrize(
    ("query", "groups"),
    [
        ("Cache flush", [[(("cache",), False), (("flush",), False)]]),
        ('"cache invalidation" -flaky', [[(("cache", "invalidation"), False), (("flaky",), True)]]),
        ("a or b c", [[(("a",), False)], [(("b",), False), (("c",), False)]]),
        ('-"x y" z', [[(("x", "y"), True), (("z",), False)]]),
        ("src/app.py", [[(("src", "app", "py"), False)]]),
        ('"an unclosed phrase', [[(("an", "unclosed", "phrase"), False)]]),
        ("or", []),
        ("- -- or", []),
        ("", []),
    ],
)
def test_queries_read_as_web_search_syntax(query: str, groups: list[list[Condition]]) -> None:
    assert [[(m.words, m.negated) for m in group] for group in parse_query(query)] == groups
