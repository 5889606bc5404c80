"""Every write use case, through every adapter that offers it, leaves exactly one action-log row.

The table names the adapter (REST, task, command, sync, admin), what is done, and the row it must leave:
its action and who acted (a user, or the named worker or command). Pages and sockets offer no writes of
their own (a page's buttons call the REST API; the socket only reads), so they have no rows here.
Everything runs against the real database; tasks run in-process through Celery's own ``apply``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from io import StringIO
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from django.core.management import call_command
from django.test import Client, override_settings
from rest_framework.test import APIClient

from accounts_app import api_tokens
from actionlog.models import ActionLog
from actionlog.verbs import verbs_by_name
from activity import tasks as activity_tasks
from agent import services as agent_services
from compaction_app import tasks as compaction_tasks
from compaction_app.models import CompactionRun
from compaction_app.services import request_compaction, start_branch_summary
from core.actors import IDENTITY_PROVIDER
from governance import tasks as governance_tasks
from governance.models import LegalHold, SecretFinding
from governance.scanning import scan_range
from hooks import services as hook_services
from organize.models import Tag
from providers.models import LLMProvider
from sessions_app import services
from sessions_app import tasks as session_tasks
from sessions_app.models import ChatSession, ShareLink
from teams import services as team_services
from teams.models import Team, TeamInvitation, TeamMembership
from tests.factories import HEADER, conversation, line, session_file, store, user_message

pytestmark = pytest.mark.django_db

# Every app's verbs by name (A.TEAM_CREATE == "team_create"), as the apps declare them.
A = SimpleNamespace(**verbs_by_name())


@dataclass
class World:
    owner: Any
    other: Any
    staff: Any
    session: ChatSession
    team: Team
    client: APIClient  # signed in as the owner
    tmp: Path

    def api(self, user: Any) -> APIClient:
        client = APIClient()
        client.force_authenticate(user=user)
        return client


@pytest.fixture
def world(user: Callable[..., Any], tmp_path: Path, settings: Any) -> World:
    settings.PIWEB_COMPACTION = {"keepRecentTokens": 100}  # eight turns are enough to compact
    owner, other = user("owner"), user("other")
    staff = user("staff", is_staff=True, is_superuser=True)
    session = store(owner, conversation(8))
    team = team_services.create_team(actor=owner, name="core")
    client = APIClient()
    client.force_authenticate(user=owner)
    return World(owner, other, staff, session, team, client, tmp_path)


def _file(pi_id: str) -> bytes:
    return ("\n".join(line(v) for v in [{**HEADER, "id": pi_id}, *conversation(2)]) + "\n").encode()


def _ok(response: Any) -> None:
    assert response.status_code < 300, (response.status_code, getattr(response, "content", b"")[:300])


def _provider() -> LLMProvider:
    return LLMProvider.objects.create(
        name="scripted", base_url="http://127.0.0.1:9/v1", model_id="m", provider="p"
    )


def _link(w: World) -> ShareLink:
    return services.create_share_link(session=w.session, actor=w.owner)


def _member(w: World, role: str = "viewer") -> None:
    TeamMembership.objects.create(team=w.team, user=w.other, role=role)


def _invitation(w: World) -> TeamInvitation:
    team_services.invite_member(actor=w.owner, team_id=w.team.pk, username="other", role="viewer")
    return TeamInvitation.objects.get(team=w.team, user=w.other)


def _deleted(w: World) -> int:
    services.delete_session(session=w.session, actor=w.owner)
    return w.session.pk


# -- REST ------------------------------------------------------------------------------------------------


def rest_create(w: World) -> None:
    _ok(w.client.post("/api/sessions/", {"cwd": "/w", "name": "new"}, format="json"))


def rest_import(w: World) -> None:
    _ok(
        w.client.post(
            "/api/sessions/import/?filename=x.jsonl", _file("imported"), content_type="application/x-ndjson"
        )
    )


def rest_rename(w: World) -> None:
    _ok(w.client.patch(f"/api/sessions/{w.session.pk}/", {"name": "renamed"}, format="json"))


def rest_append(w: World) -> None:
    entry = {"type": "custom", "customType": "note", "data": 1}
    _ok(w.client.post(f"/api/sessions/{w.session.pk}/append/", {"entries": [entry]}, format="json"))


def rest_label(w: World) -> None:
    body = {"targetId": "u1", "label": "start"}
    _ok(w.client.post(f"/api/sessions/{w.session.pk}/labels/", body, format="json"))


def rest_navigate(w: World) -> None:
    _ok(w.client.post(f"/api/sessions/{w.session.pk}/navigate/", {"targetId": "a2"}, format="json"))


def rest_navigate_with_summary(w: World) -> None:
    body = {"targetId": "a2", "summarize": True}
    _ok(w.client.post(f"/api/sessions/{w.session.pk}/navigate/", body, format="json"))


def rest_fork(w: World) -> None:
    _ok(w.client.post(f"/api/sessions/{w.session.pk}/fork/", {"entryId": "a2"}, format="json"))


def rest_clone(w: World) -> None:
    _ok(w.client.post(f"/api/sessions/{w.session.pk}/clone/", {}, format="json"))


def rest_export(w: World) -> None:
    response = w.client.get(f"/api/sessions/{w.session.pk}/export/")
    _ok(response)
    b"".join(response.streaming_content)


def rest_delete(w: World) -> None:
    _ok(w.client.delete(f"/api/sessions/{w.session.pk}/"))


def rest_settings(w: World) -> None:
    body = {"compaction": {"keepRecentTokens": 100}}
    _ok(w.client.put(f"/api/sessions/{w.session.pk}/settings/", body, format="json"))


def rest_compact(w: World) -> None:
    response = w.client.post(f"/api/sessions/{w.session.pk}/compact/", {}, format="json")
    assert response.status_code == 202, response.content


def rest_compact_refused(w: World) -> Callable[[], None]:
    small = store(w.owner, conversation(1), pi_id="small")

    def refused() -> None:
        response = w.client.post(f"/api/sessions/{small.pk}/compact/", {}, format="json")
        assert response.status_code == 400, response.content

    return refused


def rest_cancel(w: World) -> Callable[[], None]:
    run = request_compaction(session=w.session, actor=w.owner)
    return lambda: _ok(w.client.post(f"/api/operations/{run.operation_id}/cancel/", {}, format="json"))


def rest_run(w: World) -> Callable[[], None]:
    provider = _provider()
    body = {"prompt": "Continue, please.", "providerId": provider.pk}
    return lambda: _ok(w.client.post(f"/api/sessions/{w.session.pk}/runs/", body, format="json"))


def rest_abort(w: World) -> Callable[[], None]:
    run = agent_services.start_run(session=w.session, user=w.owner, prompt="hi", provider=_provider())
    return lambda: _ok(w.client.post(f"/api/runs/{run.public_id}/abort/", {}, format="json"))


def rest_regenerate(w: World) -> Callable[[], None]:
    body = {"entryId": "a8", "providerId": _provider().pk}
    return lambda: _ok(w.client.post(f"/api/sessions/{w.session.pk}/runs/regenerate/", body, format="json"))


def rest_edit_and_resend(w: World) -> Callable[[], None]:
    body = {"entryId": "u8", "prompt": "Say it differently.", "providerId": _provider().pk}
    return lambda: _ok(w.client.post(f"/api/sessions/{w.session.pk}/runs/edit/", body, format="json"))


def rest_stop(w: World) -> Callable[[], None]:
    agent_services.start_run(session=w.session, user=w.owner, prompt="hi", provider=_provider())
    return lambda: _ok(w.client.post(f"/api/sessions/{w.session.pk}/runs/stop/", {}, format="json"))


def rest_share(w: World) -> None:
    body = {"teamId": w.team.pk, "access": "viewer"}
    _ok(w.client.post(f"/api/sessions/{w.session.pk}/shares/", body, format="json"))


def rest_unshare(w: World) -> Callable[[], None]:
    services.share_with_team(session=w.session, team=w.team, access="viewer", actor=w.owner)
    return lambda: _ok(w.client.delete(f"/api/sessions/{w.session.pk}/shares/{w.team.pk}/"))


def rest_link_create(w: World) -> None:
    _ok(w.client.post(f"/api/sessions/{w.session.pk}/links/", {"scope": "tree"}, format="json"))


def rest_link_revoke(w: World) -> Callable[[], None]:
    link = _link(w)
    return lambda: _ok(w.client.delete(f"/api/links/{link.pk}/"))


def rest_team_create(w: World) -> None:
    _ok(w.client.post("/api/teams/", {"name": "second"}, format="json"))


def rest_team_invite(w: World) -> None:
    body = {"username": "other", "role": "viewer"}
    _ok(w.client.post(f"/api/teams/{w.team.pk}/members/", body, format="json"))


def rest_team_accept(w: World) -> Callable[[], None]:
    invitation = _invitation(w)
    return lambda: _ok(w.api(w.other).post(f"/api/invitations/{invitation.pk}/accept/", {}, format="json"))


def rest_team_decline(w: World) -> Callable[[], None]:
    invitation = _invitation(w)
    return lambda: _ok(w.api(w.other).post(f"/api/invitations/{invitation.pk}/decline/", {}, format="json"))


def rest_team_role(w: World) -> Callable[[], None]:
    _member(w)
    url = f"/api/teams/{w.team.pk}/members/other/"
    return lambda: _ok(w.client.patch(url, {"role": "editor"}, format="json"))


def rest_team_leave(w: World) -> Callable[[], None]:
    _member(w)
    return lambda: _ok(w.api(w.other).delete(f"/api/teams/{w.team.pk}/members/other/"))


def rest_team_remove(w: World) -> Callable[[], None]:
    _member(w)
    return lambda: _ok(w.client.delete(f"/api/teams/{w.team.pk}/members/other/"))


def rest_token_create(w: World) -> None:
    body = {"username": "owner", "password": "pw-for-tests", "name": "laptop"}
    _ok(APIClient().post("/api/token/", body, format="json"))


def rest_team_withdraw(w: World) -> Callable[[], None]:
    invitation = _invitation(w)
    return lambda: _ok(w.client.delete(f"/api/teams/{w.team.pk}/invitations/{invitation.pk}/"))


def rest_team_settings(w: World) -> None:
    _ok(w.client.patch(f"/api/teams/{w.team.pk}/", {"defaultShare": "editor"}, format="json"))


def rest_token_create_signed_in(w: World) -> None:
    _ok(w.client.post("/api/tokens/", {"name": "laptop"}, format="json"))


def sign_in_team_sync(w: World) -> None:
    # What a sign-in with the identity provider runs (accounts_app.receivers) for a group mapped to "core".
    team_services.sync_team_memberships(
        actor=IDENTITY_PROVIDER, user=w.other, roles={"core": "editor"}, managed={"core"}
    )


def rest_token_revoke(w: World) -> Callable[[], None]:
    token, _ = api_tokens.create_api_token(actor=w.owner, user=w.owner, name="old")
    return lambda: _ok(w.client.delete(f"/api/tokens/{token.token_key}/"))


# -- sync, tasks, commands, admin ------------------------------------------------------------------------


def sync_push(w: World) -> None:
    lines = [line(e) for e in conversation(2)]
    header = line({**HEADER, "id": "pushed"})
    size = sum(len(text.encode()) + 1 for text in [header, *lines])
    body = {
        "header": header,
        "from": {"lines": 0, "bytes": 0, "lastId": None},
        "to": {"lines": len(lines), "bytes": size},
        "lines": lines,
        "path": "/home/me/.pi/pushed.jsonl",
    }
    _ok(w.client.post("/api/sync/", body, format="json"))


def sync_push_with_workspace(w: World) -> None:
    """A push that says which git workspace it came from: the workspace is part of the push's row."""
    lines = [line(e) for e in conversation(1)]
    body = {
        "header": line({**HEADER, "id": "pushed-git"}),
        "from": {"lines": 0, "bytes": 0, "lastId": None},
        "to": {"lines": len(lines), "bytes": 0},
        "lines": lines,
        "workspace": {"repository": "https://tok@github.com/o/r.git", "branch": "main", "head": "a" * 40},
    }
    _ok(w.client.post("/api/sync/", body, format="json"))


