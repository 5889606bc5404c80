"""Every route and the live socket × the six kinds of caller → the exact status (or close code).

A route added to the project without a row here fails ``test_every_route_is_in_the_matrix``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from channels.testing import WebsocketCommunicator
from django.conf import settings
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver

from organize.models import Tag
from piweb.asgi import application
from reviews.services import request_review

from .conftest import ACTORS, World, build_world

# Routes outside the matrix, each with the reason it needs no session permission.
PUBLIC = {
    "accounts/login/": "sign-in form",
    "accounts/logout/": "sign-out",
    "accounts/password_change/": "Django's own login_required view",
    "accounts/password_change/done/": "Django's own login_required view",
    "accounts/password_reset/": "public by design",
    "accounts/password_reset/done/": "public by design",
    "accounts/reset/<uidb64>/<token>/": "guarded by the signed reset token",
    "accounts/reset/done/": "public by design",
    "api/schema/": "the API description holds no data",
    "api/docs/": "the API description holds no data",
    "api/redoc/": "the API description holds no data",
    "api/token/": "exchanges a username and password for a token",
    "healthz": "a probe: says only that the process is up",
    "readyz": "a probe: names the services that did not answer, nothing of any session",
    "metrics": "counts by route pattern only; off unless PIWEB_METRICS=1; PIWEB_METRICS_TOKEN: bearer token",
    "accounts/oidc/<str:provider_id>/login/": "starts a sign-in with the identity provider (POST, CSRF)",
    "accounts/oidc/<str:provider_id>/login/callback/": "guarded by the state of a sign-in started here",
}
STAFF_PREFIXES = (
    "admin/",
)  # Django's admin: is_staff and model permissions, tested by the admin's own tests


@dataclass(frozen=True, slots=True)
class Row:
    route: str
    method: str
    path: Callable[[World], str]
    expected: str  # statuses for owner, editor, viewer, link holder, other user, anonymous
    body: Any = None
    fmt: str = "json"

    def outcome(self, actor: str) -> int:
        return int(self.expected.split()[ACTORS.index(actor)])


def s(suffix: str = "") -> Callable[[World], str]:
    return lambda w: f"/api/sessions/{w.session.pk}/{suffix}"


def review(suffix: str = "") -> Callable[[World], str]:
    """A review the owner asked of the editor and the viewer (made when the row runs)."""

    def path(w: World) -> str:
        made = request_review(actor=w.owner, session=w.session, reviewers=["editor", "viewer"])
        return f"/api/reviews/{made.pk}/{suffix}"

    return path


NEW_FILE = (
    b'{"type":"session","version":3,"id":"imported","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/x"}\n'
)
REMOTE = {"runnerId": 999999, "workspace": "work", "prompt": "go"}
HOOK = {"name": "ci", "url": "https://hooks.example.com/piweb", "events": ["run.failed"]}
APPEND = {"entries": [{"type": "message", "message": {"role": "user", "content": "more", "timestamp": 3}}]}

ROWS = [
    #                                                                    own edit view link other anon
    Row("api/sessions/", "GET", lambda w: "/api/sessions/", "200 200 200 403 200 403"),
    Row("api/sessions/", "POST", lambda w: "/api/sessions/", "201 201 201 403 201 403", {"cwd": "/w"}),
    Row(
        "api/sessions/import/",
        "POST",
        lambda w: "/api/sessions/import/?filename=x.jsonl",
        "201 201 201 403 201 403",
        NEW_FILE,
        "ndjson",
    ),
    Row("api/search/", "GET", lambda w: "/api/search/?q=hello", "200 200 200 403 200 403"),
    Row("api/sync/", "GET", lambda w: f"/api/sync/?piId={w.session.pi_id}", "200 200 200 403 200 403"),
    Row("api/sessions/<int:pk>/", "GET", s(), "200 200 200 200 404 403"),
    Row("api/sessions/<int:pk>/", "PATCH", s(), "200 200 403 403 404 403", {"name": "renamed"}),
    Row("api/sessions/<int:pk>/", "DELETE", s(), "204 403 403 403 404 403"),
    Row("api/sessions/<int:pk>/entries/", "GET", s("entries/"), "200 200 200 200 404 403"),
    Row("api/sessions/<int:pk>/entries/<str:entry_id>/", "GET", s("entries/u2/"), "200 200 200 200 404 403"),
    Row("api/sessions/<int:pk>/tree/", "GET", s("tree/"), "200 200 200 200 404 403"),
    Row("api/sessions/<int:pk>/context/", "GET", s("context/"), "200 200 200 200 404 403"),
    Row("api/sessions/<int:pk>/path/", "GET", s("path/"), "200 200 200 200 404 403"),
    Row("api/sessions/<int:pk>/files/", "GET", s("files/"), "200 200 200 200 404 403"),
    Row("api/sessions/<int:pk>/commits/", "GET", s("commits/"), "200 200 200 200 404 403"),
    # Provenance: anyone signed in may ask; the answer holds only sessions the caller may read.
    Row("api/provenance/", "GET", lambda w: "/api/provenance/?commit=abcdef0", "200 200 200 403 200 403"),
    Row("api/sessions/<int:pk>/export/", "GET", s("export/"), "200 200 200 200 404 403"),
    Row("api/sessions/<int:pk>/search/", "GET", s("search/?q=hello"), "200 200 200 200 404 403"),
    Row(
        "api/sessions/<int:pk>/navigate/",
        "POST",
        s("navigate/"),
        "200 200 403 403 404 403",
        {"targetId": "a2"},
    ),
    Row("api/sessions/<int:pk>/fork/", "POST", s("fork/"), "201 201 201 403 404 403", {"entryId": "a2"}),
    Row("api/sessions/<int:pk>/clone/", "POST", s("clone/"), "201 201 201 403 404 403", {}),
    Row(
        "api/sessions/<int:pk>/labels/",
        "POST",
        s("labels/"),
        "201 201 403 403 404 403",
        {"targetId": "u2", "label": "here"},
    ),
    Row("api/sessions/<int:pk>/append/", "POST", s("append/"), "201 201 403 403 404 403", APPEND),
    Row("api/sessions/<int:pk>/compact/", "POST", s("compact/"), "400 400 403 403 404 403", {}),
    Row("api/sessions/<int:pk>/runs/", "GET", s("runs/"), "200 200 200 403 404 403"),
    Row("api/sessions/<int:pk>/runs/", "POST", s("runs/"), "409 409 403 403 404 403", {"prompt": "go"}),
    Row(
        "api/sessions/<int:pk>/runs/regenerate/",
        "POST",
        s("runs/regenerate/"),
        "409 409 403 403 404 403",
        {"entryId": "a2"},
    ),
    Row(
        "api/sessions/<int:pk>/runs/edit/",
        "POST",
        s("runs/edit/"),
        "409 409 403 403 404 403",
        {"entryId": "u2", "prompt": "again"},
    ),
    Row(
        "api/sessions/<int:pk>/runs/render/",
        "POST",
        s("runs/render/"),
        "200 200 200 403 404 403",
        {"text": "**streaming**"},
    ),
    Row("api/sessions/<int:pk>/runs/stop/", "POST", s("runs/stop/"), "202 202 403 403 404 403"),
    Row(
        "api/operations/<uuid:operation_id>/",
        "GET",
        lambda w: f"/api/operations/{w.operation.operation_id}/",
        "200 200 200 403 404 403",
    ),
    Row(
        "api/operations/<uuid:operation_id>/cancel/",
        "POST",
        lambda w: f"/api/operations/{w.operation.operation_id}/cancel/",
        "200 200 403 403 404 403",
    ),
    Row(
        "api/runs/<uuid:run_id>/", "GET", lambda w: f"/api/runs/{w.run.public_id}/", "200 200 200 403 404 403"
    ),
    Row(
        "api/runs/<uuid:run_id>/abort/",
        "POST",
        lambda w: f"/api/runs/{w.run.public_id}/abort/",
        "202 202 403 403 404 403",
    ),
    Row("api/sessions/<int:pk>/shares/", "GET", s("shares/"), "200 403 403 403 404 403"),
    Row("api/sessions/<int:pk>/shares/", "POST", s("shares/"), "201 403 403 403 404 403", None),
    Row(
        "api/sessions/<int:pk>/shares/<int:team_id>/",
        "DELETE",
        lambda w: f"/api/sessions/{w.session.pk}/shares/{w.team.pk}/",
        "204 403 403 403 404 403",
    ),
    Row("api/sessions/<int:pk>/links/", "GET", s("links/"), "200 403 403 403 404 403"),
    Row("api/sessions/<int:pk>/links/", "POST", s("links/"), "201 403 403 403 404 403", {"scope": "tree"}),
    Row(
        "api/links/<int:link_id>/", "DELETE", lambda w: f"/api/links/{w.link.pk}/", "204 403 403 403 404 403"
    ),
    # Secrets found in a session and a link's opens: the owner only (teammates and link holders never).
    Row("api/secrets/", "GET", lambda w: "/api/secrets/", "200 200 200 403 200 403"),
    # Checking a text about to be sent: anyone signed in, about their own text; link holders are not.
    Row(
        "api/secrets/check/",
        "POST",
        lambda w: "/api/secrets/check/",
        "200 200 200 403 200 403",
        {"text": "nothing secret"},
    ),
    Row("api/sessions/<int:pk>/secrets/", "GET", s("secrets/"), "200 403 403 403 404 403"),
    Row(
        "api/sessions/<int:pk>/secrets/redact/",
        "POST",
        s("secrets/redact/"),
        "200 403 403 403 404 403",
        {"all": True},
    ),
    Row(
        "api/links/<int:link_id>/views/",
        "GET",
        lambda w: f"/api/links/{w.link.pk}/views/",
        "200 403 403 403 404 403",
    ),
    Row("api/sessions/<int:pk>/settings/", "GET", s("settings/"), "200 200 200 403 404 403"),
    Row(
        "api/sessions/<int:pk>/settings/",
        "PUT",
        s("settings/"),
        "200 200 403 403 404 403",
        {"compaction": {"reserveTokens": 1000}},
    ),
    Row("api/sessions/<int:pk>/continue-in-pi/", "GET", s("continue-in-pi/"), "200 200 200 403 404 403"),
    Row("api/tokens/", "GET", lambda w: "/api/tokens/", "200 200 200 403 200 403"),
    # Runners: a Pi writing live, the runners one may use, runs on them, handing a session over.
    Row(
        "api/sync/presence/",
        "POST",
        lambda w: "/api/sync/presence/",
        "200 404 404 403 404 403",
    ),
    Row("api/runners/", "GET", lambda w: "/api/runners/", "200 200 200 403 200 403"),
    # Organize: pins are anyone's who reads; archive needs write; tags the team's editors or the writers.
    Row("api/sessions/<int:pk>/pin/", "POST", s("pin/"), "200 200 200 403 404 403"),
    Row("api/sessions/<int:pk>/pin/", "DELETE", s("pin/"), "200 200 200 403 404 403"),
    Row("api/sessions/<int:pk>/archive/", "POST", s("archive/"), "200 200 403 403 404 403"),
    Row("api/sessions/<int:pk>/archive/", "DELETE", s("archive/"), "200 200 403 403 404 403"),
    Row("api/sessions/<int:pk>/tags/", "GET", s("tags/"), "200 200 200 403 404 403"),
    Row("api/sessions/<int:pk>/tags/", "POST", s("tags/"), "200 200 403 403 404 403"),
    Row(
        "api/sessions/<int:pk>/tags/<int:tag_id>/",
        "DELETE",
        lambda w: f"/api/sessions/{w.session.pk}/tags/{_tag(w)}/",
        "200 200 403 403 404 403",
    ),
    Row(
        "api/teams/<int:team_id>/tags/",
        "GET",
        lambda w: f"/api/teams/{w.team.pk}/tags/",
        "200 200 200 403 404 403",
    ),
    Row(
        "api/teams/<int:team_id>/tags/",
        "POST",
        lambda w: f"/api/teams/{w.team.pk}/tags/",
        "201 201 403 403 404 403",
        {"name": "urgent"},
    ),
    Row(
        "api/tags/<int:tag_id>/",
        "PATCH",
        lambda w: f"/api/tags/{_tag(w)}/",
        "200 200 403 403 404 403",
        {"colour": "red"},
    ),
    Row("api/tags/<int:tag_id>/", "DELETE", lambda w: f"/api/tags/{_tag(w)}/", "204 204 403 403 404 403"),
    Row("api/saved-filters/", "GET", lambda w: "/api/saved-filters/", "200 200 200 403 200 403"),
    Row(
        "api/saved-filters/",
        "POST",
        lambda w: "/api/saved-filters/",
        "201 201 201 403 201 403",
        {"name": "mine", "query": "pinned=1"},
    ),
    Row(
        "api/saved-filters/<int:filter_id>/",
        "DELETE",
        lambda w: "/api/saved-filters/999999/",
        "404 404 404 403 404 403",
    ),
    # A selection the caller cannot read answers as one of nothing (200, all "missing").
    Row("api/sessions/bulk/", "POST", lambda w: "/api/sessions/bulk/", "200 200 200 403 200 403"),
    Row("api/runners/", "POST", lambda w: "/api/runners/", "201 201 201 403 201 403", {"name": "box"}),
    Row(
        "api/runners/<int:runner_id>/", "DELETE", lambda w: "/api/runners/999999/", "404 404 404 403 404 403"
    ),
    Row("api/sessions/<int:pk>/runners/", "GET", s("runners/"), "200 200 200 403 404 403"),
    Row("api/sessions/<int:pk>/runs/remote/", "GET", s("runs/remote/"), "200 200 200 403 404 403"),
    Row("api/sessions/<int:pk>/runs/remote/", "POST", s("runs/remote/"), "404 404 403 403 404 403", REMOTE),
    Row("api/sessions/<int:pk>/handoff/", "GET", s("handoff/"), "200 200 403 403 404 403"),
    Row(
        "api/sessions/<int:pk>/handoff/", "POST", s("handoff/"), "400 400 403 403 404 403", {"userId": 999999}
    ),
    Row(
        "api/runs/<uuid:run_id>/steer/",
        "POST",
        lambda w: f"/api/runs/{w.run.public_id}/steer/",
        "409 409 403 403 404 403",
        {"message": "also this"},
    ),
    Row(
        "api/runs/<uuid:run_id>/follow-up/",
        "POST",
        lambda w: f"/api/runs/{w.run.public_id}/follow-up/",
        "409 409 403 403 404 403",
        {"message": "then this"},
    ),
    Row(
        "api/tokens/<str:token_id>/",
        "DELETE",
        lambda w: "/api/tokens/000000000000000/",
        "404 404 404 403 404 403",
    ),
    Row("api/teams/", "GET", lambda w: "/api/teams/", "200 200 200 403 200 403"),
    Row("api/teams/", "POST", lambda w: "/api/teams/", "201 201 201 403 201 403", None),
    Row(
        "api/teams/<int:team_id>/members/",
        "POST",
        lambda w: f"/api/teams/{w.team.pk}/members/",
        "202 403 403 403 404 403",
        {"username": "other", "role": "viewer"},
    ),
    Row(
        "api/teams/<int:team_id>/members/<str:username>/",
        "PATCH",
        lambda w: f"/api/teams/{w.team.pk}/members/viewer/",
        "200 403 403 403 404 403",
        {"role": "editor"},
    ),
    # The viewer removing "viewer" is leaving the team, which any member may do.
    Row(
        "api/teams/<int:team_id>/members/<str:username>/",
        "DELETE",
        lambda w: f"/api/teams/{w.team.pk}/members/viewer/",
        "204 403 204 403 404 403",
    ),
    Row("api/tokens/", "POST", lambda w: "/api/tokens/", "201 201 201 403 201 403", {"name": "laptop"}),
    Row("api/teams/<int:team_id>/", "GET", lambda w: f"/api/teams/{w.team.pk}/", "200 200 200 403 404 403"),
    Row(
        "api/teams/<int:team_id>/",
        "PATCH",
        lambda w: f"/api/teams/{w.team.pk}/",
        "200 403 403 403 404 403",
        {"defaultShare": "viewer"},
    ),
    Row(
        "api/teams/<int:team_id>/sessions/",
        "GET",
        lambda w: f"/api/teams/{w.team.pk}/sessions/?q=a",
        "200 200 200 403 404 403",
    ),
    Row(
        "api/teams/<int:team_id>/invitations/",
        "GET",
        lambda w: f"/api/teams/{w.team.pk}/invitations/",
        "200 403 403 403 404 403",
    ),
    Row(
        "api/teams/<int:team_id>/invitations/<int:invitation_id>/",
        "DELETE",
        lambda w: f"/api/teams/{w.team.pk}/invitations/999999/",
        "404 403 403 403 404 403",
    ),
    Row("api/invitations/", "GET", lambda w: "/api/invitations/", "200 200 200 403 200 403"),
    # Costs: a session's as its entries; my usage is mine alone; a team's for its owners only.
    Row("api/sessions/<int:pk>/cost/", "GET", s("cost/"), "200 200 200 200 404 403"),
    Row("api/usage/", "GET", lambda w: "/api/usage/", "200 200 200 403 200 403"),
    Row(
        "api/usage/sessions/",
        "GET",
        lambda w: f"/api/usage/sessions/?ids={w.session.pk}",
        "200 200 200 403 200 403",
    ),
    Row(
        "api/teams/<int:team_id>/activity/",
        "GET",
        lambda w: f"/api/teams/{w.team.pk}/activity/",
        "200 200 200 403 404 403",
    ),
    Row(
        "api/teams/<int:team_id>/activity/digest/",
        "GET",
        lambda w: f"/api/teams/{w.team.pk}/activity/digest/",
        "200 200 200 403 404 403",
    ),
    Row(
        "api/teams/<int:team_id>/activity/digest/",
        "PUT",
        lambda w: f"/api/teams/{w.team.pk}/activity/digest/",
        "200 200 200 403 404 403",
        {"digest": False},
    ),
    Row(
        "api/teams/<int:team_id>/usage/",
        "GET",
        lambda w: f"/api/teams/{w.team.pk}/usage/",
        "200 403 403 403 404 403",
    ),
    Row(
        "api/invitations/<int:invitation_id>/accept/",
        "POST",
        lambda w: "/api/invitations/999999/accept/",
        "404 404 404 403 404 403",
    ),
    Row(
        "api/invitations/<int:invitation_id>/decline/",
        "POST",
        lambda w: "/api/invitations/999999/decline/",
        "404 404 404 403 404 403",
    ),
    # Comments: any member reads and resolves, the team decides for viewers (on by default), links read.
    Row("api/sessions/<int:pk>/comments/", "GET", s("comments/"), "200 200 200 200 404 403"),
    Row(
        "api/sessions/<int:pk>/comments/",
        "POST",
        s("comments/"),
        "201 201 201 403 404 403",
        {"entryId": "u2", "body": "a reply"},
    ),
    Row("api/sessions/<int:pk>/comments/export/", "GET", s("comments/export/"), "200 200 200 200 404 403"),
    Row("api/sessions/<int:pk>/comments/people/", "GET", s("comments/people/"), "200 200 200 403 404 403"),
    Row(
        "api/comments/<int:comment_id>/",
        "PATCH",
        lambda w: f"/api/comments/{w.comment.pk}/",
        "200 200 200 403 404 403",
        {"resolved": True},
    ),
    # Only its author (the owner here) deletes a comment.
    Row(
        "api/comments/<int:comment_id>/",
        "DELETE",
        lambda w: f"/api/comments/{w.comment.pk}/",
        "204 403 403 403 404 403",
    ),
    Row(
        "api/teams/<int:team_id>/discussion/",
        "GET",
        lambda w: f"/api/teams/{w.team.pk}/discussion/",
        "200 200 200 403 404 403",
    ),
    Row(
        "api/teams/<int:team_id>/discussion/",
        "PUT",
        lambda w: f"/api/teams/{w.team.pk}/discussion/",
        "200 403 403 403 404 403",
        {"viewersMayComment": True},
    ),
    Row("api/inbox/", "GET", lambda w: "/api/inbox/", "200 200 200 403 200 403"),
    Row("api/inbox/read/", "POST", lambda w: "/api/inbox/read/", "200 200 200 403 200 403", {"all": True}),
    Row(
        "api/inbox/settings/",
        "PUT",
        lambda w: "/api/inbox/settings/",
        "200 200 200 403 200 403",
        {"email": "none"},
    ),
    # Everyone signed in has their own activity; one session's rows only for those who may read it.
    Row("api/activity/", "GET", lambda w: "/api/activity/", "200 200 200 403 200 403"),
    Row(
        "api/activity/",
        "GET",
        lambda w: f"/api/activity/?session={w.session.pk}",
        "200 200 200 403 404 403",
    ),
    # Reviews: members of the review's team who may read the session; reviewers decide, the requester
    # withdraws or asks again, writers ask for review; a link reads none of it.
    Row("api/reviews/", "GET", lambda w: "/api/reviews/", "200 200 200 403 200 403"),
    Row("api/reviews/<int:review_id>/", "GET", review(), "200 200 200 403 404 403"),
    Row(
        "api/reviews/<int:review_id>/decision/",
        "POST",
        review("decision/"),
        "403 200 200 403 404 403",
        {"decision": "approved", "note": "fine"},
    ),
    Row("api/reviews/<int:review_id>/withdraw/", "POST", review("withdraw/"), "200 403 403 403 404 403"),
    Row("api/reviews/<int:review_id>/request/", "POST", review("request/"), "200 403 403 403 404 403"),
    Row("api/sessions/<int:pk>/reviews/", "GET", s("reviews/"), "200 200 200 403 404 403"),
    Row(
        "api/sessions/<int:pk>/reviews/",
        "POST",
        s("reviews/"),
        "201 201 403 403 404 403",
        {"reviewers": ["viewer"], "entryId": "a2"},
    ),
    # Webhooks: one's own, and a team's for its owners; a hook nobody may see is not found.
    Row("api/hooks/", "GET", lambda w: "/api/hooks/", "200 200 200 403 200 403"),
    Row("api/hooks/", "POST", lambda w: "/api/hooks/", "201 201 201 403 201 403", HOOK),
    Row(
        "api/teams/<int:team_id>/hooks/",
        "GET",
        lambda w: f"/api/teams/{w.team.pk}/hooks/",
        "200 403 403 403 404 403",
    ),
    Row(
        "api/teams/<int:team_id>/hooks/",
        "POST",
        lambda w: f"/api/teams/{w.team.pk}/hooks/",
        "201 403 403 403 404 403",
        HOOK,
    ),
    Row("api/hooks/<int:hook_id>/", "GET", lambda w: "/api/hooks/999999/", "404 404 404 403 404 403"),
    Row(
        "api/hooks/<int:hook_id>/",
        "PATCH",
        lambda w: "/api/hooks/999999/",
        "404 404 404 403 404 403",
        {"active": False},
    ),
    Row("api/hooks/<int:hook_id>/", "DELETE", lambda w: "/api/hooks/999999/", "404 404 404 403 404 403"),
    Row(
        "api/hooks/<int:hook_id>/rotate/",
        "POST",
        lambda w: "/api/hooks/999999/rotate/",
        "404 404 404 403 404 403",
    ),
    Row(
        "api/hooks/<int:hook_id>/ping/",
        "POST",
        lambda w: "/api/hooks/999999/ping/",
        "404 404 404 403 404 403",
    ),
    Row(
        "api/hooks/<int:hook_id>/deliveries/",
        "GET",
        lambda w: "/api/hooks/999999/deliveries/",
        "404 404 404 403 404 403",
    ),
    Row(
        "api/hooks/<int:hook_id>/deliveries/<int:delivery_id>/replay/",
        "POST",
        lambda w: "/api/hooks/999999/deliveries/1/replay/",
        "404 404 404 403 404 403",
    ),
    # Pages: sign-in first (302), then the same rules as the API.
    Row("", "GET", lambda w: "/", "200 200 200 302 200 302"),
    Row("import/", "GET", lambda w: "/import/", "200 200 200 302 200 302"),
    Row("sessions/<int:pk>/", "GET", lambda w: f"/sessions/{w.session.pk}/", "200 200 200 302 404 302"),
    Row(
        "sessions/<int:pk>/compare/",
        "GET",
        lambda w: f"/sessions/{w.session.pk}/compare/",
        "200 200 200 302 404 302",
    ),
    Row("links/", "GET", lambda w: "/links/", "200 200 200 302 200 302"),
    Row("teams/", "GET", lambda w: "/teams/", "200 200 200 302 200 302"),
    Row("teams/<int:team_id>/", "GET", lambda w: f"/teams/{w.team.pk}/", "200 200 200 302 404 302"),
    # Team activity: the team's members, each for themselves; anyone else does not learn the team exists.
    Row(
        "teams/<int:team_id>/activity/",
        "GET",
        lambda w: f"/teams/{w.team.pk}/activity/",
        "200 200 200 302 404 302",
    ),
    Row(
        "teams/<int:team_id>/activity.csv",
        "GET",
        lambda w: f"/teams/{w.team.pk}/activity.csv",
        "200 200 200 302 404 302",
    ),
    Row("tokens/", "GET", lambda w: "/tokens/", "200 200 200 302 200 302"),
    Row("runners/", "GET", lambda w: "/runners/", "200 200 200 302 200 302"),
    Row("tags/", "GET", lambda w: "/tags/", "200 200 200 302 200 302"),
    Row("usage/", "GET", lambda w: "/usage/", "200 200 200 302 200 302"),
    Row("inbox/", "GET", lambda w: "/inbox/", "200 200 200 302 200 302"),
    Row("reviews/", "GET", lambda w: "/reviews/", "200 200 200 302 200 302"),
    Row(
        "teams/<int:team_id>/reviews/",
        "GET",
        lambda w: f"/teams/{w.team.pk}/reviews/",
        "200 200 200 302 404 302",
    ),
    Row("hooks/", "GET", lambda w: "/hooks/", "200 200 200 302 200 302"),
    Row(
        "teams/<int:team_id>/hooks/", "GET", lambda w: f"/teams/{w.team.pk}/hooks/", "200 403 403 302 404 302"
    ),
    Row("activity/", "GET", lambda w: "/activity/", "200 200 200 302 200 302"),
    Row("activity/", "GET", lambda w: f"/activity/?session={w.session.pk}", "200 200 200 302 404 302"),
    Row("s/<str:token>/", "GET", lambda w: f"/s/{w.link.raw_token}/", "200 200 200 200 200 200"),
]
SOCKET = "1000 1000 1000 1000 4403 4401"  # 1000: accepted and sent its state


def routes() -> Iterator[str]:
    """Yield every URL pattern of the project as one string, without recursion."""
    stack: list[tuple[Any, str]] = [(p, "") for p in reversed(get_resolver().url_patterns)]
    while stack:
        pattern, prefix = stack.pop()
        if isinstance(pattern, URLResolver):
            stack.extend((child, prefix + str(pattern.pattern)) for child in reversed(pattern.url_patterns))
        elif isinstance(pattern, URLPattern):
            yield prefix + str(pattern.pattern)


def test_every_route_is_in_the_matrix() -> None:
    covered = {row.route for row in ROWS}
    missing = [
        r for r in routes() if r not in covered and r not in PUBLIC and not r.startswith(STAFF_PREFIXES)
    ]
    assert missing == [], f"routes without an authorization row: {missing}"
    assert not covered - set(routes()), "matrix rows for routes that no longer exist"


def _tag(world: World) -> int:
    """The team's tag, on the session (made the first time a row asks for it)."""
    tag, _ = Tag.objects.get_or_create(team=world.team, name="billing")
    tag.applied.get_or_create(session=world.session)
    return tag.pk


