"""A restricted link's view of a session comes only from its scope: every field of the session API and
of the link's page, names and counts included, stays as it was however the session grows elsewhere."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import pytest
from django.test import Client
from rest_framework.test import APIClient

from sessions_app import services
from sessions_app.models import Entry, ShareLink
from tests.factories import session_file, small_tree

pytestmark = pytest.mark.django_db
NOTE = {"type": "custom", "customType": "n", "data": 1}
MESSAGE = {"type": "message", "message": {"role": "user", "content": "elsewhere", "timestamp": 9}}


@pytest.fixture
def owner(user: Callable[..., Any]) -> Any:
    return user("owner")


def holder(token: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_X_SHARE_TOKEN=token)
    return client


def page_view(token: str) -> tuple[dict[str, Any], str]:
    """Return the link page's config and its whole text."""
    html = Client().get(f"/s/{token}/").content.decode()
    found = re.search(r'<script id="session-config" type="application/json">(.*?)</script>', html, re.S)
    assert found is not None, html[:2000]
    return json.loads(found.group(1)), html


def views(session: Any, links: dict[str, ShareLink]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kind, link in links.items():
        config, html = page_view(link.raw_token)
        title = re.search(r"<title>(.*?)</title>", html, re.S)
        counts = re.search(r'<span id="session-counts"[^>]*>(.*?)</span>', html, re.S)
        out[kind] = {
            "api": holder(link.raw_token).get(f"/api/sessions/{session.pk}/").json(),
            "config": config,
            "title": title.group(1) if title else None,
            "counts": counts.group(1) if counts else None,
        }
    return out


def test_a_restricted_links_view_comes_only_from_its_scope(owner: Any) -> None:
    stored = services.import_jsonl(actor=owner, data=session_file(small_tree()), filename="s.jsonl").session
    services.rename_session(session=stored, name="Visible", actor=owner)  # on the path u1 → a1 → u3 → a3
    links = {
        "path": services.create_share_link(session=stored, actor=owner, scope=ShareLink.Scope.PATH),
        "frozen path": services.create_share_link(
            session=stored, actor=owner, scope=ShareLink.Scope.PATH, frozen=True
        ),
        "frozen tree": services.create_share_link(session=stored, actor=owner, frozen=True),
    }
    before = views(stored, links)

    # The owner works on the other branch: a new name there, messages and notes.
    services.navigate_without_summary(session=stored, target_id="a2", actor=owner)
    services.rename_session(session=stored, name="SECRET elsewhere", actor=owner)
    services.append_entries(session=stored, entries=[MESSAGE, NOTE, MESSAGE], actor=owner)
    api = APIClient()
    api.force_login(owner)
    now = api.get(f"/api/sessions/{stored.pk}/").json()
    assert now["name"] == "SECRET elsewhere" and now["entryCount"] == 11  # the session did change

    after = views(stored, links)
    for kind in links:
        for part in ("api", "config", "title", "counts"):
            assert after[kind][part] == before[kind][part], (kind, part)
        _, html = page_view(links[kind].raw_token)
        assert "SECRET" not in html and "SECRET" not in json.dumps(after[kind]["api"])

    # And what it shows is its scope's own: the path's name, counts, leaf and position.
    info = Entry.objects.get(session=stored, type="session_info", seq=6)
    path = after["path"]["api"]
    assert path["name"] == "Visible" and after["path"]["title"].startswith("Visible")
    assert (path["entryCount"], path["messageCount"]) == (5, 4)  # u1, a1, u3, a3 and the rename
    assert after["path"]["counts"] == "5 entries"
    assert (path["leafId"], path["leafSeq"], path["lastSeq"]) == (info.entry_id, 6, 6)
    assert after["path"]["config"]["name"] == "Visible"
    assert after["path"]["config"]["leafId"] == info.entry_id
    frozen_tree = after["frozen tree"]["api"]
    assert (frozen_tree["entryCount"], frozen_tree["messageCount"]) == (7, 6)
    assert (frozen_tree["leafId"], frozen_tree["leafSeq"], frozen_tree["lastSeq"]) == (info.entry_id, 6, 6)
