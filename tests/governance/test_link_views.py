"""An owner sees when each share link was opened, by whom and how often; requests are not opens."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from rest_framework.test import APIClient

from sessions_app import services
from tests.factories import session_file, small_tree

pytestmark = pytest.mark.django_db


@pytest.fixture
def shared(user: Callable[..., Any]) -> tuple[Any, Any, Any]:
    owner = user("owner")
    session = services.import_jsonl(actor=owner, data=session_file(small_tree()), filename="s.jsonl").session
    link = services.create_share_link(session=session, actor=owner)
    return owner, session, link


def views_of(account: Any, link_id: int) -> Any:
    client = APIClient()
    client.force_authenticate(user=account)
    return client.get(f"/api/links/{link_id}/views/")


def test_page_opens_count_each_and_the_pages_own_requests_do_not(shared: tuple[Any, Any, Any]) -> None:
    owner, session, link = shared
    browser = APIClient()
    for _ in range(2):
        assert browser.get(f"/s/{link.raw_token}/").status_code == 200
        # What the page then reads through the link.
        for suffix in ("tree/", "entries/", "context/"):
            read = browser.get(f"/api/sessions/{session.pk}/{suffix}?link={link.raw_token}")
            assert read.status_code == 200
    body = views_of(owner, link.pk).json()
    assert body["opens"] == 2
    [row] = body["views"]
    assert row["viewer"] is None and row["count"] == 2
    assert row["firstAt"] <= row["lastAt"]


def test_a_signed_in_viewer_is_named_and_an_api_session_counts_once(
    shared: tuple[Any, Any, Any], user: Callable[..., Any]
) -> None:
    owner, session, link = shared
    reader = APIClient()
    reader.force_authenticate(user=user("reader"))
    for _ in range(5):
        response = reader.get(f"/api/sessions/{session.pk}/entries/", HTTP_X_SHARE_TOKEN=link.raw_token)
        assert response.status_code == 200
    APIClient().get(f"/s/{link.raw_token}/")
    body = views_of(owner, link.pk).json()
    assert sorted((r["viewer"] or "", r["count"]) for r in body["views"]) == [("", 1), ("reader", 1)]
    assert body["opens"] == 2


def test_only_the_owner_reads_a_links_log(shared: tuple[Any, Any, Any], user: Callable[..., Any]) -> None:
    owner, _session, link = shared
    assert views_of(user("stranger"), link.pk).status_code == 404
    assert APIClient().get(f"/api/links/{link.pk}/views/").status_code in (401, 403)
    assert views_of(owner, 999999).status_code == 404
    assert views_of(owner, link.pk).json() == {"link": link.pk, "opens": 0, "views": []}


def test_a_dead_link_opens_nothing_and_logs_nothing(shared: tuple[Any, Any, Any]) -> None:
    owner, _session, link = shared
    services.revoke_share_link(link=link, actor=owner)
    assert APIClient().get(f"/s/{link.raw_token}/").status_code == 404
    assert views_of(owner, link.pk).json()["opens"] == 0
