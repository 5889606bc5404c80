"""Markdown and HTML exports: what they hold, that hostile text stays inert, and a link's scope."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from html.parser import HTMLParser
from typing import Any

import pytest
from rest_framework.test import APIClient

from actionlog.models import ActionLog
from providers.models import LLMProvider
from sessions_app import services
from tests.factories import assistant_message, session_file, small_tree, user_message

pytestmark = pytest.mark.django_db

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
HOSTILE = (
    "<script>alert('x')</script> <img src=x onerror=alert(1)> "
    '[click](javascript:alert(2)) <a href="https://evil.example/" onclick="steal()">evil</a>'
)


def _import(owner: Any, entries: list[dict[str, Any]]) -> Any:
    return services.import_jsonl(actor=owner, data=session_file(entries), filename="t.jsonl").session


def _get(client: APIClient, pk: int, **params: str) -> Any:
    return client.get(f"/api/sessions/{pk}/export/", params)


def _body(response: Any) -> str:
    assert response.status_code == 200, getattr(response, "data", response)
    return b"".join(response.streaming_content).decode()


@pytest.fixture
def owner_client(user: Callable[..., Any]) -> APIClient:
    client = APIClient()
    client.user = user()  # type: ignore[attr-defined]
    client.force_authenticate(client.user)  # type: ignore[attr-defined]
    return client


def test_markdown_of_the_branch_holds_its_messages_in_order_and_not_the_other_branch(
    owner_client: APIClient,
) -> None:
    session = _import(owner_client.user, small_tree(rich=True))  # type: ignore[attr-defined]
    response = _get(owner_client, session.pk, format="markdown")
    text = _body(response)
    assert response["Content-Type"].startswith("text/markdown")
    assert response["Content-Disposition"] == 'attachment; filename="hello-there.md"'
    # The leaf's branch, root first; the sibling branch (u2 → a2) is not in it.
    positions = [
        text.index(s) for s in ("hello there", "hi, how can I help?", "second question", "second answer")
    ]
    assert positions == sorted(positions)
    assert "first question" not in text
    assert "## User · `u1`" in text and "## Assistant · " in text


def test_markdown_at_an_entry_ends_there(owner_client: APIClient) -> None:
    session = _import(owner_client.user, small_tree(rich=True))  # type: ignore[attr-defined]
    text = _body(_get(owner_client, session.pk, format="markdown", at="a2"))
    assert "first **answer**" in text and "second question" not in text
    assert "to `a2`" in text


def test_the_tree_holds_every_branch_and_says_where_each_continues(owner_client: APIClient) -> None:
    session = _import(owner_client.user, small_tree(rich=True))  # type: ignore[attr-defined]
    text = _body(_get(owner_client, session.pk, format="markdown", scope="tree"))
    for message in ("hello there", "first question", "first **answer**", "second question", "second answer"):
        assert message in text
    # Depth first: the first branch to its end, then the second from where it leaves the first.
    assert text.index("first **answer**") < text.index("second question")
    assert "*Continues from `a1`.*" in text
    page = _body(_get(owner_client, session.pk, format="html", scope="tree"))
    assert 'continuing from <a href="#e-a1">' in page and 'id="e-a1"' in page


def test_html_is_one_standalone_page_with_the_page_rendering(owner_client: APIClient) -> None:
    entries = [
        user_message("u1", None, "show me"),
        assistant_message(
            "a1",
            "u1",
            "Here is `code` and **bold**:\n\n```python\ndef add(a, b):\n    return a + b\n```",
            blocks=[{"type": "toolCall", "id": "t1", "name": "bash", "arguments": {"command": "ls -la"}}],
        ),
    ]
    entries[0]["message"]["content"] = [
        {"type": "text", "text": "show me"},
        {"type": "image", "data": PNG, "mimeType": "image/png"},
    ]
    session = _import(owner_client.user, entries)  # type: ignore[attr-defined]
    response = _get(owner_client, session.pk, format="html")
    page = _body(response)
    assert response["Content-Type"].startswith("text/html")
    assert response["Content-Disposition"] == 'attachment; filename="show-me.html"'
    assert page.startswith("<!DOCTYPE html>") and "<style>" in page
    assert "<strong>bold</strong>" in page and '<pre class="hl" data-lang="python">' in page
    assert "<code>bash</code>" in page and "-la" in page
    assert f'src="data:image/png;base64,{PNG}"' in page
    # Nothing to fetch and nothing to run: no external URL in src/href attributes, no script element.
    assert not re.search(r"""(?:src|href)=["']?(?:https?:)?//""", page)
    assert "<script" not in page.lower() and "<link" not in page.lower()
    assert "default-src 'none'" in page


