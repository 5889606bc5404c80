"""A frozen link shows the session as it was at the freeze; a path link keeps the path of its creation."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.test import Client
from rest_framework.test import APIClient

from sessions_app import access, services
from sessions_app.models import Entry, ShareLink
from tests.factories import session_file, small_tree

pytestmark = pytest.mark.django_db


@pytest.fixture
def owner(user: Callable[..., Any]) -> Any:
    return user("owner")


@pytest.fixture
def stored(owner: Any) -> Any:
    return services.import_jsonl(actor=owner, data=session_file(small_tree()), filename="s.jsonl").session


def holder(token: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_X_SHARE_TOKEN=token)
    return client


def test_a_frozen_link_shows_the_name_counters_and_activity_of_the_freeze(owner: Any, stored: Any) -> None:
    services.rename_session(session=stored, actor=stored.owner, name="before")
    link = services.create_share_link(session=stored, actor=owner, frozen=True)
    at_freeze = holder(link.raw_token).get(f"/api/sessions/{stored.pk}/").json()
    services.rename_session(session=stored, actor=stored.owner, name="after")
    services.append_entries(
        session=stored, actor=stored.owner, entries=[{"type": "custom", "customType": "n", "data": 1}] * 3
    )

    body = holder(link.raw_token).get(f"/api/sessions/{stored.pk}/").json()
    assert body["name"] == "before"
    assert (body["entryCount"], body["messageCount"]) == (7, 6)  # six messages and the first rename
    assert body["updatedAt"] == at_freeze["updatedAt"]
    assert body["lastSeq"] == 6
    # The owner sees the session as it is now.
    api = APIClient()
    api.force_login(owner)
    now = api.get(f"/api/sessions/{stored.pk}/").json()
    assert (now["name"], now["entryCount"]) == ("after", 11)
    assert now["updatedAt"] > body["updatedAt"]
    # So does the page opened through the link.
    page = Client().get(f"/s/{link.raw_token}/").content.decode()
    assert "before" in page and "after" not in page


def test_a_current_path_link_keeps_the_path_of_its_creation(owner: Any, stored: Any) -> None:
    link = services.create_share_link(session=stored, actor=owner, scope=ShareLink.Scope.PATH)
    assert link.entry_id == "a3"  # pinned to the leaf of the moment
    seen = holder(link.raw_token)
    before = seen.get(f"/api/sessions/{stored.pk}/path/").json()
    # The owner moves to the other branch and continues there.
    services.navigate_without_summary(session=stored, actor=stored.owner, target_id="a2")
    services.append_entries(
        session=stored, actor=stored.owner, entries=[{"type": "custom", "customType": "n", "data": 1}]
    )

    after = seen.get(f"/api/sessions/{stored.pk}/path/").json()
    assert after["leafId"] == "a3" and after == before
    assert [e["id"] for e in seen.get(f"/api/sessions/{stored.pk}/entries/").json()["entries"]] == [
        "u1",
        "a1",
        "u3",
        "a3",
    ]
    assert seen.get(f"/api/sessions/{stored.pk}/entries/u2/").status_code == 404


def labels_of(session: Any) -> dict[str, str]:
    """Return target → label as the session's label entries leave them."""
    found: dict[str, str] = {}
    for row in Entry.objects.filter(session=session, type="label").order_by("seq"):
        payload = row.payload()
        if payload.get("label"):
            found[payload["targetId"]] = payload["label"]
        else:
            found.pop(payload["targetId"], None)
    return found


def test_copies_through_a_frozen_link_leave_later_labels_behind(
    user: Callable[..., Any], owner: Any, stored: Any
) -> None:
    services.set_label(session=stored, target_id="a1", label="kept", actor=owner)
    link = services.create_share_link(session=stored, actor=owner, frozen=True)
    services.set_label(session=stored, target_id="u1", label="after the freeze", actor=owner)
    reader = user("reader")
    grant = access.resolve_access(None, stored.pk, link_token=link.raw_token)
    assert grant is not None
    fork = services.fork_session(
        session=stored, entry_id="a3", actor=reader, mode="path", grant=grant
    ).session
    clone = services.clone_session(session=stored, actor=reader, grant=grant)
    for copy in (fork, clone):
        assert labels_of(copy) == {"a1": "kept"}
    # The owner's own fork keeps every label.
    mine = services.fork_session(session=stored, entry_id="a3", actor=owner, mode="path").session
    assert labels_of(mine) == {"a1": "kept", "u1": "after the freeze"}


def test_copies_through_a_path_link_leave_labels_outside_the_path_behind(
    user: Callable[..., Any], owner: Any, stored: Any
) -> None:
    link = services.create_share_link(session=stored, actor=owner, scope=ShareLink.Scope.PATH)
    # Labelled later, by label entries that are not on the link's path.
    services.set_label(session=stored, target_id="a1", label="outside", actor=owner)
    grant = access.resolve_access(None, stored.pk, link_token=link.raw_token)
    assert grant is not None
    clone = services.clone_session(session=stored, actor=user("reader"), grant=grant)
    assert labels_of(clone) == {}
    assert list(Entry.objects.filter(session=clone).order_by("seq").values_list("entry_id", flat=True)) == [
        "u1",
        "a1",
        "u3",
        "a3",
    ]
