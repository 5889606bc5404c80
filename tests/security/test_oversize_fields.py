"""Oversized values in every field of every write route get a 400 (the API's error shape), never a 500
and never a stored row.

The routes and their working bodies come from the URLconf and ``tests/fuzz``'s templates: a write route
without a template fails ``test_coverage``. Free text (a prompt, a message, instructions, a password)
may be long; every other field (ids, labels, names, roles, scopes) has a cap.
"""

from __future__ import annotations

import copy
import json
import secrets
from collections.abc import Iterator
from typing import Any

import pytest

from reviews.services import request_review
from tests.authz.test_matrix import _tag
from tests.factories import HEADER, line, session_file, small_tree

from .conftest import Current, Stack
from .routes import TEMPLATES, fill, ids_of

# Random text does not compress: past PostgreSQL's index row limit, as a real long id would be.
BIG = secrets.token_urlsafe(9_000)
# A comment's body is free text too, with its own cap (tests/discussion); text: a reply streaming; message and
# note: a steer or follow-up for Pi and a handover note, free text with caps of their own (runners.api).
FREE_TEXT = {"prompt", "customInstructions", "content", "password", "text", "body", "message", "note"}
# Write routes whose fields are capped elsewhere, each with where.
CAPPED_ELSEWHERE = {
    ("accounts/login/", "post"): "Django's sign-in form (max_length 150), answered on the form itself",
}


def field_cases() -> Iterator[tuple[str, str, str]]:
    """(route, method, field path) for every string field of every template, entries' fields too."""
    for (route, method), template in sorted(TEMPLATES.items()):
        if (route, method) in CAPPED_ELSEWHERE:
            continue
        for key, value in template.items():
            if isinstance(value, str) and key not in FREE_TEXT:
                yield route, method.upper(), key
        for entry_key, value in (template.get("entries") or [{}])[0].items():
            if isinstance(value, str):
                yield route, method.upper(), f"entries.0.{entry_key}"


CASES = [pytest.param(*case, id=f"{case[1]} {case[0]} {case[2]}") for case in field_cases()]


def body_with(route: str, method: str, field: str, state: Current) -> dict[str, Any]:
    body = copy.deepcopy(TEMPLATES[(route, method.lower())])
    if "teamId" in body:
        body["teamId"] = state.world.team.pk
    if route.startswith("api/teams/<int:team_id>/members/") and "username" in body:
        body["username"] = "other"
    target: Any = body
    parts = field.split(".")
    for part in parts[:-1]:
        target = target[int(part)] if part.isdigit() else target[part]
    target[parts[-1]] = BIG
    return body


@pytest.fixture(scope="module")
def _fresh_world(stack: Stack) -> None:
    stack.changed()


def send(stack: Stack, state: Current, method: str, url: str, *, kind: str = "", **kwargs: Any) -> Any:
    headers = {"Authorization": f"Token {state.tokens['owner']}"}
    if url.startswith("/accounts/"):
        headers = {"Cookie": state.cookies["owner"]}
    if kind:
        headers["Content-Type"] = kind
    with stack.http() as http:
        response = http.request(method, url, headers=headers, **kwargs)
    if response.status_code < 300:
        stack.changed()
    return response


@pytest.mark.usefixtures("_fresh_world")
@pytest.mark.parametrize(("route", "method", "field"), CASES)
def test_an_oversized_field_is_a_400(stack: Stack, route: str, method: str, field: str) -> None:
    state = stack.current()
    ids = {**ids_of(state.world), "username": "viewer"}
    if "<int:tag_id>" in route or "<int:review_id>" in route:
        # These answer 404 before they read a body: give them a tag, and a review asked of the sender.
        with stack.db():
            ids["tag_id"] = str(_tag(state.world))
            editor = state.world.user_of("editor")
            asked = request_review(actor=editor, session=state.world.session, reviewers=["owner"])
            ids["review_id"] = str(asked.pk)
    url = fill(route, ids)
    response = send(stack, state, method, url, json=body_with(route, method, field, state))
    assert response.status_code == 400, (
        f"{method} {url} {field}: {response.status_code} {response.text[:200]}"
    )
    if url.startswith("/api/"):
        assert "error" in response.json()


def _long_id_file() -> bytes:
    entries = small_tree()
    entries[-1] = {**entries[-1], "id": BIG}
    return session_file(entries)


@pytest.mark.usefixtures("_fresh_world")
@pytest.mark.parametrize(
    "case",
    [
        "import a file with a 12 KB id",
        "sync a line with a 12 KB id",
        "append a custom entry with a 12 KB type",
    ],
)
def test_an_oversized_key_in_a_session_line_is_a_400(stack: Stack, case: str) -> None:
    state = stack.current()
    pk = state.world.session.pk
    if case.startswith("import"):
        response = send(
            stack,
            state,
            "POST",
            "/api/sessions/import/?filename=x.jsonl",
            content=_long_id_file(),
            kind="application/x-ndjson",
        )
    elif case.startswith("sync"):
        lines = [line(e) for e in small_tree()[:2]] + [line({**small_tree()[2], "id": BIG})]
        response = send(
            stack,
            state,
            "POST",
            "/api/sync/",
            json={"header": line({**HEADER, "id": "s-big"}), "lines": lines},
        )
    else:
        entry = {"type": "custom", "customType": BIG, "data": {}}
        response = send(stack, state, "POST", f"/api/sessions/{pk}/append/", json={"entries": [entry]})
    assert response.status_code == 400, f"{case}: {response.status_code} {response.text[:200]}"
    assert "error" in json.loads(response.text)
