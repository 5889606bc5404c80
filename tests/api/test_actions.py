"""Navigation, labels, fork, clone, context and the tree overview through the API."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import override_settings

from sessions_app.models import ChatSession

pytestmark = pytest.mark.django_db

_started: list[dict[str, Any]] = []


def start_branch_summary(**kwargs: Any) -> str:
    """Stand in for the compaction app's starter, recording what the API passed."""
    _started.append(kwargs)
    return "op-1"


def test_navigate_to_user_message_returns_its_text(api_client: Any, stored: Any) -> None:
    url = f"/api/sessions/{stored.pk}/navigate/"
    response = api_client.post(url, {"targetId": "u2"}, format="json")
    assert response.status_code == 200
    assert response.json() == {"leafId": "a1", "editorText": "first question"}
    assert api_client.post(url, {"targetId": "a2"}, format="json").json() == {"leafId": "a2"}
    assert api_client.get(f"/api/sessions/{stored.pk}/").json()["leafId"] == "a2"


def test_navigate_unknown_target_is_404(api_client: Any, stored: Any) -> None:
    response = api_client.post(f"/api/sessions/{stored.pk}/navigate/", {"targetId": "zz"}, format="json")
    assert response.status_code == 404 and response.json()["error"] == "Entry zz not found"


def test_navigate_with_summary_without_a_starter_is_501(api_client: Any, stored: Any) -> None:
    url = f"/api/sessions/{stored.pk}/navigate/"
    with override_settings(PIWEB_BRANCH_SUMMARY_STARTER=None):
        response = api_client.post(url, {"targetId": "a2", "summarize": True}, format="json")
    assert response.status_code == 501 and "not available" in response.json()["error"]
    assert api_client.get(f"/api/sessions/{stored.pk}/").json()["leafId"] == "a3"


def test_navigate_with_summary_calls_the_configured_starter(api_client: Any, stored: Any) -> None:
    with override_settings(PIWEB_BRANCH_SUMMARY_STARTER=f"{__name__}.start_branch_summary"):
        response = api_client.post(
            f"/api/sessions/{stored.pk}/navigate/",
            {"targetId": "a2", "summarize": True, "customInstructions": "focus"},
            format="json",
        )
    assert response.status_code == 202 and response.json() == {"operationId": "op-1"}
    assert _started[-1]["target_id"] == "a2" and _started[-1]["custom_instructions"] == "focus"


def test_labels_set_and_clear(api_client: Any, stored: Any) -> None:
    url = f"/api/sessions/{stored.pk}/labels/"
    response = api_client.post(url, {"targetId": "u2", "label": "checkpoint"}, format="json")
    assert response.status_code == 201
    entry = response.json()["entry"]["entry"]
    assert entry["type"] == "label" and entry["targetId"] == "u2" and entry["label"] == "checkpoint"
    assert entry["parentId"] == "a3" and response.json()["leafId"] == entry["id"]
    tree = api_client.get(f"/api/sessions/{stored.pk}/tree/").json()
    assert [n.get("label") for n in tree["items"] if n.get("id") == "u2"] == ["checkpoint"]
    cleared = api_client.post(url, {"targetId": "u2", "label": None}, format="json").json()["entry"]["entry"]
    assert "label" not in cleared
    tree = api_client.get(f"/api/sessions/{stored.pk}/tree/").json()
    assert all("label" not in n for n in tree["items"])
    missing = api_client.post(url, {"targetId": "zz", "label": "x"}, format="json")
    assert missing.status_code == 404


def test_fork_before_user_message_copies_the_path_and_records_provenance(
    api_client: Any, stored: Any
) -> None:
    response = api_client.post(f"/api/sessions/{stored.pk}/fork/", {"entryId": "u3"}, format="json")
    assert response.status_code == 201
    body = response.json()
    assert body["editorText"] == "second question"
    new = body["session"]
    assert new["forkedFrom"] == stored.pk and new["forkedFromEntry"] == "u3"
    assert new["forkedBy"] == api_client.user.username
    assert new["parentSession"] == "2026-01-02T03-04-05-678Z_sess-1.jsonl"
    entries = api_client.get(f"/api/sessions/{new['id']}/entries/").json()
    assert [e["id"] for e in entries["entries"]] == ["u1", "a1"] and entries["leafId"] == "a1"


def test_fork_at_an_assistant_message_and_subtree_mode(api_client: Any, stored: Any) -> None:
    at = api_client.post(f"/api/sessions/{stored.pk}/fork/", {"entryId": "a1"}, format="json").json()
    assert "editorText" not in at and at["session"]["leafId"] == "a1"
    subtree = api_client.post(
        f"/api/sessions/{stored.pk}/fork/", {"entryId": "a1", "mode": "subtree"}, format="json"
    ).json()
    ids = [
        e["id"]
        for e in api_client.get(f"/api/sessions/{subtree['session']['id']}/entries/").json()["entries"]
    ]
    assert ids == ["u1", "a1", "u2", "a2", "u3", "a3"] and subtree["session"]["leafId"] == "a1"


