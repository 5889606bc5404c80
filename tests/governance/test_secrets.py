"""Secrets in transcripts are found on every write, shown only to the owner and staff, and redacted from
every read path: entries, context, search, the tree, share links and the export."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import pytest
from rest_framework.test import APIClient

from actionlog.models import ActionLog
from governance.models import TeamPolicy
from governance.scanning import INLINE_ENTRIES, sweep_pending_scans
from sessions_app import services
from sessions_app.models import ChatSession
from teams.models import Team, TeamMembership
from tests.factories import HEADER, assistant_message, line, session_file, tool_turn, user_message

# Transactional: scans follow the commit of each write, as they do in production.
pytestmark = pytest.mark.django_db(transaction=True)

# Well-known fake values: AWS's documentation key, a truncated key block, a token of the right shape.
AWS_KEY = "AKIAIOSFODNN7EXAMPLE"
KEY_BODY = "MIIEpAIBAAKCAQEA3Tz2mr7SZiAMfQyuvBjM4Lf0c4DwxN6KCOCk"
PRIVATE_KEY = f"-----BEGIN RSA PRIVATE KEY-----\n{KEY_BODY}\n-----END RSA PRIVATE KEY-----"
GITHUB_TOKEN = "ghp_" + "R4nd0mL00k1ngT0k3nV4lu3F0rT3st1ng007"
SECRETS = (AWS_KEY, KEY_BODY, GITHUB_TOKEN)


def tool_result(entry_id: str, parent: str, text: str) -> dict[str, Any]:
    return {
        "type": "message",
        "id": entry_id,
        "parentId": parent,
        "timestamp": "2026-01-02T03:04:08.000Z",
        "message": {
            "role": "toolResult",
            "toolCallId": "call-1",
            "toolName": "bash",
            "content": [{"type": "text", "text": text}],
            "isError": False,
            "timestamp": 3,
        },
    }


# The first result is the read of a file: the files view shows its text.
READ_CALL = {"type": "toolCall", "id": "call-1", "name": "read", "arguments": {"path": "deploy.env"}}


def leaky_entries() -> list[dict[str, Any]]:
    return [
        user_message("u1", None, "show me the deploy config"),
        assistant_message("a1", "u1", "Reading it.", blocks=[READ_CALL]),
        tool_result("t1", "a1", f"AWS_ACCESS_KEY_ID={AWS_KEY}\nregion=eu-west-1"),
        tool_result("t2", "t1", f"cat ~/.ssh/id_rsa\n{PRIVATE_KEY}\n"),
        user_message("u2", "t2", f"also my token is {GITHUB_TOKEN} keep it safe"),
        assistant_message("a2", "u2", "Noted; nothing secret here."),
    ]


@dataclass
class World:
    owner: Any
    mate: Any
    stranger: Any
    staff: Any
    session: ChatSession
    team: Team

    def client(self, account: Any) -> APIClient:
        client = APIClient()
        client.force_authenticate(user=account)
        return client


@pytest.fixture
def world(user: Callable[..., Any]) -> World:
    owner, mate, stranger = user("owner"), user("mate"), user("stranger")
    staff = user("auditor", is_staff=True)
    data = session_file(leaky_entries(), {**HEADER, "id": "leaky"})
    session = services.import_jsonl(actor=owner, data=data, filename="leaky.jsonl").session
    team = Team.objects.create(name="crew")
    TeamMembership.objects.create(team=team, user=owner, role=TeamMembership.Role.OWNER)
    TeamMembership.objects.create(team=team, user=mate, role=TeamMembership.Role.EDITOR)
    return World(owner, mate, stranger, staff, session, team)


def findings(world: World, account: Any = None) -> dict[str, Any]:
    response = world.client(account or world.owner).get(f"/api/sessions/{world.session.pk}/secrets/")
    assert response.status_code == 200, response.content
    return response.json()


def test_an_imported_session_with_fake_secrets_has_each_one_found(world: World) -> None:
    body = findings(world)
    found = {(f["entryId"], f["kind"]) for f in body["findings"]}
    assert found == {("t1", "aws-access-key"), ("t2", "private-key"), ("u2", "github-token")}
    assert body["open"] == 3 and body["scanned"] is True
    # Where it is, never what it is.
    aws = next(f for f in body["findings"] if f["kind"] == "aws-access-key")
    assert aws["path"] == "/message/content/0/text"
    assert aws["end"] - aws["start"] == len(AWS_KEY)
    text = json.dumps(body)
    assert not any(secret in text for secret in SECRETS)


def test_appended_and_synced_entries_are_scanned_at_once(world: World) -> None:
    client = world.client(world.owner)
    token = "ghp_" + "A" * 36
    response = client.post(
        f"/api/sessions/{world.session.pk}/append/",
        {"entries": [{"type": "message", "message": {"role": "user", "content": f"use {token}"}}]},
        format="json",
    )
    assert response.status_code == 201, response.content
    # A sync push as piweb-sync streams it: a control line, then the file's new lines.
    header = line({**HEADER, "id": "synced"})
    pushed = line(user_message("s1", None, f"key {AWS_KEY}"))
    control = {
        "header": header,
        "from": {"lines": 0, "bytes": 0, "lastId": None},
        "to": {"lines": 1, "bytes": 0},
        "path": "/home/me/synced.jsonl",
    }
    body = (json.dumps(control) + "\n" + pushed + "\n").encode()
    synced = client.generic("POST", "/api/sync/", body, content_type="application/x-ndjson")
    assert synced.status_code == 200, synced.content
    appended_id = response.json()["entries"][0]["id"]
    kinds = [(f["entryId"], f["kind"]) for f in findings(world)["findings"]]
    assert (appended_id, "github-token") in kinds
    other = ChatSession.objects.get(owner=world.owner, pi_id="synced")
    listed = world.client(world.owner).get(f"/api/sessions/{other.pk}/secrets/").json()
    assert [(f["entryId"], f["kind"]) for f in listed["findings"]] == [("s1", "aws-access-key")]


def test_only_the_owner_and_staff_see_findings(world: World) -> None:
    link = services.create_share_link(session=world.session, actor=world.owner)
    url = f"/api/sessions/{world.session.pk}/secrets/"
    assert world.client(world.mate).get(url).status_code == 404  # not shared with the team yet
    services.share_with_team(session=world.session, team=world.team, access="editor", actor=world.owner)
    assert world.client(world.mate).get(url).status_code == 403
    assert world.client(world.stranger).get(url).status_code == 404
    assert APIClient().get(f"{url}?link={link.raw_token}").status_code in (401, 403)
    assert len(findings(world, world.staff)["findings"]) == 3
    redact = f"/api/sessions/{world.session.pk}/secrets/redact/"
    assert world.client(world.mate).post(redact, {"all": True}, format="json").status_code == 403
    assert findings(world)["open"] == 3


def read_everything(world: World, link_token: str) -> dict[str, str]:
    """Every way a user reads the session, as text."""
    pk = world.session.pk
    owner = world.client(world.owner)
    anonymous = APIClient()
    reads = {
        "entries": owner.get(f"/api/sessions/{pk}/entries/"),
        "entry": owner.get(f"/api/sessions/{pk}/entries/t1/"),
        "context": owner.get(f"/api/sessions/{pk}/context/"),
        "path": owner.get(f"/api/sessions/{pk}/path/"),
        "files": owner.get(f"/api/sessions/{pk}/files/", {"path": "deploy.env"}),
        "tree": owner.get(f"/api/sessions/{pk}/tree/"),
        "search": owner.get(f"/api/sessions/{pk}/search/", {"q": AWS_KEY}),
        "search-all": owner.get("/api/search/", {"q": GITHUB_TOKEN}),
        "export": owner.get(f"/api/sessions/{pk}/export/"),
        "link-entries": anonymous.get(f"/api/sessions/{pk}/entries/?link={link_token}"),
        "link-context": anonymous.get(f"/api/sessions/{pk}/context/?link={link_token}"),
        "link-page": anonymous.get(f"/s/{link_token}/"),
    }
    out = {}
    for name, response in reads.items():
        assert response.status_code == 200, (name, response.status_code)
        body = b"".join(response.streaming_content) if response.streaming else response.content
        if name.startswith("search"):
            body = json.dumps({**json.loads(body), "query": None}).encode()  # the query is echoed back
        out[name] = body.decode()
    return out


def test_redaction_removes_every_secret_from_every_read_path(world: World) -> None:
    link = services.create_share_link(session=world.session, actor=world.owner)
    before = read_everything(world, link.raw_token)  # also fills the caches a stale read would come from
    assert AWS_KEY in before["entries"] and GITHUB_TOKEN in before["export"] and AWS_KEY in before["files"]
    assert json.loads(before["search"])["total"] == 1
    export_before = before["export"].splitlines()

    response = world.client(world.owner).post(
        f"/api/sessions/{world.session.pk}/secrets/redact/", {"all": True}, format="json"
    )
    assert response.status_code == 200, response.content
    assert response.json()["redacted"] == 3

    after = read_everything(world, link.raw_token)
    for name, text in after.items():
        for secret in SECRETS:
            assert secret not in text, f"{name} still shows a secret"
    assert "[REDACTED:aws-access-key]" in after["entries"]
    assert "[REDACTED:private-key]" in after["link-context"]
    assert json.loads(after["search"])["total"] == 0
    # The export: only the three redacted lines changed, every other line is byte for byte the same.
    export_after = after["export"].splitlines()
    changed = [i for i, (a, b) in enumerate(zip(export_before, export_after, strict=True)) if a != b]
    assert [json.loads(export_after[i])["id"] for i in changed] == ["t1", "t2", "u2"]
    assert json.loads(export_after[changed[0]])["message"]["content"][0]["text"] == (
        "AWS_ACCESS_KEY_ID=[REDACTED:aws-access-key]\nregion=eu-west-1"
    )
    assert findings(world)["open"] == 0
    row = ActionLog.objects.get(action="redact")
    assert (row.actor_name, row.session_id, row.detail["findings"]) == ("owner", world.session.pk, 3)


def test_one_finding_is_redacted_alone_and_asking_again_changes_nothing(world: World) -> None:
    body = findings(world)
    aws = next(f for f in body["findings"] if f["kind"] == "aws-access-key")
    url = f"/api/sessions/{world.session.pk}/secrets/redact/"
    client = world.client(world.owner)
    assert client.post(url, {"findingIds": [aws["id"]]}, format="json").json()["redacted"] == 1
    assert client.post(url, {"findingIds": [aws["id"]]}, format="json").json()["redacted"] == 0
    export = b"".join(client.get(f"/api/sessions/{world.session.pk}/export/").streaming_content).decode()
    assert AWS_KEY not in export and GITHUB_TOKEN in export
    assert findings(world)["open"] == 2
    assert ActionLog.objects.filter(action="redact").count() == 1


@pytest.mark.parametrize(
    ("body", "status", "message"),
    [
        ({}, 400, "findingIds"),
        ({"findingIds": [], "all": False}, 400, "findingIds"),
        ({"findingIds": ["x"]}, 400, "findingIds"),
        ({"findingIds": [1], "all": True}, 400, "not both"),
        ({"findingIds": [999999999]}, 404, "Finding not found"),
    ],
)
def test_a_bad_redaction_request_is_refused_and_changes_nothing(
    world: World, body: dict[str, Any], status: int, message: str
) -> None:
    response = world.client(world.owner).post(
        f"/api/sessions/{world.session.pk}/secrets/redact/", body, format="json"
    )
    assert response.status_code == status, response.content
    assert message in response.json()["error"]
    assert findings(world)["open"] == 3


def test_a_team_policy_blocks_sharing_until_the_secrets_are_redacted(world: World) -> None:
    TeamPolicy.objects.create(team=world.team, block_sharing_with_findings=True)
    client = world.client(world.owner)
    pk = world.session.pk
    link = client.post(f"/api/sessions/{pk}/links/", {"scope": "tree"}, format="json")
    assert link.status_code == 409
    assert "crew" in link.json()["error"] and "3 unredacted secrets" in link.json()["error"]
    share = client.post(f"/api/sessions/{pk}/shares/", {"teamId": world.team.pk}, format="json")
    assert share.status_code == 409
    assert world.session.links.count() == 0 and world.session.shares.count() == 0
    client.post(f"/api/sessions/{pk}/secrets/redact/", {"all": True}, format="json")
    assert client.post(f"/api/sessions/{pk}/links/", {"scope": "tree"}, format="json").status_code == 201
    share = client.post(f"/api/sessions/{pk}/shares/", {"teamId": world.team.pk}, format="json")
    assert share.status_code == 201


def test_without_the_policy_sharing_a_session_with_secrets_is_allowed(world: World) -> None:
    response = world.client(world.owner).post(
        f"/api/sessions/{world.session.pk}/links/", {"scope": "tree"}, format="json"
    )
    assert response.status_code == 201


def test_a_bulk_import_is_scanned_off_the_request_and_sharing_waits_for_its_scan(world: World) -> None:
    chain = [user_message(f"m{i}", f"m{i - 1}" if i else None, f"line {i}") for i in range(INLINE_ENTRIES)]
    chain.append(tool_result("leak", chain[-1]["id"], f"export AWS_ACCESS_KEY_ID={AWS_KEY}"))
    data = session_file(chain, {**HEADER, "id": "bulk"})
    bulk = services.import_jsonl(actor=world.owner, data=data, filename="bulk.jsonl").session
    url = f"/api/sessions/{bulk.pk}/secrets/"
    listed = world.client(world.owner).get(url).json()
    assert (listed["findings"], listed["scanned"]) == ([], False)  # queued for a worker (none runs here)

    TeamPolicy.objects.create(team=world.team, block_sharing_with_findings=True)
    refused = world.client(world.owner).post(f"/api/sessions/{bulk.pk}/links/", {}, format="json")
    assert refused.status_code == 409 and "1 unredacted secret;" in refused.json()["error"]
    listed = world.client(world.owner).get(url).json()
    assert listed["scanned"] is True
    assert [(f["entryId"], f["kind"]) for f in listed["findings"]] == [("leak", "aws-access-key")]
    assert sweep_pending_scans(older_than=timedelta(0)) == 0  # nothing left for the sweep


def test_the_sweep_runs_a_bulk_scan_whose_task_was_lost(world: World) -> None:
    size = INLINE_ENTRIES + 1
    chain = [user_message(f"m{i}", f"m{i - 1}" if i else None, f"{GITHUB_TOKEN} {i}") for i in range(size)]
    data = session_file(chain, {**HEADER, "id": "lost"})
    bulk = services.import_jsonl(actor=world.owner, data=data, filename="lost.jsonl").session
    assert sweep_pending_scans() == 0  # too recent: its task may still come
    assert sweep_pending_scans(older_than=timedelta(0)) == 1
    listed = world.client(world.owner).get(f"/api/sessions/{bulk.pk}/secrets/").json()
    assert listed["scanned"] is True and len(listed["findings"]) == INLINE_ENTRIES + 1


def test_the_original_file_imported_or_pushed_again_is_known_not_a_conflict(world: World) -> None:
    client = world.client(world.owner)
    pk = world.session.pk
    client.post(f"/api/sessions/{pk}/secrets/redact/", {"all": True}, format="json")
    grown = [*leaky_entries(), user_message("u3", "a2", "one more question")]
    again = services.import_jsonl(
        actor=world.owner, data=session_file(grown, {**HEADER, "id": "leaky"}), filename="leaky.jsonl"
    )
    assert (again.created, again.appended) == (False, 1)
    lines = [line(e) for e in grown]
    control = {
        "header": line({**HEADER, "id": "leaky"}),
        "from": {"lines": 0, "bytes": 0, "lastId": None},
        "to": {"lines": len(lines), "bytes": 0},
        "path": "/home/me/leaky.jsonl",
    }
    body = (json.dumps(control) + "\n" + "".join(f"{x}\n" for x in lines)).encode()
    pushed = client.generic("POST", "/api/sync/", body, content_type="application/x-ndjson")
    assert pushed.status_code == 200, pushed.content
    assert (pushed.json()["appended"], pushed.json()["known"]) == (0, len(lines))
    export = b"".join(client.get(f"/api/sessions/{pk}/export/").streaming_content).decode()
    assert AWS_KEY not in export and "one more question" in export
    # A line that differs elsewhere is still a different entry.
    changed = [*leaky_entries()]
    changed[2] = tool_result("t1", "a1", f"AWS_ACCESS_KEY_ID={AWS_KEY}\nregion=us-east-1")
    with pytest.raises(services.InvalidSessionFile):
        services.import_jsonl(
            actor=world.owner, data=session_file(changed, {**HEADER, "id": "leaky"}), filename="x.jsonl"
        )


def test_a_secret_in_the_session_name_leaves_the_name_too(world: World) -> None:
    client = world.client(world.owner)
    renamed = client.patch(f"/api/sessions/{world.session.pk}/", {"name": f"deploy {AWS_KEY}"}, format="json")
    assert renamed.status_code == 200
    client.post(f"/api/sessions/{world.session.pk}/secrets/redact/", {"all": True}, format="json")
    listed = client.get("/api/sessions/").json()
    text = json.dumps(listed)
    assert AWS_KEY not in text and "deploy [REDACTED:aws-access-key]" in text


def test_my_sessions_with_open_secrets_are_counted_for_me_alone(world: World) -> None:
    services.share_with_team(session=world.session, team=world.team, access="editor", actor=world.owner)
    assert world.client(world.owner).get("/api/secrets/").json() == {
        "sessions": [{"session": world.session.pk, "open": 3}]
    }
    assert world.client(world.mate).get("/api/secrets/").json() == {"sessions": []}
    world.client(world.owner).post(
        f"/api/sessions/{world.session.pk}/secrets/redact/", {"all": True}, format="json"
    )
    assert world.client(world.owner).get("/api/secrets/").json() == {"sessions": []}


def test_a_huge_appended_line_is_scanned_by_a_worker_not_in_the_request(world: World) -> None:
    from governance.scanning import INLINE_BYTES

    output = "x" * INLINE_BYTES + f" {AWS_KEY}"
    response = world.client(world.owner).post(
        f"/api/sessions/{world.session.pk}/append/",
        {"entries": [{"type": "message", "message": {"role": "user", "content": output}}]},
        format="json",
    )
    assert response.status_code == 201
    assert findings(world)["scanned"] is False  # queued (no worker runs here)
    assert sweep_pending_scans(older_than=timedelta(0)) == 1
    kinds = [f["kind"] for f in findings(world)["findings"]]
    assert kinds.count("aws-access-key") == 2


def test_a_text_about_to_be_sent_is_checked_for_secrets(world: World) -> None:
    answer = world.client(world.stranger).post(
        "/api/secrets/check/", {"text": f"use {AWS_KEY} and {GITHUB_TOKEN}"}, format="json"
    )
    assert answer.status_code == 200
    found = answer.json()["secrets"]
    assert [(s["kind"], s["marker"]) for s in found] == [
        ("aws-access-key", "[REDACTED:aws-access-key]"),
        ("github-token", "[REDACTED:github-token]"),
    ]
    text = f"use {AWS_KEY} and {GITHUB_TOKEN}"
    assert text[found[0]["start"] : found[0]["end"]] == AWS_KEY
    assert world.client(world.stranger).post(
        "/api/secrets/check/", {"text": "nothing here"}, format="json"
    ).json() == {"secrets": []}
    assert APIClient().post("/api/secrets/check/", {"text": AWS_KEY}, format="json").status_code in (401, 403)


def test_a_secret_written_into_a_file_stays_redacted_in_the_branch_compare(world: World) -> None:
    entries = [
        user_message("u1", None, "write the config"),
        *tool_turn("w1", "u1", "write", {"path": "deploy.env", "content": "region=eu\n"}),
        *tool_turn("a", "w1-r", "edit", {"path": "deploy.env", "oldText": "eu", "newText": f"key={AWS_KEY}"}),
        *tool_turn("b", "w1-r", "write", {"path": "deploy.env", "content": f"token={GITHUB_TOKEN}\n"}),
    ]
    data = session_file(entries, {**HEADER, "id": "leaky-files"})
    session = services.import_jsonl(actor=world.owner, data=data, filename="leaky-files.jsonl").session
    client = world.client(world.owner)
    url = f"/api/sessions/{session.pk}/files/"
    before = client.get(url, {"leaf": "a-r", "against": "b-r"})
    assert before.status_code == 200 and AWS_KEY in before.content.decode()
    assert GITHUB_TOKEN in before.content.decode()

    redacted = client.post(f"/api/sessions/{session.pk}/secrets/redact/", {"all": True}, format="json")
    assert redacted.status_code == 200 and redacted.json()["redacted"] >= 2

    after = client.get(url, {"leaf": "a-r", "against": "b-r"})
    assert after.status_code == 200
    text = after.content.decode()
    assert [f["path"] for f in after.json()["both"]] == ["deploy.env"]
    assert AWS_KEY not in text and GITHUB_TOKEN not in text


def test_a_secret_in_a_command_leaves_the_search_by_work_too(world: World) -> None:
    call = {
        "type": "toolCall",
        "id": "call-9",
        "name": "bash",
        "arguments": {"command": f"export GH_TOKEN={GITHUB_TOKEN} && gh pr list"},
    }
    entries = [
        user_message("u1", None, "list the pull requests"),
        assistant_message("a1", "u1", "Listing.", blocks=[call]),
        {
            **tool_result("t1", "a1", "no pull requests"),
            "message": {**tool_result("t1", "a1", "no pull requests")["message"], "toolCallId": "call-9"},
        },
    ]
    data = session_file(entries, {**HEADER, "id": "leaky-command"})
    session = services.import_jsonl(actor=world.owner, data=data, filename="c.jsonl").session
    client = world.client(world.owner)

    def hits(q: str) -> str:
        response = client.get("/api/search/", {"q": q})
        assert response.status_code == 200, response.content
        return json.dumps(response.json()["sessions"])

    assert GITHUB_TOKEN in hits("cmd:gh")
    response = client.post(f"/api/sessions/{session.pk}/secrets/redact/", {"all": True}, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["redacted"] >= 1
    after = hits("cmd:gh")
    assert GITHUB_TOKEN not in after and "[REDACTED:" in after
    assert hits(f"cmd:{GITHUB_TOKEN[:12]}") == "[]"
