"""Every page arrives with a strict Content-Security-Policy header and still works under it in Chromium.

The policy refuses inline scripts, inline style attributes and fetches to other origins, so anything a
page did that way would break it; the browser reports each refusal as a ``securitypolicyviolation``
event and a console error, and both are collected on every page the people here open.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from playwright.sync_api import expect

from sessions_app import services
from teams.models import Team, TeamMembership

from .helpers_rich import rich_session
from .test_browser_pages import open_session, store

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
expect.set_options(timeout=15000)

# Runs before any page script: records what the policy refused, as the browser reports it.
WATCH = """
window.__refused = [];
document.addEventListener("securitypolicyviolation", (e) => {
  window.__refused.push(`${e.effectiveDirective} ${e.blockedURI} ${e.sourceFile}:${e.lineNumber}`);
});
"""


class Watched:
    """A browser whose pages' policy headers, refusals and console errors are all recorded."""

    def __init__(self, context: Any) -> None:
        self.context = context
        self.policies: dict[str, str | None] = {}
        self.console: list[str] = []
        context.add_init_script(WATCH)
        context.on("response", self._response)
        context.on("console", self._console)

    def _response(self, response: Any) -> None:
        if response.request.resource_type == "document":
            self.policies[response.url] = response.headers.get("content-security-policy")

    def _console(self, message: Any) -> None:
        if message.type == "error" and "Content Security Policy" in message.text:
            self.console.append(message.text)

    def refused(self, page: Any) -> list[str]:
        return list(page.evaluate("window.__refused || []"))


def test_the_main_pages_carry_a_strict_policy_and_work_under_it(
    account: Any, open_browser: Any, sign_in: Any, server_url: str
) -> None:
    owner, mate = account("cspowner", is_staff=True), account("cspmate")
    team = Team.objects.create(name="crew")
    TeamMembership.objects.create(team=team, user=owner, role="owner")
    TeamMembership.objects.create(team=team, user=mate, role="editor")
    session = store(owner, rich_session(), name="Guarded")
    services.share_with_team(session=session, team=team, access="editor", actor=owner)
    link = services.create_share_link(session=session, actor=owner)
    refused: dict[str, list[str]] = {}

    # Signed out: the sign-in page, and a session opened through its share link.
    visitor = Watched(open_browser())
    page = visitor.context.new_page()
    page.goto(f"{server_url}/accounts/login/")
    expect(page.locator("input[name=username]")).to_be_visible()
    refused["sign-in"] = visitor.refused(page)
    open_session(page, f"{server_url}/s/{link.raw_token}/")
    expect(page.locator(".tree-row").first).to_be_visible()
    refused["shared link"] = visitor.refused(page)

    # Signed in through the form (its post is a form-action the policy must allow).
    watched = Watched(open_browser())
    page = sign_in(watched.context, "cspowner")
    expect(page.locator("table.sessions")).to_contain_text("Guarded")
    refused["session list"] = watched.refused(page)

    # The session page: its tree, its branch and its live socket (connect-src) all work.
    other = sign_in(open_browser(), "cspmate")
    open_session(other, f"{server_url}/sessions/{session.pk}/")
    open_session(page, f"{server_url}/sessions/{session.pk}/")
    expect(page.locator(".tree-row").first).to_be_visible()
    expect(page.locator("#live-status")).to_have_attribute("data-state", "live")
    # Presence avatars take their colour from a style the page sets: through the CSSOM, not an attribute.
    expect(page.locator('#presence [data-person="cspmate"]')).to_be_visible()
    refused["session"] = watched.refused(page)

    for name, path, ready in [
        ("teams", "/teams/", "body[data-ready=true]"),
        ("team", f"/teams/{team.pk}/", "body[data-ready=true]"),
        ("tokens", "/tokens/", "body[data-ready=true]"),
        ("links", "/links/", "body[data-ready=true]"),
        ("import", "/import/", "body[data-ready=true]"),
        ("usage", "/usage/", "main"),
        ("inbox", "/inbox/", "main"),
        ("reviews", "/reviews/", "main"),
        ("activity", "/activity/", "main"),
        # Swagger UI's start script is a file of its own; its <style> elements are allowed there alone.
        ("api docs", "/api/docs/", ".swagger-ui .info .title"),
        ("admin", "/admin/", "#audit-links"),
    ]:
        page.goto(f"{server_url}{path}")
        page.wait_for_selector(ready)
        page.wait_for_load_state("networkidle")
        refused[name] = watched.refused(page)
    # The admin's audit links keep the layout their former style attributes gave them.
    expect(page.locator("#audit-links th").first).to_have_css("white-space", "nowrap")

    found = {name: items for name, items in refused.items() if items}
    assert found == {}, json.dumps(found, indent=1)
    assert watched.console == [] and visitor.console == [], watched.console + visitor.console
    policies = {**visitor.policies, **watched.policies}
    assert len(policies) >= 12
    for url, policy in policies.items():
        assert policy is not None, f"{url} has no Content-Security-Policy header"
        directives = dict(d.strip().split(" ", 1) for d in policy.split(";"))
        assert directives["script-src"] == "'self'", url
        assert directives["style-src"] == ("'self' 'unsafe-inline'" if "/api/docs/" in url else "'self'"), url
        assert directives["object-src"] == "'none'" and directives["frame-ancestors"] == "'none'", url
