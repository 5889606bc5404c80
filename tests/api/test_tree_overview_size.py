"""A 100k-entry session with a few hundred branches has a small tree overview."""

from __future__ import annotations

import json
from typing import Any

import pytest

from sessions_app import services

pytestmark = pytest.mark.django_db

MAIN = 100_000
BRANCHES = 300
BRANCH_LENGTH = 3


def _big_session() -> bytes:
    header = '{"type":"session","version":3,"id":"big","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}'
    lines = [header]
    ts = "2026-01-01T00:00:01.000Z"
    for i in range(MAIN):
        parent = f'"m{i - 1}"' if i else "null"
        lines.append(
            f'{{"type":"custom","id":"m{i}","parentId":{parent},"timestamp":"{ts}","customType":"x"}}'
        )
    every = MAIN // BRANCHES
    for b in range(BRANCHES):
        parent = f"m{b * every + 7}"
        for k in range(BRANCH_LENGTH):
            lines.append(
                f'{{"type":"custom","id":"b{b}-{k}","parentId":"{parent}","timestamp":"{ts}","customType":"x"}}'
            )
            parent = f"b{b}-{k}"
    lines.append(
        f'{{"type":"label","id":"l1","parentId":"{parent}","timestamp":"{ts}","targetId":"m500","label":"here"}}'
    )
    return ("\n".join(lines) + "\n").encode()


def test_overview_of_a_100k_tree_stays_under_200_kb(api_client: Any) -> None:
    session = services.import_jsonl(actor=api_client.user, data=_big_session()).session
    response = api_client.get(f"/api/sessions/{session.pk}/tree/")
    assert response.status_code == 200
    assert len(response.content) < 200_000
    body = json.loads(response.content)
    assert body["segmentCount"] == BRANCHES + 1
    items = body["items"]
    runs = [i for i in items if i["kind"] == "run"]
    assert (
        sum(r["length"] for r in runs) + sum(1 for i in items if i["kind"] == "node")
        == MAIN + BRANCHES * 3 + 1
    )
    assert [i.get("label") for i in items if i.get("id") == "m500"] == ["here"]
    current = [i for i in items if i.get("current")]
    assert [c["id"] for c in current] == ["l1"]
    on_path = [i for i in items if i.get("onPath")]
    assert on_path[-1]["id"] == "l1"
    branch_points = [i for i in items if i.get("children")]
    assert len(branch_points) == BRANCHES
