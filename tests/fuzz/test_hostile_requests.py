"""Hostile values to every write endpoint and every path parameter, over the real database.

NUL characters, lone surrogates, 100k-deep nesting, huge numbers, wrong types and oversized bodies go
into each field of a working request, into the body as a whole, and into every path segment. No answer
may be a server error, and an answer in the 4xx range must leave every table as it was.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from django.apps import apps
from django.test import override_settings
from django.urls import URLPattern, URLResolver, get_resolver
from rest_framework.test import APIClient

from compaction_app.models import CompactionRun
from discussion.models import Comment
from sessions_app import services
from sessions_app.models import ChatSession, ShareLink
from teams.models import Team, TeamMembership
from tests.factories import HEADER, line, session_file, small_tree

pytestmark = pytest.mark.timeout(600)

DEEP = "[" * 100_000 + "]" * 100_000
# Raw JSON fragments: what a hostile client can put where a value belongs.
HOSTILE_VALUES = [
    '"\\u0000"',
    '"a\\u0000b"',
    '"\\ud800"',
    '"x\\udfffy"',
    DEEP,
    "1" + "0" * 400,
    "1e999",
    "-1",
    "0",
    "true",
    "null",
    "[]",
    "{}",
    '"' + "x" * 200_000 + '"',
    '{"type": "message", "id": "\\u0000"}',
]
HOSTILE_BODIES = [
    DEEP,
    '{"x": ' + DEEP + "}",
    "[]",
    '"text"',
    "1",
    "null",
    "{",
    '{"a": NaN}',
    "\x00",
]
HOSTILE_SEGMENTS = ["%00", "a%00b", "%ED%A0%80", "x" * 3000, "99999999999999999999999", "..%2F..", "%25"]
# Fields of a working body for each write route (path parameters filled from the world below).
HOOK_BODY = {"name": "ci", "url": "https://hooks.example.com/piweb", "events": ["run.failed"]}
TEMPLATES: dict[tuple[str, str], dict[str, Any]] = {
    ("api/sessions/", "post"): {"cwd": "/w", "name": "n"},
    ("api/sessions/<int:pk>/", "patch"): {"name": "renamed"},
    ("api/sessions/<int:pk>/append/", "post"): {
        "entries": [
            {"type": "message", "id": "z1", "parentId": "a3", "message": {"role": "user", "content": "x"}}
        ],
        "expectedLeaf": "a3",
    },
    ("api/sessions/<int:pk>/labels/", "post"): {"targetId": "a2", "label": "important"},
    ("api/sessions/<int:pk>/navigate/", "post"): {"targetId": "a2"},
    ("api/sessions/<int:pk>/fork/", "post"): {"entryId": "a2", "position": "at", "mode": "path"},
    ("api/sessions/<int:pk>/clone/", "post"): {"entryId": "a2"},
    ("api/sessions/<int:pk>/compact/", "post"): {"customInstructions": "keep it short"},
    ("api/sessions/<int:pk>/runs/", "post"): {"prompt": "hello", "providerId": None},
    ("api/sessions/<int:pk>/runs/regenerate/", "post"): {"entryId": "a1"},
    ("api/sessions/<int:pk>/runs/edit/", "post"): {"entryId": "u1", "prompt": "again"},
    ("api/sessions/<int:pk>/runs/render/", "post"): {"text": "**streaming**"},
    ("api/sessions/<int:pk>/settings/", "put"): {
        "compaction": {"enabled": True, "reserveTokens": 1000, "keepRecentTokens": 2000}
    },
    ("api/sessions/<int:pk>/shares/", "post"): {"teamId": 0, "access": "viewer"},
    ("api/sessions/<int:pk>/links/", "post"): {"scope": "tree", "entryId": "a2", "frozen": True},
    ("api/sessions/<int:pk>/secrets/redact/", "post"): {"findingIds": [1], "all": False},
    ("api/secrets/check/", "post"): {"text": "deploy with the usual key"},
    ("api/sync/", "post"): {
        "header": line({**HEADER, "id": "synced"}),
        "lines": [line(e) for e in small_tree()[:2]],
    },
    ("api/token/", "post"): {"username": "owner", "password": "wrong", "name": "laptop"},
    ("api/teams/", "post"): {"name": "a team"},
    ("api/runners/", "post"): {"name": "box"},
    ("api/runs/<uuid:run_id>/steer/", "post"): {"message": "also this"},
    ("api/runs/<uuid:run_id>/follow-up/", "post"): {"message": "then this"},
    ("api/sessions/<int:pk>/handoff/", "post"): {"userId": 1, "note": "yours"},
    ("api/sessions/<int:pk>/runs/remote/", "post"): {"runnerId": 1, "workspace": "work", "prompt": "go"},
    ("api/sync/presence/", "post"): {"piId": "synced", "device": "laptop"},
    ("api/teams/<int:team_id>/members/", "post"): {"username": "other", "role": "viewer"},
    ("api/teams/<int:team_id>/members/<str:username>/", "patch"): {"role": "editor"},
    ("api/teams/<int:team_id>/", "patch"): {"defaultShare": "viewer"},
    ("api/tokens/", "post"): {"name": "laptop"},
    ("accounts/login/", "post"): {"username": "owner", "password": "wrong"},
    ("api/sessions/<int:pk>/comments/", "post"): {"entryId": "a2", "body": "a remark"},
    ("api/comments/<int:comment_id>/", "patch"): {"resolved": True},
    ("api/inbox/read/", "post"): {"all": True},
    ("api/inbox/settings/", "put"): {"email": "mentions"},
    ("api/teams/<int:team_id>/discussion/", "put"): {"viewersMayComment": False},
    ("api/sessions/<int:pk>/reviews/", "post"): {"reviewers": ["other"], "entryId": "a2", "note": "look"},
    ("api/reviews/<int:review_id>/decision/", "post"): {"decision": "approved", "note": "fine"},
    ("api/sessions/<int:pk>/tags/", "post"): {"tagId": 1},
    ("api/teams/<int:team_id>/tags/", "post"): {"name": "billing", "colour": "blue"},
    ("api/tags/<int:tag_id>/", "patch"): {"name": "invoices"},
    ("api/saved-filters/", "post"): {"name": "mine", "query": "owner=me"},
    ("api/sessions/bulk/", "post"): {"action": "archive", "sessions": [1], "preview": True},
    ("api/teams/<int:team_id>/activity/digest/", "put"): {"digest": False},
    ("api/hooks/", "post"): HOOK_BODY,
    ("api/teams/<int:team_id>/hooks/", "post"): HOOK_BODY,
    ("api/hooks/<int:hook_id>/", "patch"): {"name": "renamed", "active": False},
}


@dataclass
class Tally:
    requests: int = 0
    routes: set[str] = field(default_factory=set)
    by_status: dict[int, int] = field(default_factory=dict)


TALLY = Tally()


@dataclass
class World:
    client: APIClient
    ids: dict[str, str]


@pytest.fixture
def world(user: Callable[..., Any]) -> World:
    owner = user("owner")
    other = user("other")
    session = services.import_jsonl(actor=owner, data=session_file(small_tree()), filename="s.jsonl").session
    team = Team.objects.create(name="crew")
    TeamMembership.objects.create(team=team, user=owner, role=TeamMembership.Role.OWNER)
    TeamMembership.objects.create(team=team, user=other, role=TeamMembership.Role.VIEWER)
    link = services.create_share_link(session=session, actor=owner)
    client = APIClient()
    client.force_authenticate(user=owner)
    client.force_login(owner)
    TEMPLATES[("api/sessions/<int:pk>/shares/", "post")]["teamId"] = team.pk
    ids = {
        "pk": str(session.pk),
        "entry_id": "a2",
        "team_id": str(team.pk),
        "username": "other",
        "link_id": str(link.pk),
        "token": link.raw_token,
        "token_id": "0" * 15,
        "invitation_id": "1",
        "operation_id": "00000000-0000-0000-0000-000000000000",
        "run_id": "00000000-0000-0000-0000-000000000000",
        "uidb64": "MQ",
        "runner_id": "0",
        "comment_id": str(
            Comment.objects.create(
                session=session, entry_id="a2", author=owner, author_name="owner", body="x"
            ).pk
        ),
    }
    return World(client, ids)


def routes() -> Iterator[tuple[str, Any]]:
    """Yield (route, view class or function) for every URL pattern outside the admin."""
    stack: list[tuple[Any, str]] = [(p, "") for p in reversed(get_resolver().url_patterns)]
    while stack:
        pattern, prefix = stack.pop()
        if isinstance(pattern, URLResolver):
            stack.extend((child, prefix + str(pattern.pattern)) for child in reversed(pattern.url_patterns))
        elif isinstance(pattern, URLPattern) and not prefix.startswith("admin/"):
            view = getattr(pattern.callback, "cls", None) or getattr(pattern.callback, "view_class", None)
            yield prefix + str(pattern.pattern), view


def methods(view: Any) -> list[str]:
    if view is None:
        return ["get"]
    return [m for m in ("get", "post", "put", "patch", "delete") if hasattr(view, m)]


def fill(route: str, ids: dict[str, str], hostile: tuple[str, str] | None = None) -> str:
    """Return the URL of ``route`` with real ids, or with one parameter replaced by a hostile segment."""
    path = "/" + route
    while "<" in path:
        start = path.index("<")
        end = path.index(">", start)
        name = path[start + 1 : end].split(":")[-1]
        value = hostile[1] if hostile and hostile[0] == name else ids.get(name, "1")
        path = path[:start] + value + path[end + 1 :]
    return path


def snapshot() -> dict[str, Any]:
    """Row counts of every project table, and the fields a write would change on the sessions."""
    counts: dict[str, Any] = {}
    for label in (
        "providers",
        "actionlog",
        "teams",
        "sessions_app",
        "compaction_app",
        "agent",
        "audit",
        "reviews",
    ):
        for model in apps.get_app_config(label).get_models():
            counts[model._meta.label] = model.objects.count()
    counts["sessions"] = sorted(ChatSession.objects.values_list("pk", "name", "leaf_entry_id", "next_seq"))
    counts["roles"] = sorted(TeamMembership.objects.values_list("team_id", "user_id", "role"))
    counts["links"] = sorted(ShareLink.objects.values_list("pk", "revoked_at"))
    return counts


def send(world: World, route: str, method: str, url: str, body: str | None) -> None:
    before = snapshot()
    call = getattr(world.client, method)
    if body is None:
        response = call(url)
    else:
        response = call(url, data=body.encode("utf-8", "surrogatepass"), content_type="application/json")
    TALLY.requests += 1
    TALLY.routes.add(f"{method.upper()} {route}")
    TALLY.by_status[response.status_code] = TALLY.by_status.get(response.status_code, 0) + 1
    shown = (body or "")[:120]
    assert response.status_code < 500, f"{method.upper()} {url} {shown!r} → {response.status_code}"
    if 400 <= response.status_code < 500:
        after = snapshot()
        if after != before and _only_a_refusal_kept(before, after):
            return
        assert after == before, (
            f"{method.upper()} {url} {shown!r} stored something with {response.status_code}"
        )
        if url.startswith("/api/") and response.get("Content-Type", "").startswith("application/json"):
            assert "error" in response.json(), f"{method.upper()} {url}: {response.content[:200]!r}"


def _only_a_refusal_kept(before: dict[str, Any], after: dict[str, Any]) -> bool:
    """Whether the one change is a refused compaction kept in the history: its run and its log row."""
    runs, log = "compaction_app.CompactionRun", "actionlog.ActionLog"
    rest = {k: v for k, v in after.items() if k not in (runs, log)}
    if rest != {k: v for k, v in before.items() if k not in (runs, log)}:
        return False
    if (after[runs] - before[runs], after[log] - before[log]) != (1, 1):
        return False
    newest = CompactionRun.objects.order_by("-pk").first()
    return newest is not None and newest.status == CompactionRun.Status.REFUSED and bool(newest.error)


def mutations(template: dict[str, Any]) -> Iterator[str]:
    """Yield the template as JSON with one field (or one nested field) replaced by each hostile value."""
    for key in template:
        for value in HOSTILE_VALUES:
            parts = [f"{json.dumps(k)}: {value if k == key else json.dumps(v)}" for k, v in template.items()]
            yield "{" + ", ".join(parts) + "}"
    entries = template.get("entries")
    if isinstance(entries, list):
        for key in entries[0]:
            for value in HOSTILE_VALUES:
                inner = ", ".join(
                    f"{json.dumps(k)}: {value if k == key else json.dumps(v)}" for k, v in entries[0].items()
                )
                yield (
                    json.dumps({k: v for k, v in template.items() if k != "entries"})[:-1]
                    + ', "entries": [{'
                    + inner
                    + "}]}"
                )
    lines = template.get("lines")
    if isinstance(lines, list):
        for value in (
            '{"type":"message","id":"\\u0000","parentId":null}',
            '{"type":"x","id":"\\ud800"}',
            DEEP,
        ):
            yield json.dumps({**template, "lines": [value]})
        yield json.dumps({**template, "header": '{"type":"session","version":3,"id":"\\u0000","cwd":"/"}'})


WRITE_ROUTES = sorted({(r, m) for r, view in routes() for m in methods(view) if m != "get"})


@pytest.mark.django_db
@pytest.mark.parametrize(("route", "method"), WRITE_ROUTES, ids=[f"{m} {r}" for r, m in WRITE_ROUTES])
def test_hostile_bodies_never_cause_a_server_error_or_a_write(world: World, route: str, method: str) -> None:
    url = fill(route, world.ids)
    for body in HOSTILE_BODIES:
        send(world, route, method, url, body)
    for body in mutations(TEMPLATES.get((route, method), {})):
        send(world, route, method, url, body)
    with override_settings(PIWEB_MAX_BODY_BYTES=4096):
        send(world, route, method, url, json.dumps({"x": "y" * 5000}))


PARAM_ROUTES = sorted({(r, m) for r, view in routes() if "<" in r for m in methods(view)})


@pytest.mark.django_db
@pytest.mark.parametrize(("route", "method"), PARAM_ROUTES, ids=[f"{m} {r}" for r, m in PARAM_ROUTES])
def test_hostile_path_segments_never_cause_a_server_error(world: World, route: str, method: str) -> None:
    names = [part.split(":")[-1].rstrip(">") for part in route.split("<")[1:]]
    for name in names:
        for segment in HOSTILE_SEGMENTS:
            send(
                world,
                route,
                method,
                fill(route, world.ids, (name, segment)),
                None if method == "get" else "{}",
            )


@pytest.mark.django_db
@pytest.mark.parametrize(
    "query",
    [
        "q=%00",
        "link=%00",
        "piId=a%00b",
        "since=%00",
        "leaf=%ED%A0%80",
        "limit=99999999999999999999",
        "page=%00",
    ],
)
def test_hostile_query_values_never_cause_a_server_error(world: World, query: str) -> None:
    for route, view in routes():
        if "get" in methods(view):
            send(world, route, "get", fill(route, world.ids) + "?" + query, None)


def test_report_counts() -> None:
    """Print what the fuzz tests sent (run with -s to see it)."""
    print(
        f"\nhostile requests: {TALLY.requests} to {len(TALLY.routes)} method+route pairs; "
        f"statuses: {dict(sorted(TALLY.by_status.items()))}"
    )
    assert all(code < 500 for code in TALLY.by_status)