def runner_run_commits(w: World) -> Callable[[], None]:
    """A run on a runner ends and reports the commits Pi made (what its socket's ``ended`` carries)."""
    from agent.models import AgentRun
    from runners import services as runner_services

    run = AgentRun.objects.create(session=w.session, requested_by=w.owner, prompt="commit it")
    git = {
        "repository": "https://github.com/o/r.git",
        "branch": "main",
        "before": "a" * 40,
        "after": "b" * 40,
        "commits": [{"sha": "b" * 40, "subject": "Commit it"}],
    }
    return lambda: runner_services.run_ended(run, status="succeeded", git=git)


def task_purge(w: World) -> Callable[[], None]:
    pk = _deleted(w)
    return lambda: session_tasks.purge_deleted_session.apply(args=(pk,)).get()


def task_sweep(w: World) -> Callable[[], None]:
    _deleted(w)
    return lambda: session_tasks.sweep_deleted_sessions.apply().get()


def task_compaction(w: World) -> Callable[[], None]:
    run = request_compaction(session=w.session, actor=w.owner)
    return lambda: compaction_tasks.run_compaction.apply(args=(run.pk,)).get()


def task_branch_summary(w: World) -> Callable[[], None]:
    operation = start_branch_summary(session=w.session, target_id="a2", actor=w.owner)
    run = CompactionRun.objects.get(operation_id=operation)
    return lambda: compaction_tasks.run_branch_summary.apply(args=(run.pk,)).get()


