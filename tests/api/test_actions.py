"""Navigation, labels, fork, clone, context and the tree overview through the API."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client
from django.urls import resolve

from actionlog.models import ActionLog
from compaction_app.api.views import NavigateView
from compaction_app.models import CompactionRun
from sessions_app.models import ChatSession

pytestmark = pytest.mark.django_db


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


def test_navigate_with_summary_is_a_route_of_the_compaction_app(api_client: Any, stored: Any) -> None:
    url = f"/api/sessions/{stored.pk}/navigate/"
    assert resolve(url).func.view_class is NavigateView  # type: ignore[attr-defined]
    response = api_client.post(
        url, {"targetId": "a2", "summarize": True, "customInstructions": "focus"}, format="json"
    )
    assert response.status_code == 202
    run = CompactionRun.objects.get(operation_id=response.json()["operationId"])
    assert (run.kind, run.target_id, run.custom_instructions) == ("branch_summary", "a2", "focus")
    # The leaf moves only when the summary is written; the request is logged with the run.
    assert api_client.get(f"/api/sessions/{stored.pk}/").json()["leafId"] == "a3"
    logged = ActionLog.objects.get(action="navigate", session=stored)
    assert logged.detail == {"target": "a2", "summarize": True}


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
    # A path, as Pi writes it: here where piweb-sync pull puts the source (it was not synced from a file).
    assert new["parentSession"] == "~/.pi/agent/sessions/--w--/2026-01-02T03-04-05-678Z_sess-1.jsonl"
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
    assert body["contextWindow"]["window"] == 200_000  # PIWEB_DEFAULT_CONTEXT_WINDOW's default
    other = api_client.get(url + "?leaf=u2&window=1000").json()
    assert [m["entryId"] for m in other["messages"]] == ["u1", "a1", "u2"]
    assert other["contextWindow"]["window"] == 1000
    assert other["contextWindow"]["fraction"] == other["estimate"]["tokens"] / 1000
    assert api_client.get(url + "?leaf=zz").status_code == 404


def test_the_default_context_window_setting_is_the_same_in_the_api_and_the_page(
    api_client: Any, stored: Any, settings: Any
) -> None:
    settings.PIWEB_DEFAULT_CONTEXT_WINDOW = 1000
    api = api_client.get(f"/api/sessions/{stored.pk}/context/").json()["contextWindow"]
    client = Client()
    client.force_login(api_client.user)
    page = client.get(f"/sessions/{stored.pk}/").content.decode()
    config = json.loads(page.split('id="session-config" type="application/json">')[1].split("</script>")[0])
    assert api["window"] == config["contextWindow"] == 1000


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
