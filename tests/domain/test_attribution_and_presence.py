"""Authors and viewers as plain values: identity, how they are named, who is still there."""

from __future__ import annotations

import pytest

from live.presence_rules import Viewer, decode, encode, live, roster
from pitree.attribution import Author


def test_equal_authors_share_a_key_and_any_difference_makes_another() -> None:
    eddie = Author(kind="user", name="eddie", user_id=7)
    assert eddie.key() == Author(kind="user", name="eddie", user_id=7).key()
    others = [
        Author(kind="device", name="eddie", user_id=7, via="laptop"),
        Author(kind="device", name="eddie", user_id=7, via="desk"),
        Author(kind="user", name="eddie", user_id=7, imported=True),
        Author(kind="user", name="eddie", user_id=8),
        Author(kind="run", name="eddie", user_id=7, via="r1"),
    ]
    assert len({eddie.key(), *(a.key() for a in others)}) == 6


def test_an_author_is_named_as_the_card_shows_it() -> None:
    assert Author(kind="user", name="eddie").label() == "eddie"
    assert Author(kind="device", name="eddie", via="laptop").label() == "eddie via laptop"
    assert Author(kind="run", name="eddie", via="r1").label() == "run started by eddie"
    assert Author(kind="link", name="link visitor", via="abc").label() == "link visitor"
    assert Author(kind="system", name="compaction-worker").label() == "compaction-worker"
    assert Author(kind="user", name="eddie", imported=True).label() == "imported by eddie"
    with pytest.raises(ValueError, match="unknown author kind 'robot'"):
        Author(kind="robot", name="x")


def viewer(key: str, kind: str, name: str, expires: float, node: str | None = None) -> Viewer:
    user_id = None if kind == "link" else 1
    return Viewer(key=key, kind=kind, user_id=user_id, name=name, node=node, expires=expires)


def test_viewers_past_their_expiry_are_gone_and_junk_is_skipped() -> None:
    stored = [viewer("a", "user", "ada", 10.0), viewer("b", "user", "bob", 5.0)]
    assert [v.key for v in live(stored, now=7.0)] == ["a"]
    assert decode(encode(stored[0])) == stored[0]
    assert decode("not json") is None and decode("[1]") is None and decode('{"key": 1}') is None


def test_members_see_people_by_name_and_link_holders_only_as_link_visitors() -> None:
    shown = roster(
        [
            viewer("l1", "link", "", 9.0, "n2"),
            viewer("z", "user", "zoe", 9.0),
            viewer("a", "user", "Ada", 9.0, "n1"),
        ]
    )
    assert [(v["name"], v["kind"], v["node"], v["userId"]) for v in shown] == [
        ("Ada", "user", "n1", 1),
        ("zoe", "user", None, 1),
        ("link visitor", "link", "n2", None),
    ]