def command_import(w: World) -> None:
    path = w.tmp / "one.jsonl"
    path.write_bytes(_file("from-disk"))
    call_command("import_pi_sessions", str(path), user="owner", stdout=StringIO(), stderr=StringIO())


def command_demo(w: World) -> None:
    folder = w.tmp / "demo"
    folder.mkdir()
    (folder / "demo.jsonl").write_bytes(_file("demo-1"))
    call_command("ensure_demo", dir=folder, stdout=StringIO())


def command_purge(w: World) -> Callable[[], None]:
    _deleted(w)
    return lambda: call_command("purge_deleted_sessions", stdout=StringIO())


def command_token(w: World) -> None:
    call_command("create_api_token", "owner", name="ci", stdout=StringIO())


def _staff(w: World) -> Client:
    client = Client()
    client.force_login(w.staff)
    return client


def admin_delete_session(w: World) -> None:
    url = f"/admin/sessions_app/chatsession/{w.session.pk}/delete/"
    response = _staff(w).post(url, {"post": "yes"})
    assert response.status_code == 302, response.content[:300]


def admin_team_create(w: World) -> None:
    body = {
        "name": "by-staff",
        "memberships-TOTAL_FORMS": "0",
        "memberships-INITIAL_FORMS": "0",
        "memberships-MIN_NUM_FORMS": "0",
        "memberships-MAX_NUM_FORMS": "1000",
    }
    response = _staff(w).post("/admin/teams/team/add/", body)
    assert response.status_code == 302, response.content[:300]


def admin_share(w: World) -> None:
    body = {"session": str(w.session.pk), "team": str(w.team.pk), "access": "viewer"}
    _redirected(_staff(w).post("/admin/sessions_app/sessionshare/add/", body))


