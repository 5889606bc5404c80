"""Long paths are read in windows: the branch pages towards the root, the context gives head and tail."""

from __future__ import annotations

from typing import Any

from sessions_app import services
from tests.factories import assistant_message as assistant
from tests.factories import session_file
from tests.factories import user_message as user


def _chain(n: int) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = []
    parent = None
    for i in range(n):
        make = user if i % 2 == 0 else assistant
        entries.append(make(f"e{i}", parent, f"message {i}"))
        parent = f"e{i}"
    entries.append(user("side", "e3", "a side branch"))  # a rewind, so the path spans segments
    entries.append(assistant("tip", f"e{n - 1}", "the tip"))
    return entries


def test_path_pages_from_the_leaf_towards_the_root(api_client: Any) -> None:
    session = services.import_jsonl(actor=api_client.user, data=session_file(_chain(30))).session
    url = f"/api/sessions/{session.pk}/path/"
    first = api_client.get(url, {"limit": 10}).json()
    assert [e["id"] for e in first["entries"]] == [f"e{i}" for i in range(21, 30)] + ["tip"]
    assert first["hasMore"] and first["firstDepth"] == 21
    older = api_client.get(url, {"limit": 25, "beforeDepth": first["firstDepth"]}).json()
    assert [e["id"] for e in older["entries"]] == [f"e{i}" for i in range(0, 21)]
    assert not older["hasMore"]
    side = api_client.get(url, {"leaf": "side"}).json()
    assert [e["id"] for e in side["entries"]] == ["e0", "e1", "e2", "e3", "side"]
    assert api_client.get(url, {"leaf": "nope"}).status_code == 404


def test_context_head_and_tail_keep_the_estimate_whole(api_client: Any) -> None:
    session = services.import_jsonl(actor=api_client.user, data=session_file(_chain(30))).session
    url = f"/api/sessions/{session.pk}/context/"
    whole = api_client.get(url).json()
    part = api_client.get(url, {"head": 2, "tail": 3, "llm": "false"}).json()
    assert part["messageCount"] == whole["messageCount"] == 31
    assert [m["entryId"] for m in part["messages"]] == ["e0", "e1", "e28", "e29", "tip"]
    assert part["skippedMessages"] == 26 and part["skippedAfter"] == 2
    assert part["estimate"] == whole["estimate"] and part["llmMessages"] is None


def test_context_pages_towards_the_head_with_before(api_client: Any) -> None:
    session = services.import_jsonl(actor=api_client.user, data=session_file(_chain(30))).session
    url = f"/api/sessions/{session.pk}/context/"
    page = api_client.get(url, {"head": 0, "tail": 4, "before": 27, "llm": "false"}).json()
    # The four messages just before index 27, and how many come before them.
    assert [m["entryId"] for m in page["messages"]] == ["e23", "e24", "e25", "e26"]
    assert page["skippedMessages"] == 23 and page["messageCount"] == 31
    last = api_client.get(url, {"head": 2, "tail": 4, "before": 3, "llm": "false"}).json()
    assert [m["entryId"] for m in last["messages"]] == ["e0", "e1", "e2"] and last["skippedMessages"] == 0
    assert api_client.get(url, {"before": 3}).status_code == 400  # only with tail


def test_entries_by_id_come_in_one_request_in_append_order(api_client: Any) -> None:
    session = services.import_jsonl(actor=api_client.user, data=session_file(_chain(30))).session
    url = f"/api/sessions/{session.pk}/entries/"
    body = api_client.get(url, {"id": ["e7", "side", "e2", "nope", "e7"]}).json()
    assert [e["id"] for e in body["entries"]] == ["e2", "e7", "side"]
    assert not body["hasMore"] and body["leafId"] == "tip"
    assert api_client.get(url, {"id": [f"e{i}" for i in range(101)]}).status_code == 400
    assert api_client.get(url, {"id": "e1", "since": "e0"}).status_code == 400


def test_a_context_is_built_once_and_still_follows_the_window_and_new_entries(
    api_client: Any, django_assert_max_num_queries: Any
) -> None:
    from providers.models import LLMProvider

    entries = _chain(30)
    entries[-1]["message"]["provider"], entries[-1]["message"]["model"] = "acme", "acme-1"
    session = services.import_jsonl(actor=api_client.user, data=session_file(entries)).session
    url = f"/api/sessions/{session.pk}/context/"
    params = {"head": 2, "tail": 3, "llm": "false", "render": 2}
    first = api_client.get(url, params).json()
    # The second reader gets the same answer from the cache: no projection, no rendering.
    with django_assert_max_num_queries(8):
        again = api_client.get(url, params).json()
    assert again == first
    # The admin sets the model's window: the next answer uses it.
    LLMProvider.objects.create(
        name="acme",
        api="openai-completions",
        base_url="http://127.0.0.1:9",
        model_id="acme-1",
        provider="acme",
        context_window=1000,
    )
    windowed = api_client.get(url, params).json()
    assert windowed["contextWindow"]["window"] == 1000
    assert windowed["contextWindow"]["used"] == first["breakdown"]["total"]
    # A new entry at the leaf is a new context.
    services.append_entries(
        session=session,
        actor=api_client.user,
        entries=[{"type": "message", "message": {"role": "user", "content": "more"}}],
    )
    session.refresh_from_db()
    grown = api_client.get(url, params).json()
    assert grown["messageCount"] == first["messageCount"] + 1
    assert grown["messages"][-1]["message"]["content"] == "more"
