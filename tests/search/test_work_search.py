"""Search by work: sessions that touched a path, used a tool or ran a command, from the index of work."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from django.core.management import call_command
from rest_framework.test import APIClient

from pitree.work_query import parse_work_query
from sessions_app import services, work_search
from sessions_app.models import ShareLink, ToolUse
from teams.models import Team, TeamMembership
from tests.factories import FILES_HEADER, session_file, tool_turn, two_branches_with_files
from tests.factories import user_message as user_msg

pytestmark = pytest.mark.django_db


def stored(owner: Any, pi_id: str, entries: list[dict[str, Any]], cwd: str = "/w") -> Any:
    data = session_file(entries, {**FILES_HEADER, "id": pi_id, "cwd": cwd})
    return services.import_jsonl(actor=owner, data=data, filename=f"{pi_id}.jsonl").session


def client_for(account: Any) -> APIClient:
    client = APIClient()
    client.force_authenticate(user=account)
    return client


def found(client: APIClient, q: str) -> dict[int, list[str | None]]:
    response = client.get("/api/search/", {"q": q})
    assert response.status_code == 200, response.content
    return {s["id"]: [h["entryId"] for h in s["hits"]] for s in response.json()["sessions"]}


def touches(session: Any) -> list[tuple[str, str, str, str | None, bool]]:
    rows = ToolUse.objects.filter(session=session).order_by("call_seq", "id")
    return [(r.tool, r.path, r.command, r.result_entry_id, r.failed) for r in rows]


def test_an_import_indexes_each_tool_call_with_its_result(api_client: APIClient) -> None:
    session = stored(api_client.user, "files-1", two_branches_with_files())
    assert touches(session) == [
        ("write", "shared.txt", "", "c0-r", False),
        ("write", "other.txt", "", "c9-r", False),
        ("edit", "shared.txt", "", "c1-r", False),
        ("edit", "shared.txt", "", "c2-r", True),
        ("bash", "", "make test", "c3-r", False),
        ("write", "src/a.py", "", "c4-r", False),  # an absolute path inside the folder shows relative
    ]
    assert ToolUse.objects.get(session=session, call_id="c4").absolute == "/w/src/a.py"


def test_exact_prefix_and_glob_paths_open_the_entry_that_touched_them(api_client: APIClient) -> None:
    session = stored(api_client.user, "files-1", two_branches_with_files())
    # Newest first; the failed edit (c2) is no touch. The hit is the tool result: the Files panel's anchor.
    assert found(api_client, "path:shared.txt") == {session.pk: ["c1-r", "c0-r"]}
    assert found(api_client, "path:/w/shared.txt") == {session.pk: ["c1-r", "c0-r"]}  # absolute
    assert found(api_client, "path:src/") == {session.pk: ["c4-r"]}
    assert found(api_client, "path:*.py") == {session.pk: ["c4-r"]}  # a name in any folder
    assert found(api_client, "path:src/**/*.py") == {session.pk: ["c4-r"]}  # ** is zero folders too
    assert found(api_client, "path:*.txt") == {session.pk: ["c1-r", "c9-r", "c0-r"]}
    assert found(api_client, "path:s?ared.txt") == {session.pk: ["c1-r", "c0-r"]}
    assert found(api_client, "path:shared") == {}  # exact means exact
    assert found(api_client, "path:*.rs") == {}
    body = api_client.get("/api/search/", {"q": "path:src/a.py"}).json()
    [hit] = body["sessions"][0]["hits"]
    assert hit["role"] == "toolResult" and hit["snippet"] == "write src/a.py"
    tree = api_client.get(f"/api/sessions/{session.pk}/tree/", {"around": hit["entryId"]}).json()
    assert any(item.get("id") == "c4-r" for item in tree["items"])


def test_tools_commands_and_words_combine(api_client: APIClient) -> None:
    session = stored(api_client.user, "files-1", two_branches_with_files())
    other = stored(
        api_client.user,
        "files-2",
        [user_msg("u0", None, "run it"), *tool_turn("d1", "u0", "bash", {"command": "pytest -q tests/"})],
    )
    assert found(api_client, "tool:edit") == {session.pk: ["c1-r"]}  # the failed edit is not one
    assert found(api_client, "tool:edit path:shared.txt") == {session.pk: ["c1-r"]}
    assert found(api_client, "tool:edit path:other.txt") == {}  # written, never edited
    assert found(api_client, "tool:edit tool:write path:other.txt") == {session.pk: ["c9-r"]}
    assert found(api_client, "cmd:pytest") == {other.pk: ["d1-r"]}
    assert found(api_client, 'cmd:"make test"') == {session.pk: ["c3-r"]}
    assert set(found(api_client, "tool:bash")) == {session.pk, other.pk}
    # Every term must hold in a session; words beside them match its message text.
    assert found(api_client, "cmd:pytest path:shared.txt") == {}
    assert found(api_client, "tool:bash run") == {other.pk: ["d1-r"]}
    assert found(api_client, "tool:bash nowhere-said") == {}


@pytest.mark.parametrize(
    ("q", "says"),
    [
        ("path:", "needs a value"),
        ('cmd:""', "needs a value"),
        ("-path:src/", "cannot exclude"),
        ("tool:a%20b'", "not a tool name"),
        ("path:src/[ab", "does not close"),
    ],
)
def test_bad_terms_are_refused_with_a_reason(api_client: APIClient, q: str, says: str) -> None:
    response = api_client.get("/api/search/", {"q": q})
    assert response.status_code == 400
    assert says in json.dumps(response.json())


def test_other_prefixes_stay_text(api_client: APIClient) -> None:
    session = stored(api_client.user, "files-3", [user_msg("u0", None, "zeppelin notes, see ratio a:b")])
    assert found(api_client, "zeppelin a:b") == {session.pk: ["u0"]}


def test_a_caller_who_cannot_read_the_session_sees_nothing_not_even_a_count(user: Callable[..., Any]) -> None:
    owner, member, stranger = user("owner"), user("member"), user("stranger")
    session = stored(owner, "files-1", two_branches_with_files())
    for q in ("path:shared.txt", "tool:write", "cmd:make", "path:*.txt"):
        body = client_for(stranger).get("/api/search/", {"q": q}).json()
        assert body["sessions"] == [] and body["moreSessions"] is False
    team = Team.objects.create(name="core")
    TeamMembership.objects.create(team=team, user=owner, role=TeamMembership.Role.OWNER)
    TeamMembership.objects.create(team=team, user=member, role=TeamMembership.Role.VIEWER)
    assert client_for(member).get("/api/search/", {"q": "path:shared.txt"}).json()["sessions"] == []
    services.share_with_team(session=session, team=team, access="viewer", actor=owner)
    assert found(client_for(member), "path:shared.txt") == {session.pk: ["c1-r", "c0-r"]}
    assert client_for(stranger).get("/api/search/", {"q": "path:shared.txt"}).json()["sessions"] == []


def test_appends_index_a_call_and_complete_it_with_its_result(api_client: APIClient) -> None:
    session = stored(api_client.user, "files-4", [user_msg("u0", None, "go")])
    call, result = tool_turn("k1", "u0", "edit", {"path": "lib/x.py", "oldText": "a", "newText": "b"})
    # Apart, as Pi writes them: the call is not a touch until its result is stored.
    services.append_entries(session=session, actor=api_client.user, entries=[call])
    assert touches(session) == [("edit", "lib/x.py", "", None, False)]
    assert found(api_client, "path:lib/x.py") == {}
    services.append_entries(session=session, actor=api_client.user, entries=[result])
    assert found(api_client, "path:lib/x.py") == {session.pk: ["k1-r"]}
    # Together in one batch, and a failed one.
    services.append_entries(
        session=session,
        actor=api_client.user,
        entries=tool_turn("k2", "k1-r", "write", {"path": "lib/y.py", "content": "y"}, error=True),
    )
    assert touches(session)[-1] == ("write", "lib/y.py", "", "k2-r", True)
    assert found(api_client, "path:lib/y.py") == {}
    # A retried append (its ids taken) indexes nothing twice.
    with pytest.raises(services.InvalidEntries):
        services.append_entries(session=session, actor=api_client.user, entries=[result])
    assert len(touches(session)) == 2


def test_a_sync_push_indexes_what_it_stores(api_client: APIClient) -> None:
    header = json.dumps({"type": "session", "version": 3, "id": "sync-work", "timestamp": "t", "cwd": "/w"})
    entries = [user_msg("u0", None, "go"), *tool_turn("s1", "u0", "read", {"path": "/w/README.md"})]
    lines = [json.dumps(e) for e in entries]

    def push(start: int, end: int, last: str | None) -> None:
        control = {
            "header": header,
            "from": {"lines": start, "bytes": 0, "lastId": last},
            "to": {"lines": end, "bytes": 0},
            "path": "/home/me/s.jsonl",
        }
        body = json.dumps(control).encode() + b"\n" + "".join(x + "\n" for x in lines[start:end]).encode()
        answer = api_client.generic("POST", "/api/sync/", body, content_type="application/x-ndjson")
        assert answer.status_code == 200, answer.content

    push(0, 2, None)  # a new session: the call, its result still to come
    [pk] = found(api_client, "tool:read") or [None]
    assert pk is None
    push(2, 3, "s1-a")
    [(pk, hits)] = found(api_client, "path:README.md").items()
    assert hits == ["s1-r"]


def test_a_context_edit_does_not_undo_a_touch(api_client: APIClient) -> None:
    # As in the Files panel: omitting a result from the model's context does not undo the tool's work.
    entries = [
        user_msg("u0", None, "go"),
        *tool_turn("c1", "u0", "write", {"path": "kept.txt", "content": "x"}),
        {
            "type": "context_edit",
            "id": "ce1",
            "parentId": "c1-r",
            "timestamp": "2026-01-02T03:04:09.000Z",
            "targetId": "c1-r",
            "replacement": None,
        },
    ]
    session = stored(api_client.user, "files-5", entries)
    assert found(api_client, "path:kept.txt") == {session.pk: ["c1-r"]}
    files = api_client.get(f"/api/sessions/{session.pk}/files/").json()
    assert "kept.txt" in json.dumps(files)


def test_reconcile_indexes_sessions_stored_before_the_index(api_client: APIClient) -> None:
    session = stored(api_client.user, "files-1", two_branches_with_files())
    before = touches(session)
    ToolUse.objects.filter(session=session).delete()
    assert found(api_client, "path:shared.txt") == {}
    call_command("reconcile")
    assert touches(session) == before
    assert found(api_client, "path:shared.txt") == {session.pk: ["c1-r", "c0-r"]}


def test_the_session_list_searches_by_work_and_links_to_the_node(
    client: Any, user: Callable[..., Any]
) -> None:
    owner, stranger = user("owner"), user("stranger")
    session = stored(owner, "files-1", two_branches_with_files())
    client.force_login(owner)
    page = client.get("/", {"q": "path:src/"}).content.decode()
    assert f'href="/sessions/{session.pk}/?q=path%3Asrc%2F#entry=c4-r"' in page and "write src/a.py" in page
    assert "path:src/" in page  # the help says what the box understands
    refused = client.get("/", {"q": "-path:src/"}).content.decode()
    assert "cannot exclude" in refused and f"/sessions/{session.pk}/" not in refused
    client.force_login(stranger)
    assert f"/sessions/{session.pk}/" not in client.get("/", {"q": "path:src/"}).content.decode()


def session_hits(client: APIClient, pk: int, q: str) -> tuple[list[str], int]:
    response = client.get(f"/api/sessions/{pk}/search/", {"q": q, "limit": 100})
    assert response.status_code == 200, response.content
    body = response.json()
    return [h["entryId"] for h in body["hits"]], body["total"]


def test_one_session_steps_through_its_uses_and_a_path_link_sees_only_its_path(
    user: Callable[..., Any],
) -> None:
    owner = user("owner")
    session = stored(owner, "files-1", two_branches_with_files())
    ids, total = session_hits(client_for(owner), session.pk, "path:*.txt")
    assert sorted(ids) == ["c0-r", "c1-r", "c9-r"] and total == 3
    assert session_hits(client_for(owner), session.pk, "cmd:make")[0] == ["c3-r"]
    assert session_hits(client_for(owner), session.pk, "path:*.txt nowhere-said") == ([], 0)
    # A path link (root → the leaf, branch A) sees no use on branch B, nor that there is one.
    link = services.create_share_link(session=session, actor=owner, scope=ShareLink.Scope.PATH)
    seen = APIClient()
    seen.credentials(HTTP_X_SHARE_TOKEN=link.raw_token)
    assert session_hits(seen, session.pk, "path:*.txt") == (["c0-r", "c1-r"], 2)
    assert session_hits(seen, session.pk, "path:other.txt") == ([], 0)
    assert seen.get(f"/api/sessions/{session.pk}/search/", {"q": "-path:x"}).status_code == 400
    assert client_for(user("stranger")).get(
        f"/api/sessions/{session.pk}/search/", {"q": "path:*.txt"}
    ).status_code in (403, 404)


def test_a_fork_indexes_the_uses_it_copies(api_client: APIClient) -> None:
    session = stored(api_client.user, "files-1", two_branches_with_files())
    fork = services.fork_session(session=session, entry_id="c4-r", actor=api_client.user).session
    # The path root → c4-r: branch B's write of other.txt is not copied.
    assert found(api_client, "path:other.txt") == {session.pk: ["c9-r"]}
    assert found(api_client, "path:src/a.py") == {fork.pk: ["c4-r"], session.pk: ["c4-r"]}
    assert [t[:2] for t in touches(fork)] == [
        ("write", "shared.txt"),
        ("edit", "shared.txt"),
        ("edit", "shared.txt"),
        ("bash", ""),
        ("write", "src/a.py"),
    ]


@pytest.mark.parametrize("every", [1, 3, 4])  # 4: none of the first two match (rare)
def test_sessions_are_found_in_order_whether_the_pattern_is_common_or_rare(
    api_client: APIClient, monkeypatch: pytest.MonkeyPatch, every: int
) -> None:
    monkeypatch.setattr(work_search, "PROBE_CHUNK", 2)
    pks = []
    for i in range(7):
        path = "hit.py" if i % every == 0 else "miss.txt"
        entries = [user_msg("u0", None, "go"), *tool_turn("w", "u0", "write", {"path": path, "content": ""})]
        pks.append(stored(api_client.user, f"many-{i}", entries).pk)
    newest_first = pks[::-1]
    wanted = [pk for pk in newest_first if (pks.index(pk) % every) == 0]
    query = parse_work_query("path:*.py")
    assert work_search.first_matching(newest_first, query, enough=3) == wanted[:3]
    assert work_search.first_matching(newest_first, query, enough=10) == wanted