def admin_unshare(w: World) -> Callable[[], None]:
    share = services.share_with_team(session=w.session, team=w.team, access="viewer", actor=w.owner)
    url = f"/admin/sessions_app/sessionshare/{share.pk}/delete/"
    return lambda: _redirected(_staff(w).post(url, {"post": "yes"}))


def admin_link_revoke(w: World) -> Callable[[], None]:
    link = _link(w)
    body = {"action": "revoke_links", "_selected_action": [str(link.pk)]}
    return lambda: _redirected(_staff(w).post("/admin/sessions_app/sharelink/", body))


def _team_form(w: World, members: list[tuple[Any, str]]) -> dict[str, str]:
    """The team's change page as staff send it: its fields, then one inline row per member."""
    rows = {m.user_id: m for m in TeamMembership.objects.filter(team=w.team)}
    body = {
        "name": w.team.name,
        "default_share": w.team.default_share,
        "memberships-TOTAL_FORMS": str(len(members)),
        "memberships-INITIAL_FORMS": str(len(rows)),
        "memberships-MIN_NUM_FORMS": "0",
        "memberships-MAX_NUM_FORMS": "1000",
    }
    for i, (user, role) in enumerate(members):
        kept = rows.get(user.pk)
        body |= {f"memberships-{i}-user": str(user.pk), f"memberships-{i}-role": role.removesuffix("!")}
        body |= {f"memberships-{i}-team": str(w.team.pk), f"memberships-{i}-id": str(kept.pk) if kept else ""}
        if role.endswith("!"):
            body[f"memberships-{i}-DELETE"] = "on"
    return body


def admin_team_add_member(w: World) -> None:
    body = _team_form(w, [(w.owner, "owner"), (w.other, "viewer")])
    _redirected(_staff(w).post(f"/admin/teams/team/{w.team.pk}/change/", body))


def admin_team_role(w: World) -> Callable[[], None]:
    _member(w)
    body = _team_form(w, [(w.owner, "owner"), (w.other, "editor")])
    return lambda: _redirected(_staff(w).post(f"/admin/teams/team/{w.team.pk}/change/", body))


def admin_team_remove(w: World) -> Callable[[], None]:
    _member(w)
    body = _team_form(w, [(w.owner, "owner"), (w.other, "viewer!")])
    return lambda: _redirected(_staff(w).post(f"/admin/teams/team/{w.team.pk}/change/", body))


def admin_team_rename(w: World) -> None:
    body = {**_team_form(w, [(w.owner, "owner")]), "name": "renamed by staff"}
    _redirected(_staff(w).post(f"/admin/teams/team/{w.team.pk}/change/", body))


def _provider_form(**fields: str) -> dict[str, str]:
    return {
        "name": "staff-made",
        "api": "openai-completions",
        "base_url": "http://127.0.0.1:9/v1",
        "model_id": "m",
        "provider": "p",
        "context_window": "128000",
        "max_output_tokens": "4096",
        **fields,
    }


def admin_provider_create(w: World) -> None:
    _redirected(_staff(w).post("/admin/providers/llmprovider/add/", _provider_form(api_key="sk-new")))


def admin_provider_change(w: World) -> Callable[[], None]:
    provider = _provider()
    body = _provider_form(name=provider.name, model_id="m2")
    url = f"/admin/providers/llmprovider/{provider.pk}/change/"
    return lambda: _redirected(_staff(w).post(url, body))


def admin_provider_delete(w: World) -> Callable[[], None]:
    url = f"/admin/providers/llmprovider/{_provider().pk}/delete/"
    return lambda: _redirected(_staff(w).post(url, {"post": "yes"}))


def admin_viewers_may_comment(w: World) -> None:
    body = {"team": str(w.team.pk), "viewers_may_comment": ""}
    _redirected(_staff(w).post("/admin/discussion/teamdiscussion/add/", body))


def _redirected(response: Any) -> None:
    assert response.status_code == 302, response.content[:300]


def _leaky(w: World) -> ChatSession:
    """A session holding a secret, scanned (this test's transactions never commit, so no scan follows)."""
    data = session_file([user_message("u1", None, "key AKIAIOSFODNN7EXAMPLE")], {**HEADER, "id": "leaky"})
    session = services.import_jsonl(actor=w.owner, data=data, filename="leaky.jsonl").session
    scan_range(session.pk, 0, session.next_seq - 1)
    return session


def rest_redact(w: World) -> Callable[[], None]:
    session = _leaky(w)
    return lambda: _ok(
        w.client.post(f"/api/sessions/{session.pk}/secrets/redact/", {"all": True}, format="json")
    )


def admin_redact(w: World) -> Callable[[], None]:
    session = _leaky(w)
    ids = [str(pk) for pk in SecretFinding.objects.filter(session=session).values_list("pk", flat=True)]
    body = {"action": "redact", "_selected_action": ids}
    return lambda: _redirected(_staff(w).post("/admin/governance/secretfinding/", body))


def admin_hold(w: World) -> None:
    body = {"session": str(w.session.pk), "reason": "litigation"}
    response = _staff(w).post("/admin/governance/legalhold/add/", body)
    assert response.status_code == 302, response.content[:300]


def admin_unhold(w: World) -> Callable[[], None]:
    hold = LegalHold.objects.create(session=w.session, reason="kept")
    url = f"/admin/governance/legalhold/{hold.pk}/delete/"
    return lambda: _redirected(_staff(w).post(url, {"post": "yes"}))


