"""Reading a session again costs nothing when it has not changed: an ETag, and 304 for a current copy.

A copy stays current only for the viewer it was made for and only while the session's state (appends,
leaf, redactions) is the same; access is checked before any 304, so a revoked reader is refused.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from rest_framework.test import APIClient

from governance.redaction import redact_findings
from sessions_app import services
from sessions_app.models import ShareLink
from teams.models import Team, TeamMembership
from teams.services import remove_member
from tests.factories import assistant_message as assistant
from tests.factories import session_file, small_tree
from tests.factories import user_message as user_entry

pytestmark = pytest.mark.django_db


def _reads(pk: int, leaf: str) -> dict[str, tuple[str, dict[str, Any]]]:
    base = f"/api/sessions/{pk}"
    return {
        "detail": (f"{base}/", {}),
        "tree": (f"{base}/tree/", {}),
        "path": (f"{base}/path/", {"leaf": leaf, "limit": 12, "render": 1}),
        "context": (f"{base}/context/", {"leaf": leaf, "head": 2, "tail": 8, "llm": "false"}),
    }


def _again(client: APIClient, url: str, params: dict[str, Any], etag: str) -> Any:
    return client.get(url, params, HTTP_IF_NONE_MATCH=etag)


@pytest.fixture
def owner(user: Callable[..., Any]) -> Any:
    return user("olga")


@pytest.fixture
def stored(owner: Any) -> Any:
    return services.import_jsonl(actor=owner, data=session_file(small_tree()), filename="s.jsonl").session


def signed_in(account: Any) -> APIClient:
    client = APIClient()
    client.force_authenticate(user=account)
    return client


def test_a_current_copy_is_answered_304_and_an_append_makes_it_stale(owner: Any, stored: Any) -> None:
    client = signed_in(owner)
    for kind, (url, params) in _reads(stored.pk, "a3").items():
        first = client.get(url, params)
        assert first.status_code == 200, kind
        etag = first["ETag"]
        assert etag.startswith('"') and first["Cache-Control"] == "private, no-cache"
        same = _again(client, url, params, etag)
        assert same.status_code == 304 and same.content == b"", kind
        assert same["ETag"] == etag
        # A proxy may weaken the tag; a list of tags is matched too.
        assert _again(client, url, params, f'"other", W/{etag}').status_code == 304, kind
        assert _again(client, url, params, '"other"').status_code == 200, kind
        assert _again(client, url, params, "*").status_code == 200, kind  # never a blind 304

    tags = {kind: client.get(url, params)["ETag"] for kind, (url, params) in _reads(stored.pk, "a3").items()}
    services.append_entries(session=stored, actor=owner, entries=[assistant("a4", "a3", "one more answer")])
    for kind, (url, params) in _reads(stored.pk, "a3").items():
        fresh = _again(client, url, params, tags[kind])
        assert fresh.status_code == 200, kind
        assert fresh["ETag"] != tags[kind]
    assert client.get(f"/api/sessions/{stored.pk}/").json()["leafId"] == "a4"


def test_moving_the_leaf_makes_the_leafs_reads_stale(owner: Any, stored: Any) -> None:
    client = signed_in(owner)
    url = f"/api/sessions/{stored.pk}/path/"
    first = client.get(url)
    assert [e["id"] for e in first.json()["entries"]][-1] == "a3"
    services.navigate_without_summary(session=stored, actor=owner, target_id="a2")
    moved = _again(client, url, {}, first["ETag"])
    assert moved.status_code == 200
    assert [e["id"] for e in moved.json()["entries"]][-1] == "a2"


def test_a_copy_is_current_only_for_the_viewer_it_was_made_for(
    user: Callable[..., Any], owner: Any, stored: Any
) -> None:
    vera = user("vera")
    team = Team.objects.create(name="crew")
    TeamMembership.objects.create(team=team, user=owner, role="owner")
    TeamMembership.objects.create(team=team, user=vera, role="viewer")
    services.share_with_team(session=stored, team=team, access="viewer", actor=owner)
    mine = signed_in(owner).get(f"/api/sessions/{stored.pk}/")
    assert mine.json()["canEdit"] is True
    # The owner's copy says "can edit": a teammate who only reads never gets it through a 304.
    hers = _again(signed_in(vera), f"/api/sessions/{stored.pk}/", {}, mine["ETag"])
    assert hers.status_code == 200 and hers.json()["canEdit"] is False
    own_tag = hers["ETag"]
    assert _again(signed_in(vera), f"/api/sessions/{stored.pk}/", {}, own_tag).status_code == 304

    # Removed from the team, her current copy does not let her in.
    remove_member(actor=owner, team_id=team.pk, username="vera")
    for url, params in _reads(stored.pk, "a3").values():
        assert _again(signed_in(vera), url, params, own_tag).status_code == 404


def test_link_holders_copies_are_their_links_and_end_with_the_link(owner: Any, stored: Any) -> None:
    link = services.create_share_link(session=stored, actor=owner, scope=ShareLink.Scope.PATH)
    holder = APIClient()
    holder.credentials(HTTP_X_SHARE_TOKEN=link.raw_token)
    url = f"/api/sessions/{stored.pk}/path/"
    seen = holder.get(url, {"leaf": "a3"})
    assert seen.status_code == 200
    # The owner's copy of the same address is not the link's.
    owners = signed_in(owner).get(url, {"leaf": "a3"})
    assert owners["ETag"] != seen["ETag"]
    assert _again(holder, url, {"leaf": "a3"}, seen["ETag"]).status_code == 304
    # A node off the link's path stays hidden, whatever tag is sent.
    assert _again(holder, url, {"leaf": "a2"}, seen["ETag"]).status_code == 404
    services.revoke_share_link(link=link, actor=owner)
    assert _again(holder, url, {"leaf": "a3"}, seen["ETag"]).status_code == 404


def test_a_redaction_makes_every_copy_stale(owner: Any, django_capture_on_commit_callbacks: Any) -> None:
    secret = "ghp_" + "R4nd0mL00k1ngT0k3nV4lu3F0rT3st1ng007"
    entries = [
        user_entry("u1", None, f"deploy with key {secret} please"),
        assistant("a1", "u1", "done"),
    ]
    with django_capture_on_commit_callbacks(execute=True):  # the scan runs once the import commits
        stored = services.import_jsonl(actor=owner, data=session_file(entries), filename="k.jsonl").session
    client = signed_in(owner)
    url = f"/api/sessions/{stored.pk}/path/"
    first = client.get(url)
    assert secret in first.content.decode()
    with django_capture_on_commit_callbacks(execute=True):
        assert redact_findings(actor=owner, session=stored)
    after = _again(client, url, {}, first["ETag"])
    assert after.status_code == 200 and secret not in after.content.decode()


def test_the_pi_file_is_sent_again_only_when_it_changed(owner: Any, stored: Any) -> None:
    client = signed_in(owner)
    url = f"/api/sessions/{stored.pk}/export/"
    first = client.get(url)
    data = b"".join(first.streaming_content)
    assert first.status_code == 200 and data.count(b"\n") == 7  # the header and six entries
    assert _again(client, url, {}, first["ETag"]).status_code == 304
    # Another leaf is another file.
    assert _again(client, url, {"leaf": "a2"}, first["ETag"]).status_code == 200
    services.append_entries(session=stored, actor=owner, entries=[assistant("a4", "a3", "more")])
    fresh = _again(client, url, {}, first["ETag"])
    assert fresh.status_code == 200
    assert b"".join(fresh.streaming_content).count(b"\n") == 8
