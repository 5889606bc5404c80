"""Structured filters of the session list, the REST list and the search: each narrows what the viewer can
read, combines with text and work terms, answers a clear error for a bad value, and never names or counts
sessions the viewer cannot read."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from agent.models import AgentRun
from discussion.models import Comment
from governance.models import SecretFinding
from sessions_app import services
from sessions_app.models import ChatSession, SessionShare
from teams import services as team_services
from tests.factories import assistant_message, session_file, tool_turn, user_message

pytestmark = pytest.mark.django_db


def _session(
    owner: Any,
    pi_id: str,
    *,
    text: str = "hello",
    model: str = "m",
    provider: str = "p",
    cost: float = 0.0,
    tool: str | None = None,
    label: str | None = None,
    compacted: bool = False,
) -> ChatSession:
    usage = {"input": 10, "output": 5, "cacheRead": 0, "cacheWrite": 0, "cost": {"total": cost}}
    entries: list[dict[str, Any]] = [
        user_message("u1", None, text),
        assistant_message("a1", "u1", "sure", model=model, provider=provider, usage=usage),
    ]
    parent = "a1"
    if tool:
        entries += tool_turn("c1", parent, tool, {"path": "src/app.py", "command": "pytest"})
        parent = "c1-r"
    if label:
        entries.append(
            {
                "type": "label",
                "id": "l1",
                "parentId": parent,
                "timestamp": "2026-01-02T03:04:09.000Z",
                "targetId": "u1",
                "label": label,
            }
        )
        parent = "l1"
    if compacted:
        entries.append(
            {
                "type": "compaction",
                "id": "k1",
                "parentId": parent,
                "timestamp": "2026-01-02T03:04:10.000Z",
                "summary": "so far",
                "firstKeptEntryId": "u1",
                "tokensBefore": 100,
            }
        )
    header = {
        "type": "session",
        "version": 3,
        "id": pi_id,
        "timestamp": "2026-01-02T03:04:05.678Z",
        "cwd": "/w",
    }
    return services.import_jsonl(actor=owner, data=session_file(entries, header)).session


def _names(client: Client, query: str) -> set[str]:
    response = client.get(f"/?{query}")
    assert response.status_code == 200
    return {s.pi_id for s in response.context["page"].object_list}


def _error(client: Client, query: str) -> str:
    return str(client.get(f"/?{query}").context["error"])


@pytest.fixture
def world(user: Any) -> dict[str, Any]:
    """ann's sessions, bob's shared with ann's team, and carl's (not shared: ann never sees them)."""
    ann, bob, carl = user("ann"), user("bob"), user("carl")
    team = team_services.create_team(actor=ann, name="crew")
    s = {
        "a-edit": _session(ann, "a-edit", tool="edit", model="alpha", cost=0.5, label="keep"),
        "a-bash": _session(ann, "a-bash", tool="bash", model="beta", provider="q", cost=2.0, compacted=True),
        "b-shared": _session(bob, "b-shared", tool="edit", model="alpha", cost=3.0, text="parser work"),
        "c-hidden": _session(
            carl,
            "c-hidden",
            tool="edit",
            model="secretmodel",
            provider="hid",
            cost=9.0,
            label="keep",
            compacted=True,
        ),
    }
    SessionShare.objects.create(session=s["b-shared"], team=team)
    carls = team_services.create_team(actor=carl, name="carls-team")
    SessionShare.objects.create(session=s["c-hidden"], team=carls)
    client = Client()
    client.force_login(ann)
    return {"client": client, "ann": ann, "carl": carl, "sessions": s, "team": team}


def test_each_filter_narrows_the_list(world: dict[str, Any]) -> None:
    c = world["client"]
    assert _names(c, "") == {"a-edit", "a-bash", "b-shared"}
    assert _names(c, "team=crew") == {"b-shared"}
    assert _names(c, "owner=me") == {"a-edit", "a-bash"}
    assert _names(c, "owner=bob") == {"b-shared"}
    assert _names(c, "tool=edit") == {"a-edit", "b-shared"}
    assert _names(c, "tool=edit&tool=bash") == set()  # all of the tools
    assert _names(c, "model=p/alpha") == {"a-edit", "b-shared"}
    assert _names(c, "model=beta") == {"a-bash"}
    assert _names(c, "provider=q") == {"a-bash"}
    assert _names(c, "cost_min=1") == {"a-bash", "b-shared"}
    assert _names(c, "cost_max=2.5") == {"a-edit", "a-bash"}
    assert _names(c, "cost_min=1&cost_max=2.5") == {"a-bash"}
    assert _names(c, "label=KEEP") == {"a-edit"}
    assert _names(c, "state=compacted") == {"a-bash"}


def test_dates_narrow_by_creation_and_activity(world: dict[str, Any]) -> None:
    c = world["client"]
    ChatSession.objects.filter(pi_id="a-edit").update(created_at=datetime(2025, 3, 1, tzinfo=UTC))
    assert _names(c, "created_before=2025-03-01") == {"a-edit"}
    assert _names(c, "created_after=2025-03-02") == {"a-bash", "b-shared"}
    today = timezone.now().date().isoformat()
    assert _names(c, f"updated_after={today}&updated_before={today}") == {"a-edit", "a-bash", "b-shared"}


def test_filters_combine_with_text_and_work_terms(world: dict[str, Any]) -> None:
    c = world["client"]
    assert _names(c, "q=parser&tool=edit") == {"b-shared"}
    assert _names(c, "q=parser&owner=me") == set()
    assert _names(c, "q=tool:edit&model=alpha&cost_max=1") == {"a-edit"}
    assert _names(c, "q=cmd:pytest&owner=me&state=compacted") == {"a-bash"}


def test_states_from_other_apps_must_all_hold(world: dict[str, Any]) -> None:
    c, s = world["client"], world["sessions"]
    AgentRun.objects.create(session=s["a-edit"], prompt="go", status=AgentRun.Status.RUNNING)
    AgentRun.objects.create(session=s["a-bash"], prompt="go", status=AgentRun.Status.FAILED)
    AgentRun.objects.create(session=s["c-hidden"], prompt="go", status=AgentRun.Status.FAILED)
    Comment.objects.create(session=s["b-shared"], entry_id="u1", author_name="bob", body="why?")
    Comment.objects.create(
        session=s["a-bash"], entry_id="u1", author_name="ann", body="done", resolved_at=timezone.now()
    )
    SecretFinding.objects.create(session=s["a-bash"], seq=1, path="content", start=0, end=5, kind="aws")
    assert _names(c, "state=running") == {"a-edit"}
    assert _names(c, "state=failed") == {"a-bash"}
    assert _names(c, "state=open-threads") == {"b-shared"}
    assert _names(c, "state=secrets") == {"a-bash"}
    assert _names(c, "state=failed&state=compacted&state=secrets") == {"a-bash"}
    assert _names(c, "state=failed&state=open-threads") == set()


@pytest.mark.parametrize(
    ("query", "says"),
    [
        ("state=sleeping", "state: unknown value 'sleeping'"),
        ("team=carls-team", "is not one of your teams"),
        ("team=nosuch", "is not one of your teams"),
        ("owner=nobody", "no user named 'nobody'"),
        ("created_after=2025-13-01", "is not a date"),
        ("cost_min=lots", "is not an amount in dollars"),
        ("model=secretmodel", "is not used in any session you can read"),
        ("provider=hid", "is not used in any session you can read"),
    ],
)
def test_a_bad_value_answers_a_clear_error(world: dict[str, Any], query: str, says: str) -> None:
    c = world["client"]
    assert says in _error(c, query)
    assert not _names(c, query)
    response = APIClient()
    response.force_authenticate(world["ann"])
    answer = response.get(f"/api/sessions/?{query}")
    assert answer.status_code == 400 and says in str(answer.content, "utf-8")


def test_no_filter_surfaces_or_names_unreadable_sessions(world: dict[str, Any]) -> None:
    c = world["client"]
    for query in ("tool=edit", "label=keep", "state=compacted", "cost_min=5", "owner=carl", "model=alpha"):
        assert "c-hidden" not in _names(c, query), query
    assert _names(c, "owner=carl") == set()  # carl exists; nothing of his is readable
    page = c.get("/").content.decode()
    assert "carls-team" not in page and "secretmodel" not in page and ">hid<" not in page
    assert "crew" in page and "p/alpha" in page
    api = APIClient()
    api.force_authenticate(world["ann"])
    listed = api.get("/api/sessions/?cost_min=5").json()
    assert listed.get("count", len(listed.get("results", listed))) == 0


def test_the_rest_list_and_pages_keep_the_filters(world: dict[str, Any]) -> None:
    api = APIClient()
    api.force_authenticate(world["ann"])
    body = api.get("/api/sessions/?tool=edit&owner=me").json()
    rows = body["results"] if isinstance(body, dict) else body
    assert [r["id"] for r in rows] == [world["sessions"]["a-edit"].pk]
    page = world["client"].get("/?tool=edit&owner=me")
    chips = page.context["filter_chips"]
    assert {(ch["name"], ch["value"]) for ch in chips} == {("tool", "edit"), ("owner", "me")}
    removed = next(ch for ch in chips if ch["name"] == "tool")["remove"]
    assert _names(world["client"], removed.lstrip("?")) == {"a-edit", "a-bash"}
    assert "tool=edit" in page.context["kept"] and "owner=me" in page.context["kept"]


def test_the_search_api_takes_the_same_filters(world: dict[str, Any]) -> None:
    api = APIClient()
    api.force_authenticate(world["ann"])
    s = world["sessions"]
    found = api.get("/api/search/?q=sure&tool=edit").json()
    assert {row["id"] for row in found["sessions"]} == {s["a-edit"].pk, s["b-shared"].pk}
    found = api.get("/api/search/?q=sure&tool=edit&owner=me&cost_max=1").json()
    assert [row["id"] for row in found["sessions"]] == [s["a-edit"].pk]
    refused = api.get("/api/search/?q=sure&team=carls-team")
    assert refused.status_code == 400 and "is not one of your teams" in refused.content.decode()


def test_author_finds_sessions_by_who_wrote_entries(world: dict[str, Any]) -> None:
    c = world["client"]
    assert _names(c, "author=me") == {"a-edit", "a-bash"}
    assert _names(c, "author=bob") == {"b-shared"}
    assert _names(c, "author=carl") == set()  # his session is not readable
    assert "no user named 'nobody'" in _error(c, "author=nobody")


def test_the_filter_bar_reads_the_viewers_models_once(world: dict[str, Any]) -> None:
    """The model and provider fields offer what one read of the viewer's usage rows says."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from audit.models import SessionUsage

    table = SessionUsage._meta.db_table
    with CaptureQueriesContext(connection) as seen:
        page = world["client"].get("/").content.decode()
    assert "p/alpha" in page and ">q<" in page  # a model and a provider offered
    sqls = [q["sql"] for q in seen.captured_queries]
    reads = [sql for sql in sqls if f'FROM "{table}"' in sql and '"model"' in sql]
    assert len(reads) == 1, reads