def admin_team_policy(w: World) -> None:
    body = {"team": str(w.team.pk), "retention_days": "30", "block_sharing_with_findings": "on"}
    _redirected(_staff(w).post("/admin/governance/teampolicy/add/", body))


def admin_user_retention(w: World) -> None:
    body = {"user": str(w.other.pk), "retention_days": "90"}
    _redirected(_staff(w).post("/admin/governance/userretention/add/", body))


def task_retention(w: World) -> Callable[[], None]:
    from django.conf import settings
    from django.utils import timezone

    settings.PIWEB_RETENTION_DAYS = 30
    old = store(w.owner, conversation(2), pi_id="old")
    ChatSession.objects.filter(pk=old.pk).update(updated_at=timezone.now() - timezone.timedelta(days=31))
    return lambda: governance_tasks.apply_retention_task.apply().get()


def _comment(w: World) -> int:
    entry = w.session.leaf_entry_id
    response = w.client.post(
        f"/api/sessions/{w.session.pk}/comments/", {"entryId": entry, "body": "look here"}, format="json"
    )
    _ok(response)
    return int(response.json()["id"])


def rest_comment_create(w: World) -> None:
    _comment(w)


def rest_comment_edit(w: World) -> Callable[[], None]:
    pk = _comment(w)
    return lambda: _ok(w.client.patch(f"/api/comments/{pk}/", {"body": "look there"}, format="json"))


def rest_comment_delete(w: World) -> Callable[[], None]:
    pk = _comment(w)
    return lambda: _ok(w.client.delete(f"/api/comments/{pk}/"))


def rest_comment_resolve(w: World) -> Callable[[], None]:
    pk = _comment(w)
    return lambda: _ok(w.client.patch(f"/api/comments/{pk}/", {"resolved": True}, format="json"))


def rest_comment_reopen(w: World) -> Callable[[], None]:
    pk = _comment(w)
    _ok(w.client.patch(f"/api/comments/{pk}/", {"resolved": True}, format="json"))
    return lambda: _ok(w.client.patch(f"/api/comments/{pk}/", {"resolved": False}, format="json"))


def rest_viewers_may_comment(w: World) -> None:
    _ok(w.client.put(f"/api/teams/{w.team.pk}/discussion/", {"viewersMayComment": False}, format="json"))


def rest_comment_export(w: World) -> Callable[[], None]:
    _comment(w)
    return lambda: _ok(w.client.get(f"/api/sessions/{w.session.pk}/comments/export/"))


def rest_digest_choice(w: World) -> None:
    _ok(w.client.put(f"/api/teams/{w.team.pk}/activity/digest/", {"digest": False}, format="json"))


# A mail server that keeps what it is given, for the writes that send mail.
LOCAL_MAIL = {"default": {"BACKEND": "django.core.mail.backends.locmem.EmailBackend"}}


def _digest_week(w: World) -> str:
    """A week the team's shared session was busy in, and an address for its owner."""
    w.owner.email = "owner@example.test"
    w.owner.save(update_fields=["email"])
    services.share_with_team(session=w.session, team=w.team, access="viewer", actor=w.owner)
    return "2026-02-01"  # the stored conversation's day


def command_digest(w: World) -> Callable[[], None]:
    week = _digest_week(w)

    def send() -> None:
        with override_settings(MAILERS=LOCAL_MAIL):
            call_command("send_team_digest", str(w.team.pk), "--week", week, stdout=StringIO())

    return send


def task_digest(w: World) -> Callable[[], None]:
    week = _digest_week(w)

    def send() -> None:
        with override_settings(MAILERS=LOCAL_MAIL):
            assert activity_tasks.send_team_digest.apply(args=(w.team.pk, week)).get() == 1

    return send


# -- organize --------------------------------------------------------------------------------------------


def _organize_tag(w: World) -> int:
    services.share_with_team(session=w.session, team=w.team, access="editor", actor=w.owner)
    return Tag.objects.create(team=w.team, name="billing").pk


def rest_pin(w: World) -> None:
    _ok(w.client.post(f"/api/sessions/{w.session.pk}/pin/"))


def rest_unpin(w: World) -> Callable[[], None]:
    _ok(w.client.post(f"/api/sessions/{w.session.pk}/pin/"))
    return lambda: _ok(w.client.delete(f"/api/sessions/{w.session.pk}/pin/"))


def rest_archive(w: World) -> None:
    _ok(w.client.post(f"/api/sessions/{w.session.pk}/archive/"))


def rest_restore(w: World) -> Callable[[], None]:
    _ok(w.client.post(f"/api/sessions/{w.session.pk}/archive/"))
    return lambda: _ok(w.client.delete(f"/api/sessions/{w.session.pk}/archive/"))


def rest_bulk_archive(w: World) -> None:
    body = {"action": "archive", "sessions": [w.session.pk], "preview": False}
    _ok(w.client.post("/api/sessions/bulk/", body, format="json"))


def rest_tag_create(w: World) -> None:
    _ok(w.client.post(f"/api/teams/{w.team.pk}/tags/", {"name": "billing"}, format="json"))


