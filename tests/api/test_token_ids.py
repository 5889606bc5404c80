"""A token is named by a short id that gives away 32 of its 256 bits: in its owner's list, in the answer
that creates it, on the entries it wrote, in the action log and in the admin."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

import pytest
from django.apps import apps
from rest_framework.test import APIClient

from actionlog.models import ActionLog
from sessions_app import services
from sessions_app.models import ApiToken, EntryAuthor
from tests.factories import session_file, small_tree

pytestmark = pytest.mark.django_db

SHOWN = 8  # the most characters of a token any list may show


def bearer(text: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {text}")
    return client


def test_lists_and_logs_show_at_most_eight_characters_of_a_token(user: Callable[..., Any]) -> None:
    owner = user("tess", is_staff=True, is_superuser=True)
    browser = APIClient()
    browser.force_login(owner)
    made = [browser.post("/api/tokens/", {"name": ""}, format="json").json() for _ in range(3)]
    texts = [m["token"] for m in made]
    assert all(len(m["id"]) <= SHOWN and m["token"].startswith(m["id"]) for m in made)

    listed = browser.get("/api/tokens/")
    assert sorted(t["id"] for t in listed.json()["results"]) == sorted(m["id"] for m in made)
    # A token wrote entries: they say which device wrote them, by the same short id.
    session = services.import_jsonl(actor=owner, data=session_file(small_tree()), filename="s.jsonl").session
    entry = {"type": "custom", "customType": "note", "data": {"x": 1}}
    wrote = bearer(texts[0]).post(f"/api/sessions/{session.pk}/append/", {"entries": [entry]}, format="json")
    assert wrote.status_code == 201
    entries = browser.get(f"/api/sessions/{session.pk}/entries/")
    assert f"token {made[0]['id']}" in entries.text
    admin = browser.get("/admin/sessions_app/apitoken/")
    assert admin.status_code == 200
    logged = str(list(ActionLog.objects.filter(action__startswith="token").values_list("detail", flat=True)))

    for text in texts:
        longer = text[: SHOWN + 1]
        for where, shown in [
            ("the token list", listed.text),
            ("the entries", entries.text),
            ("the admin", admin.content.decode()),
            ("the action log", logged),
        ]:
            assert longer not in shown, f"{where} shows more than {SHOWN} characters of a token"


def test_a_token_is_revoked_by_its_short_id_and_never_by_a_shorter_one(user: Callable[..., Any]) -> None:
    owner = user()
    browser = APIClient()
    browser.force_login(owner)
    made = browser.post("/api/tokens/", {"name": "laptop"}, format="json").json()
    assert bearer(made["token"]).get("/api/sessions/").status_code == 200

    # A few characters could name several tokens: only the id as listed names one.
    assert browser.delete(f"/api/tokens/{made['id'][:4]}/").status_code == 404
    assert bearer(made["token"]).get("/api/sessions/").status_code == 200
    assert browser.delete(f"/api/tokens/{made['id']}/").status_code == 204
    assert bearer(made["token"]).get("/api/sessions/").status_code in (401, 403)
    assert browser.get("/api/tokens/").json()["results"] == []


def test_entries_written_before_keep_their_author_and_show_the_short_id(user: Callable[..., Any]) -> None:
    owner = user()
    token, text = ApiToken.objects.create(user=owner)
    old = EntryAuthor.objects.create(
        key="k" * 64, kind="device", name=owner.username, user=owner, via=f"token {text[:15]}"
    )
    migration = importlib.import_module("sessions_app.migrations.0029_short_token_ids_in_authors")
    migration.shorten(apps, None)
    old.refresh_from_db()
    assert old.via == f"token {token.public_id}" and len(token.public_id) == SHOWN
