"""What a user's activity list shows of a log row's detail: secret-shaped keys never, long text cut."""

from __future__ import annotations

from audit.domain.activity import MAX_TEXT, public_detail


def test_secret_shaped_keys_are_dropped_at_any_depth_and_the_rest_kept() -> None:
    detail = {
        "name": "laptop",
        "token": "abc",
        "apiKey": "k",
        "Password": "p",
        "nested": {"scope": "path", "client_secret": "s"},
        "email": "x@example.test",
        "author": "olga",
    }
    assert public_detail(detail) == {"name": "laptop", "nested": {"scope": "path"}, "author": "olga"}


def test_long_text_is_cut_and_odd_details_read_as_empty() -> None:
    shown = public_detail({"reason": "x" * (MAX_TEXT * 3)})
    assert len(shown["reason"]) == MAX_TEXT and shown["reason"].endswith("…")
    assert public_detail(None) == {}
    assert public_detail(["not", "a", "mapping"]) == {}  # type: ignore[arg-type]