def rest_tag_change(w: World) -> Callable[[], None]:
    tag = _organize_tag(w)
    return lambda: _ok(w.client.patch(f"/api/tags/{tag}/", {"name": "invoices"}, format="json"))


def rest_tag_delete(w: World) -> Callable[[], None]:
    tag = _organize_tag(w)
    return lambda: _ok(w.client.delete(f"/api/tags/{tag}/"))


def rest_tag_apply(w: World) -> Callable[[], None]:
    tag = _organize_tag(w)
    return lambda: _ok(w.client.post(f"/api/sessions/{w.session.pk}/tags/", {"tagId": tag}, format="json"))


def rest_tag_remove(w: World) -> Callable[[], None]:
    tag = _organize_tag(w)
    _ok(w.client.post(f"/api/sessions/{w.session.pk}/tags/", {"tagId": tag}, format="json"))
    return lambda: _ok(w.client.delete(f"/api/sessions/{w.session.pk}/tags/{tag}/"))


def rest_filter_save(w: World) -> None:
    _ok(w.client.post("/api/saved-filters/", {"name": "pins", "query": "pinned=1"}, format="json"))


def rest_filter_delete(w: World) -> Callable[[], None]:
    saved = w.client.post("/api/saved-filters/", {"name": "pins", "query": "pinned=1"}, format="json")
    return lambda: _ok(w.client.delete(f"/api/saved-filters/{saved.json()['id']}/"))


def _review(w: World) -> int:
    _member(w)
    services.share_with_team(session=w.session, team=w.team, access="viewer", actor=w.owner)
    response = w.client.post(
        f"/api/sessions/{w.session.pk}/reviews/", {"reviewers": ["other"]}, format="json"
    )
    _ok(response)
    return int(response.json()["id"])


def rest_review_request(w: World) -> Callable[[], None]:
    _member(w)
    services.share_with_team(session=w.session, team=w.team, access="viewer", actor=w.owner)
    body = {"reviewers": ["other"], "entryId": "a1", "note": "have a look"}
    return lambda: _ok(w.client.post(f"/api/sessions/{w.session.pk}/reviews/", body, format="json"))


def rest_review_rerequest(w: World) -> Callable[[], None]:
    pk = _review(w)
    return lambda: _ok(w.client.post(f"/api/reviews/{pk}/request/"))


def rest_review_decide(w: World) -> Callable[[], None]:
    pk = _review(w)
    body = {"decision": "changes", "note": "one more test"}
    return lambda: _ok(w.api(w.other).post(f"/api/reviews/{pk}/decision/", body, format="json"))


def rest_review_withdraw(w: World) -> Callable[[], None]:
    pk = _review(w)
    return lambda: _ok(w.client.post(f"/api/reviews/{pk}/withdraw/"))


def _hook(w: World) -> int:
    hook, _secret = hook_services.create_hook(
        actor=w.owner, name="ci", url="https://hooks.example.com/piweb", events=["run.failed"]
    )
    return hook.pk


HOOK_BODY = {"name": "ci", "url": "https://hooks.example.com/piweb", "events": ["run.failed"]}


def rest_hook_create(w: World) -> None:
    _ok(w.client.post("/api/hooks/", HOOK_BODY, format="json"))


def rest_team_hook_create(w: World) -> None:
    _ok(w.client.post(f"/api/teams/{w.team.pk}/hooks/", HOOK_BODY, format="json"))


def rest_hook_pause(w: World) -> Callable[[], None]:
    pk = _hook(w)
    return lambda: _ok(w.client.patch(f"/api/hooks/{pk}/", {"active": False}, format="json"))


def rest_hook_rotate(w: World) -> Callable[[], None]:
    pk = _hook(w)
    return lambda: _ok(w.client.post(f"/api/hooks/{pk}/rotate/"))


def rest_hook_delete(w: World) -> Callable[[], None]:
    pk = _hook(w)
    return lambda: _ok(w.client.delete(f"/api/hooks/{pk}/"))


def rest_hook_ping(w: World) -> Callable[[], None]:
    pk = _hook(w)
    return lambda: _ok(w.client.post(f"/api/hooks/{pk}/ping/"))


def rest_hook_replay(w: World) -> Callable[[], None]:
    pk = _hook(w)
    delivery = hook_services.send_ping(actor=w.owner, hook_id=pk)
    return lambda: _ok(w.client.post(f"/api/hooks/{pk}/deliveries/{delivery.pk}/replay/"))


def admin_hook_pause(w: World) -> Callable[[], None]:
    body = {"action": "pause_hooks", "_selected_action": [str(_hook(w))]}
    return lambda: _redirected(_staff(w).post("/admin/hooks/hook/", body))


def admin_hook_resume(w: World) -> Callable[[], None]:
    pk = _hook(w)
    hook_services.update_hook(actor=w.owner, hook_id=pk, changes={"active": False})
    body = {"action": "resume_hooks", "_selected_action": [str(pk)]}
    return lambda: _redirected(_staff(w).post("/admin/hooks/hook/", body))


def admin_hook_delete(w: World) -> Callable[[], None]:
    url = f"/admin/hooks/hook/{_hook(w)}/delete/"
    return lambda: _redirected(_staff(w).post(url, {"post": "yes"}))