def body_for(row: Row, world: World) -> Any:
    if row.route == "api/sessions/<int:pk>/tags/" and row.method == "POST":
        return {"tagId": _tag(world)}
    if row.route == "api/sessions/bulk/":
        return {"action": "archive", "sessions": [world.session.pk]}
    if row.route == "api/sessions/<int:pk>/shares/" and row.method == "POST":
        return {"teamId": world.team.pk, "access": "viewer"}
    if row.route == "api/teams/" and row.method == "POST":
        return {"name": "new team"}
    if row.route == "api/sync/presence/":
        return {"piId": world.session.pi_id, "device": "laptop"}
    return row.body


@pytest.mark.usefixtures("eager_tasks")
@pytest.mark.parametrize("actor", ACTORS)
@pytest.mark.parametrize("row", ROWS, ids=lambda r: f"{r.method} {r.route or '/'}")
def test_route(row: Row, actor: str, user: Callable[..., Any]) -> None:
    world = build_world(user)
    client = world.client(actor)
    path = row.path(world)
    body = body_for(row, world)
    kwargs: dict[str, Any] = {}
    if body is not None:
        if row.fmt == "ndjson":
            kwargs = {"data": body, "content_type": "application/x-ndjson"}
        else:
            kwargs = {"data": body, "format": "json"}
    response = getattr(client, row.method.lower())(path, **kwargs)
    detail = getattr(response, "data", None) or getattr(response, "content", b"")[:200]
    assert response.status_code == row.outcome(actor), f"{row.method} {path} as {actor}: {detail}"


# -- the live socket ------------------------------------------------------------------------------------


def socket_outcome(world: World, actor: str) -> int:
    headers = [(b"host", b"127.0.0.1:8000"), (b"origin", b"http://127.0.0.1:8000")]
    account = world.user_of(actor)
    if account is not None:
        web = Client()
        web.force_login(account)
        headers.append((b"cookie", f"sessionid={web.cookies['sessionid'].value}".encode()))
    query = f"?link={world.link.raw_token}" if actor == "link" else ""

    async def attempt() -> int:
        ws = WebsocketCommunicator(application, f"/ws/sessions/{world.session.pk}/{query}", headers=headers)
        connected, code = await ws.connect(timeout=5)
        if not connected:
            return int(code or 0)
        message = await ws.receive_json_from(timeout=5)
        await ws.disconnect()
        return 1000 if message.get("type") == "state" else -1

    return async_to_sync(attempt)()


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("actor", ACTORS)
def test_socket(actor: str, user: Callable[..., Any]) -> None:
    assert "Redis" in settings.CHANNEL_LAYERS["default"]["BACKEND"], "the socket row needs the Redis layer"
    world = build_world(user)
    assert socket_outcome(world, actor) == int(SOCKET.split()[ACTORS.index(actor)])
