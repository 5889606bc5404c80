"""The one rule for what can be stored, without a database."""

from __future__ import annotations

from typing import Any

import pytest

from pitree.storable import (
    MAX_DEPTH,
    NOT_STORABLE,
    Unstorable,
    check_json,
    check_param,
    check_text,
    storable_text,
)


@pytest.mark.parametrize("text", ["a\x00b", "\ud800", "x\udfffy"])
def test_nul_and_lone_surrogates_are_not_storable(text: str) -> None:
    assert not storable_text(text)
    with pytest.raises(Unstorable) as caught:
        check_text(text, "the name")
    assert str(caught.value) == f"the name {NOT_STORABLE}"


@pytest.mark.parametrize(
    "text", ["", "plain", "ünïcödé", "😀", "\ud83d\ude00".encode("utf-16", "surrogatepass").decode("utf-16")]
)
def test_ordinary_text_is_storable(text: str) -> None:
    assert storable_text(text)
    check_text(text, "the name")


def test_length_limits_are_part_of_the_message() -> None:
    with pytest.raises(Unstorable, match="longer than 10 characters"):
        check_text("x" * 11, "the label", max_chars=10)
    with pytest.raises(Unstorable):
        check_param("x" * 100_000, "the query parameter 'q'")


def test_depth_is_checked_without_recursion() -> None:
    value: Any = "leaf"
    for _ in range(100_000):
        value = [value]
    with pytest.raises(Unstorable, match=f"deeper than {MAX_DEPTH}"):
        check_json(value, "entry 1")
    shallow: Any = "leaf"
    for _ in range(MAX_DEPTH - 1):
        shallow = [shallow]
    check_json(shallow, "entry 1")


def test_keys_and_nested_strings_are_checked() -> None:
    with pytest.raises(Unstorable, match="key"):
        check_json({"a\x00": 1}, "entry 1")
    with pytest.raises(Unstorable, match="string"):
        check_json({"a": [{"b": "\ud800"}]}, "entry 1")
    check_json({"a": [1, 2.5, None, True, {"b": "ok"}]}, "entry 1")