class _Elements(HTMLParser):
    """Every element and attribute a browser would build from the page."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.attributes: list[tuple[str, str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.attributes += [(name, value or "") for name, value in attrs]


def test_a_hostile_message_is_inert_in_both_formats(owner_client: APIClient) -> None:
    tool = {
        "name": HOSTILE,
        "description": HOSTILE,
        "parameters": {"properties": {HOSTILE: {"type": HOSTILE}}},
    }
    system = {"role": "system", "content": HOSTILE, "sections": {HOSTILE: HOSTILE}, "toolsAdded": [tool]}
    entries = [
        {
            "type": "message",
            "id": "s1",
            "parentId": None,
            "timestamp": "2026-01-02T03:04:05.000Z",
            "message": system,
        },
        user_message("u1", "s1", HOSTILE),
        assistant_message("a1", "u1", HOSTILE, model=HOSTILE, provider=HOSTILE),
    ]
    session = _import(owner_client.user, entries)  # type: ignore[attr-defined]
    page = _body(_get(owner_client, session.pk, format="html", scope="tree"))
    elements = _Elements()
    elements.feed(page)
    assert "script" not in elements.tags and "img" not in elements.tags
    assert not [name for name, _ in elements.attributes if name.startswith("on")]
    hrefs = [value for name, value in elements.attributes if name == "href"]
    assert not [h for h in hrefs if not h.startswith(("#", "https://"))], hrefs
    assert "&lt;script&gt;alert" in page  # shown as text, not dropped
    text = _body(_get(owner_client, session.pk, format="markdown", scope="tree"))
    assert "<script" not in text and "<img" not in text and "<a href" not in text
    assert "javascript:" not in text
    assert "&lt;script>alert('x')&lt;/script>" in text


def test_bad_parameters_are_refused_and_name_the_problem(owner_client: APIClient) -> None:
    session = _import(owner_client.user, small_tree())  # type: ignore[attr-defined]
    cases = [
        ({"format": "pdf"}, "format"),
        ({"format": "markdown", "scope": "forest"}, "scope"),
        ({"format": "html", "scope": "tree", "at": "a2"}, "at"),
        ({"format": "markdown", "leaf": "a2"}, "leaf"),
        ({"scope": "tree"}, "scope"),
    ]
    for params, named in cases:
        response = _get(owner_client, session.pk, **params)
        assert response.status_code == 400, params
        assert named in response.json()["error"], (params, response.json())
    missing = _get(owner_client, session.pk, format="markdown", at="nope")
    assert missing.status_code == 404 and "nope" in missing.json()["error"]


def test_jsonl_stays_the_default_and_byte_exact(owner_client: APIClient) -> None:
    entries = small_tree()
    session = _import(owner_client.user, entries)  # type: ignore[attr-defined]
    assert _body(_get(owner_client, session.pk)).encode() == session_file(entries)
    assert _body(_get(owner_client, session.pk, format="jsonl")).encode() == session_file(entries)


def test_a_path_link_cannot_export_beyond_its_path(owner_client: APIClient) -> None:
    owner = owner_client.user  # type: ignore[attr-defined]
    session = _import(owner, small_tree(rich=True))
    link = services.create_share_link(session=session, actor=owner, scope="path", entry_id="a2")
    holder = APIClient()
    holder.credentials(HTTP_X_SHARE_TOKEN=link.raw_token)
    # The whole tree, as the link sees it, is its path only.
    for kind in ("markdown", "html"):
        text = _body(_get(holder, session.pk, format=kind, scope="tree"))
        assert "first question" in text
        assert "second question" not in text and "second answer" not in text
    # A branch ending off the path is "not found"; on the path it is served.
    refused = _get(holder, session.pk, format="markdown", at="a3")
    assert refused.status_code == 404
    assert "first question" not in json.dumps(refused.json())
    assert "hello there" in _body(_get(holder, session.pk, format="markdown", at="a1"))
    assert "first question" in _body(_get(holder, session.pk, format="markdown"))


def test_each_document_export_is_logged_with_its_format_and_scope(owner_client: APIClient) -> None:
    owner = owner_client.user  # type: ignore[attr-defined]
    session = _import(owner, small_tree())
    link = services.create_share_link(session=session, actor=owner, scope="tree")
    holder = APIClient()
    holder.credentials(HTTP_X_SHARE_TOKEN=link.raw_token)
    _body(_get(owner_client, session.pk, format="markdown"))
    _body(_get(holder, session.pk, format="html", scope="tree"))
    _get(owner_client, session.pk, format="markdown", at="nope")  # refused: not logged
    rows = ActionLog.objects.filter(session=session, action="export").order_by("pk")
    details = [(row.actor_kind, row.detail.get("format"), row.detail.get("scope")) for row in rows]
    assert details == [("user", "markdown", "branch"), ("link", "html", "tree")]


def test_the_file_is_named_after_the_session_title(owner_client: APIClient) -> None:
    owner = owner_client.user  # type: ignore[attr-defined]
    session = _import(owner, small_tree())
    session.name = "Cold cache investigation"
    session.save(update_fields=["name"])
    for kind, scope, name in (
        ("html", "branch", "cold-cache-investigation.html"),
        ("markdown", "branch", "cold-cache-investigation.md"),
        ("html", "tree", "cold-cache-investigation.tree.html"),
    ):
        response = _get(owner_client, session.pk, format=kind, scope=scope)
        assert response["Content-Disposition"] == f'attachment; filename="{name}"'
    # Whatever the title holds, the name is one plain file name.
    session.name = '../../etc/passwd "x" <Ünïcode> \\ ::'
    session.save(update_fields=["name"])
    disposition = _get(owner_client, session.pk, format="html")["Content-Disposition"]
    assert "etc" in disposition and "/" not in disposition.split("filename", 1)[1].replace("''", "")
    assert ".." not in disposition and "\\" not in disposition and "<" not in disposition
    session.name = "///"
    session.save(update_fields=["name"])
    assert _get(owner_client, session.pk, format="html")["Content-Disposition"] == (
        f'attachment; filename="session-{session.pi_id}.html"'
    )


def test_authors_and_the_costs_piweb_charged_reach_both_formats(owner_client: APIClient) -> None:
    owner = owner_client.user  # type: ignore[attr-defined]
    # No recorded cost: the price set in the admin charges it, as the session page shows.
    LLMProvider.objects.create(
        name="priced",
        base_url="http://x/v1",
        model_id="m",
        provider="p",
        cost_input=2000.0,
        cost_output=10000.0,
    )
    session = _import(owner, [user_message("u1", None, "hi"), assistant_message("a1", "u1", "hello")])
    services.append_entries(session=session, actor=owner, entries=[user_message("u2", "a1", "more")])
    page = _body(_get(owner_client, session.pk, format="html"))
    text = _body(_get(owner_client, session.pk, format="markdown"))
    name = owner.get_username()
    # 10 input tokens at $2000/M and 5 output at $10000/M.
    assert f'<span class="by">imported by {name} · $0.070</span>' in page
    assert f"*imported by {name} · $0.070*" in text
    assert f'<span class="by">by {name}</span>' in page and f"*by {name}*" in text
    assert "<dt>Cost</dt><dd>$0.070</dd>" in page and "- Cost: $0.070" in text