def admin_tag_delete(w: World) -> Callable[[], None]:
    url = f"/admin/organize/tag/{_organize_tag(w)}/delete/"
    return lambda: _redirected(_staff(w).post(url, {"post": "yes"}))


def admin_filter_delete(w: World) -> Callable[[], None]:
    saved = w.client.post("/api/saved-filters/", {"name": "pins", "query": "pinned=1"}, format="json")
    url = f"/admin/organize/savedfilter/{saved.json()['id']}/delete/"
    return lambda: _redirected(_staff(w).post(url, {"post": "yes"}))


def admin_review_withdraw(w: World) -> Callable[[], None]:
    body = {"action": "withdraw_reviews", "_selected_action": [str(_review(w))]}
    return lambda: _redirected(_staff(w).post("/admin/reviews/review/", body))


# -- the table -------------------------------------------------------------------------------------------

USER = "owner"
OTHER = "other"
STAFF = "staff"

# Verbs only staff perform: their rows need no by_staff mark.
STAFF_OWN_VERBS = {
    A.REDACT,
    A.HOLD,
    A.UNHOLD,
    A.POLICY,
    A.PROVIDER_CREATE,
    A.PROVIDER_CHANGE,
    A.PROVIDER_DELETE,
}

CASES: list[tuple[str, Callable[[World], Any], str, str]] = [
    ("rest", rest_create, A.CREATE, USER),
    ("rest", rest_import, A.IMPORT, USER),
    ("rest", rest_rename, A.RENAME, USER),
    ("rest", rest_append, A.APPEND, USER),
    ("rest", rest_label, A.LABEL, USER),
    ("rest", rest_navigate, A.NAVIGATE, USER),
    ("rest", rest_navigate_with_summary, A.NAVIGATE, USER),
    ("rest", rest_fork, A.FORK, USER),
    ("rest", rest_clone, A.CLONE, USER),
    ("rest", rest_export, A.EXPORT, USER),
    ("rest", rest_delete, A.DELETE, USER),
    ("rest", rest_settings, A.SETTINGS, USER),
    ("rest", rest_compact, A.COMPACT, USER),
    ("rest", rest_compact_refused, A.COMPACT_REFUSED, USER),
    ("rest", rest_cancel, A.CANCEL, USER),
    ("rest", rest_run, A.RUN, USER),
    ("rest", rest_abort, A.ABORT, USER),
    ("rest", rest_regenerate, A.RUN, USER),
    ("rest", rest_edit_and_resend, A.RUN, USER),
    ("rest", rest_stop, A.ABORT, USER),
    ("rest", rest_share, A.SHARE, USER),
    ("rest", rest_unshare, A.REVOKE, USER),
    ("rest", rest_link_create, A.SHARE, USER),
    ("rest", rest_link_revoke, A.REVOKE, USER),
    ("rest", rest_team_create, A.TEAM_CREATE, USER),
    ("rest", rest_team_invite, A.TEAM_INVITE, USER),
    ("rest", rest_team_accept, A.TEAM_ACCEPT, OTHER),
    ("rest", rest_team_decline, A.TEAM_DECLINE, OTHER),
    ("rest", rest_team_role, A.TEAM_ROLE, USER),
    ("rest", rest_team_leave, A.TEAM_LEAVE, OTHER),
    ("rest", rest_team_remove, A.TEAM_REMOVE, USER),
    ("rest", rest_token_create, A.TOKEN_CREATE, USER),
    ("rest", rest_token_revoke, A.TOKEN_REVOKE, USER),
    ("rest", rest_token_create_signed_in, A.TOKEN_CREATE, USER),
    ("rest", rest_team_withdraw, A.TEAM_WITHDRAW, USER),
    ("rest", rest_team_settings, A.TEAM_SETTINGS, USER),
    ("sign-in", sign_in_team_sync, A.TEAM_SYNC, "identity-provider"),
    ("rest", rest_comment_create, A.COMMENT_CREATE, USER),
    ("rest", rest_comment_edit, A.COMMENT_EDIT, USER),
    ("rest", rest_comment_delete, A.COMMENT_DELETE, USER),
    ("rest", rest_comment_resolve, A.COMMENT_RESOLVE, USER),
    ("rest", rest_comment_reopen, A.COMMENT_REOPEN, USER),
    ("rest", rest_comment_export, A.EXPORT, USER),
    ("rest", rest_viewers_may_comment, A.SETTINGS, USER),
    ("rest", rest_pin, A.PIN, USER),
    ("rest", rest_unpin, A.UNPIN, USER),
    ("rest", rest_archive, A.ARCHIVE, USER),
    ("rest", rest_restore, A.RESTORE, USER),
    ("rest", rest_bulk_archive, A.ARCHIVE, USER),
    ("rest", rest_tag_create, A.TAG_CREATE, USER),
    ("rest", rest_tag_change, A.TAG_CHANGE, USER),
    ("rest", rest_tag_delete, A.TAG_DELETE, USER),
    ("rest", rest_tag_apply, A.TAG_APPLY, USER),
    ("rest", rest_tag_remove, A.TAG_REMOVE, USER),
    ("rest", rest_filter_save, A.FILTER_SAVE, USER),
    ("rest", rest_filter_delete, A.FILTER_DELETE, USER),
    ("rest", rest_review_request, A.REVIEW_REQUEST, USER),
    ("rest", rest_review_rerequest, A.REVIEW_REQUEST, USER),
    ("rest", rest_review_decide, A.REVIEW_DECIDE, OTHER),
    ("rest", rest_review_withdraw, A.REVIEW_WITHDRAW, USER),
    ("sync", sync_push, A.SYNC, USER),
    ("sync", sync_push_with_workspace, A.SYNC, USER),
    ("runner", runner_run_commits, A.RUN_COMMITS, USER),
    ("task", task_purge, A.PURGE, "purge-worker"),
    ("task", task_sweep, A.PURGE, "purge-worker"),
    ("task", task_compaction, A.COMPACTED, "compaction-worker"),
    ("task", task_branch_summary, A.BRANCH_SUMMARY, "compaction-worker"),
    ("command", command_import, A.IMPORT, "manage.py import_pi_sessions"),
    ("command", command_demo, A.IMPORT, "manage.py ensure_demo"),
    ("command", command_purge, A.PURGE, "manage.py purge_deleted_sessions"),
    ("command", command_token, A.TOKEN_CREATE, "manage.py create_api_token"),
    ("admin", admin_delete_session, A.DELETE, STAFF),
    ("admin", admin_team_create, A.TEAM_CREATE, STAFF),
    ("admin", admin_team_add_member, A.TEAM_ACCEPT, STAFF),
    ("admin", admin_team_role, A.TEAM_ROLE, STAFF),
    ("admin", admin_team_remove, A.TEAM_REMOVE, STAFF),
    ("admin", admin_team_rename, A.TEAM_SETTINGS, STAFF),
    ("admin", admin_share, A.SHARE, STAFF),
    ("admin", admin_unshare, A.REVOKE, STAFF),
    ("admin", admin_link_revoke, A.REVOKE, STAFF),
    ("admin", admin_provider_create, A.PROVIDER_CREATE, STAFF),
    ("admin", admin_provider_change, A.PROVIDER_CHANGE, STAFF),
    ("admin", admin_provider_delete, A.PROVIDER_DELETE, STAFF),
    ("admin", admin_viewers_may_comment, A.SETTINGS, STAFF),
    ("rest", rest_redact, A.REDACT, USER),
    ("admin", admin_redact, A.REDACT, STAFF),
    ("admin", admin_hold, A.HOLD, STAFF),
    ("admin", admin_unhold, A.UNHOLD, STAFF),
    ("task", task_retention, A.DELETE, "retention-worker"),
    ("admin", admin_team_policy, A.POLICY, STAFF),
    ("admin", admin_user_retention, A.POLICY, STAFF),
    ("rest", rest_digest_choice, A.DIGEST_CHOICE, USER),
    ("command", command_digest, A.DIGEST_SEND, "manage.py send_team_digest"),
    ("task", task_digest, A.DIGEST_SEND, "digest-worker"),
    ("rest", rest_hook_create, A.HOOK_CREATE, USER),
    ("rest", rest_team_hook_create, A.HOOK_CREATE, USER),
    ("rest", rest_hook_pause, A.HOOK_CHANGE, USER),
    ("rest", rest_hook_rotate, A.HOOK_ROTATE, USER),
    ("rest", rest_hook_delete, A.HOOK_DELETE, USER),
    ("rest", rest_hook_ping, A.HOOK_PING, USER),
    ("rest", rest_hook_replay, A.HOOK_REPLAY, USER),
    ("admin", admin_hook_pause, A.HOOK_CHANGE, STAFF),
    ("admin", admin_hook_resume, A.HOOK_CHANGE, STAFF),
    ("admin", admin_hook_delete, A.HOOK_DELETE, STAFF),
    ("admin", admin_tag_delete, A.TAG_DELETE, STAFF),
    ("admin", admin_filter_delete, A.FILTER_DELETE, STAFF),
    ("admin", admin_review_withdraw, A.REVIEW_WITHDRAW, STAFF),
]


def _param(adapter: str, act: Callable[[World], Any], action: str, actor: str) -> Any:
    return pytest.param(act, action, actor, id=f"{adapter}-{act.__name__}")


@pytest.mark.parametrize(("act", "action", "actor"), [_param(*case) for case in CASES])
def test_the_write_leaves_exactly_one_row_naming_its_action_and_actor(
    world: World, act: Callable[[World], Any], action: str, actor: str
) -> None:
    before = set(ActionLog.objects.values_list("pk", flat=True))
    prepared = act(world)  # a case that needs something first prepares it and returns the write
    if callable(prepared):
        before = set(ActionLog.objects.values_list("pk", flat=True))
        prepared()
    rows = list(ActionLog.objects.exclude(pk__in=before))
    assert [(r.action, r.actor_name) for r in rows] == [(action, actor)], json.dumps(
        [(r.action, r.actor_name, r.detail) for r in rows], default=str
    )
    row = rows[0]
    # Staff act from the admin through the owners' use cases, and the row says so.
    assert row.detail.get("by_staff", False) is (actor == STAFF and action not in STAFF_OWN_VERBS)
    system = not actor.isidentifier() or "-" in actor
    assert row.actor_kind == ("system" if system else "user")
    assert (row.actor is None) == system