def test_fork_refusals(api_client: Any, stored: Any) -> None:
    url = f"/api/sessions/{stored.pk}/fork/"
    before = api_client.post(url, {"entryId": "a1", "position": "before"}, format="json")
    assert before.status_code == 400 and before.json()["error"] == "Invalid entry ID for forking"
    assert api_client.post(url, {"entryId": "zz"}, format="json").status_code == 404
    assert api_client.post(url, {"entryId": "a1", "mode": "everything"}, format="json").status_code == 400
    assert ChatSession.objects.count() == 1


def test_clone_copies_the_path_to_the_leaf(api_client: Any, stored: Any) -> None:
    api_client.post(f"/api/sessions/{stored.pk}/labels/", {"targetId": "u1", "label": "start"}, format="json")
    response = api_client.post(f"/api/sessions/{stored.pk}/clone/", {}, format="json")
    assert response.status_code == 201
    new = response.json()["session"]
    entries = api_client.get(f"/api/sessions/{new['id']}/entries/").json()["entries"]
    assert [e["id"] for e in entries[:4]] == ["u1", "a1", "u3", "a3"]
    assert entries[4]["entry"]["type"] == "label" and entries[4]["entry"]["label"] == "start"
    by_entry = api_client.post(f"/api/sessions/{stored.pk}/clone/", {"entryId": "a2"}, format="json").json()
    copied = api_client.get(f"/api/sessions/{by_entry['session']['id']}/entries/").json()
    # As in Pi, the re-created labels come last and the last one becomes the leaf.
    assert [e["id"] for e in copied["entries"][:4]] == ["u1", "a1", "u2", "a2"]
    assert copied["leafId"] == copied["entries"][4]["id"]


def test_clone_without_leaf_is_400(api_client: Any) -> None:
    created = api_client.post("/api/sessions/", {"cwd": "/a"}, format="json").json()
    response = api_client.post(f"/api/sessions/{created['id']}/clone/", {}, format="json")
    assert response.status_code == 400
    assert response.json()["error"] == "Cannot clone session: no current entry selected"


def test_context_of_leaf_and_of_any_entry(api_client: Any, stored: Any) -> None:
    url = f"/api/sessions/{stored.pk}/context/"
    body = api_client.get(url).json()
    assert [m["entryId"] for m in body["messages"]] == ["u1", "a1", "u3", "a3"]
    assert all(m["tokens"] > 0 for m in body["messages"])
    assert [m["role"] for m in body["llmMessages"]] == ["user", "assistant", "user", "assistant"]
    assert body["model"] == {"provider": "p", "modelId": "m"} and body["thinkingLevel"] == "off"
    assert body["estimate"]["usageTokens"] == 15 and body["estimate"]["lastUsageIndex"] == 3
    assert body["contextWindow"] is None
    other = api_client.get(url + "?leaf=u2&window=1000").json()
    assert [m["entryId"] for m in other["messages"]] == ["u1", "a1", "u2"]
    assert other["contextWindow"]["window"] == 1000
    assert other["contextWindow"]["fraction"] == other["estimate"]["tokens"] / 1000
    assert api_client.get(url + "?leaf=zz").status_code == 404


def test_tree_overview_marks_branches_leaves_and_the_current_path(api_client: Any, stored: Any) -> None:
    tree = api_client.get(f"/api/sessions/{stored.pk}/tree/").json()
    assert tree["leafId"] == "a3" and tree["segmentCount"] == 2
    items = {i.get("id") or i["firstId"]: i for i in tree["items"]}
    assert items["a1"]["kind"] == "node" and items["a1"]["children"] == 2 and items["a1"]["onPath"]
    assert items["a3"]["current"] and items["a3"]["treeLeaf"] and items["a3"]["onPath"]
    assert items["a2"]["treeLeaf"] and "onPath" not in items["a2"]
    assert items["u1"] == {
        "kind": "run",
        "firstId": "u1",
        "lastId": "u1",
        "parentId": None,
        "length": 1,
        "depthFrom": 0,
        "segment": 0,
        "onPath": True,
    }
    expanded = api_client.get(f"/api/sessions/{stored.pk}/tree/?around=a2").json()
    assert [i.get("id") for i in expanded["items"] if i["segment"] == 0] == ["u1", "a1", "u2", "a2"]
    assert api_client.get(f"/api/sessions/{stored.pk}/tree/?around=zz").status_code == 404
