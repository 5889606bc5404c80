"""What a user sees and does on every page, in Chromium: buttons and dialogs, rendered messages, the
context explained, the composer, housekeeping, compare, themes, the phone layout and an axe check."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from playwright.sync_api import expect

from discussion.services import post_comment
from providers.models import LLMProvider
from sessions_app import services
from sessions_app.link_tokens import PREFIX_CHARS
from sessions_app.models import ChatSession, ShareLink
from teams import services as team_services
from tests.factories import HEADER, assistant_message, session_file, small_tree, user_message

from .helpers_rich import TS, rich_session

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
expect.set_options(timeout=15000)


def store(owner: Any, entries: list[dict[str, Any]], name: str = "") -> ChatSession:
    session = services.import_jsonl(actor=owner, data=session_file(entries), filename="s.jsonl").session
    if name:
        session = services.rename_session(session=session, actor=session.owner, name=name)
    return session


def open_session(page: Any, url: str) -> None:
    page.goto(url)
    page.wait_for_selector("body[data-ready=true]")


def row(page: Any, entry_id: str) -> Any:
    return page.locator(f'.tree-row[data-id="{entry_id}"]')


def test_primary_buttons_keep_their_text_on_hover(
    open_browser: Any, server_url: str, screenshot: Any
) -> None:
    page = open_browser().new_page()
    page.goto(f"{server_url}/accounts/login/")
    button = page.locator("button.primary")
    button.hover()
    page.wait_for_timeout(100)
    colour, background = button.evaluate(
        "el => [getComputedStyle(el).color, getComputedStyle(el).backgroundColor]"
    )
    assert colour == "rgb(255, 255, 255)"
    assert background not in ("rgb(250, 251, 252)", "rgb(255, 255, 255)", "rgba(0, 0, 0, 0)"), background
    screenshot(page, "login-primary-hover")


def test_enter_in_a_dialog_confirms_and_escape_cancels(
    account: Any, open_browser: Any, sign_in: Any, server_url: str, screenshot: Any
) -> None:
    session = store(account("dia"), small_tree(rich=True))
    page = sign_in(open_browser(), "dia")
    open_session(page, f"{server_url}/sessions/{session.pk}/")
    row(page, "u1").click()
    page.click("#node-actions button[data-action=label]")
    page.fill("#label-dialog input[name=label]", "kept with enter")
    screenshot(page, "dialog-label")
    page.keyboard.press("Enter")
    row(page, "u1").locator(".badge.label:text('kept with enter')").wait_for()
    page.click("#node-actions button[data-action=label]")
    page.fill("#label-dialog input[name=label]", "dropped with escape")
    page.keyboard.press("Escape")
    expect(page.locator("#label-dialog")).not_to_be_visible()
    page.wait_for_timeout(500)
    assert row(page, "u1").locator(".badge.label").inner_text() == "kept with enter"


def test_messages_render_markdown_code_tools_thinking_and_images(
    account: Any, open_browser: Any, sign_in: Any, server_url: str, screenshot: Any
) -> None:
    session = store(account("md"), rich_session())
    page = sign_in(open_browser(), "md")
    open_session(page, f"{server_url}/sessions/{session.pk}/#entry=t3")
    card = page.locator('#branch .branch-item[data-id="a1"]')
    # GFM table, nested bullets, autolinks without brackets.
    expect(card.locator("table th")).to_have_count(2)
    assert card.locator("ul ul li").count() == 2
    assert card.locator("ol").count() == 0
    link = card.locator('a[href="https://example.org/docs"]')
    expect(link).to_have_text("https://example.org/docs")
    assert "<https" not in card.inner_text()
    # Highlighted code with a copy button that says it copied.
    expect(card.locator(".codeblock pre.hl span.k").first).to_have_text("def")
    card.locator(".codeblock .copy").first.click()
    expect(card.locator(".codeblock .copy").first).to_have_text(re.compile("Cop"))
    # Thinking collapsed; the edit shown as a diff with its path.
    assert card.locator("details.thinking").get_attribute("open") is None
    expect(card.locator(".tool-edit .path")).to_have_text("app/views.py")
    expect(card.locator(".tool-edit .diff .del")).to_contain_text("order_by('a')")
    expect(card.locator(".tool-edit .diff .ins")).to_contain_text("order_by('a', 'id')")
    # read: the result is the file excerpt under its path; bash: the command, then its output.
    read = page.locator('#branch .branch-item[data-id="t2"]')
    expect(read.locator("summary")).to_contain_text("read app/views.py")
    read.locator("summary").click()
    expect(read.locator("pre.hl")).to_contain_text("return qs.order_by")
    bash = page.locator('#branch .branch-item[data-id="a3"] .tool-bash')
    expect(bash.locator("summary")).to_contain_text("$ pytest -q tests/")
    screenshot(page, "messages-rendered")
    # The image is shown.
    row(page, "u2").click()
    expect(page.locator('#branch .branch-item[data-id="u2"] img.inline-image')).to_be_visible()


def test_the_context_is_explained(
    account: Any, open_browser: Any, sign_in: Any, server_url: str, screenshot: Any
) -> None:
    LLMProvider.objects.create(
        name="Sonnet", api="anthropic-messages", base_url="http://127.0.0.1:9", model_id="m", provider="p",
        context_window=100_000,
    )  # fmt: skip
    session = store(account("ctx"), rich_session())
    page = sign_in(open_browser(), "ctx")
    open_session(page, f"{server_url}/sessions/{session.pk}/")
    expect(page.locator("#context .context-item").first).to_be_visible()
    expect(page.locator("#context-pct")).to_have_text(re.compile(r"^\d+(\.\d)?%$"))
    # No system message on this path: everything the request holds is messages.
    expect(page.locator("#context-breakdown .sys")).to_have_attribute("data-tokens", "0")
    expect(page.locator("#context-breakdown .tools")).to_have_attribute("data-tokens", "0")
    expect(page.locator("#context-breakdown .msgs")).to_contain_text("messages")
    model = page.locator("#context-model").inner_text()
    assert "undefined" not in model
    # The path's last assistant used p/m, which is configured: its window is the one shown.
    assert "p/m" in model and "Sonnet" in model
    expect(page.locator("#context-window-text")).to_have_text("100,000")
    summary = page.locator("#context .msg-compaction")
    # u1, a1, t1, a2, t2 came before the first kept entry a3.
    expect(summary.locator(".replaced")).to_have_text("replaced 5 messages, 64k tokens")
    expect(summary.locator(".badge.offline")).to_be_visible()
    screenshot(page, "context-explained")


def test_the_context_total_is_the_system_prompt_tools_and_messages(
    account: Any, open_browser: Any, sign_in: Any, server_url: str, screenshot: Any
) -> None:
    tool = {
        "name": "read",
        "description": "Read a file from the working directory and return its text",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    }
    system = {
        "role": "system",
        "content": "",
        "sections": {"preamble": "You are a careful coding assistant. " * 20, "cwd": "<cwd>/repo</cwd>"},
        "toolsAdded": [tool],
        "timestamp": 1,
    }
    usage = {"input": 1400, "output": 100, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 1500}
    session = store(
        account("parts"),
        [
            {"type": "message", "id": "s1", "parentId": None, "timestamp": TS, "message": system},
            user_message("u1", "s1", "Read app.py please"),
            assistant_message("a1", "u1", "It defines one view.", usage=usage),
            user_message("u2", "a1", "And the tests?"),
        ],
    )
    page = sign_in(open_browser(), "parts")
    open_session(page, f"{server_url}/sessions/{session.pk}/")
    expect(page.locator("#context .context-item").first).to_be_visible()
    # A system message made only of sections and tools says what it holds, in both panels.
    for panel in ("#context", "#branch"):
        card = page.locator(f"{panel} .msg-system").first
        for words in ("Section preamble", "Section cwd", "Tools added: read"):
            expect(card).to_contain_text(words)
    parts = page.locator("#context-breakdown")
    expect(parts.locator(".sys")).to_contain_text("system prompt")
    expect(parts.locator(".tools")).to_contain_text("tools")
    expect(parts.locator(".msgs")).to_contain_text("messages")
    shown = {
        k: int(parts.locator(f".{k}").get_attribute("data-tokens") or "") for k in ("sys", "tools", "msgs")
    }
    assert all(v > 0 for v in shown.values()), shown
    # The prompt is longer than the tool definitions here, and each part says its number.
    assert shown["sys"] > shown["tools"]
    for key, value in shown.items():
        expect(parts.locator(f".{key}")).to_contain_text(f"{value:,}")
    # The three parts add up to the gauge's total: the provider's 1500 plus the newer question.
    total = int(
        page.locator("#context-tokens").inner_text().replace("≈", "").replace("tokens", "").replace(",", "")
    )
    assert total == sum(shown.values()) == 1500 + 4
    # No model is configured: the server's default window, and the gauge's share of it.
    expect(page.locator("#context-window-text")).to_have_text("200,000")
    expect(page.locator("#context-pct")).to_have_text(f"{total / 200_000 * 100:.1f}%")
    fills = ["gauge-sys", "gauge-tools", "context-gauge-fill"]
    widths = page.evaluate("ids => ids.map(id => document.getElementById(id).style.width)", fills)
    assert all(w != "0%" and w for w in widths), widths
    screenshot(page, "context-parts")


def test_the_composer_explains_why_it_cannot_send_then_sends_on_enter(
    account: Any, open_browser: Any, sign_in: Any, server_url: str, screenshot: Any
) -> None:
    session = store(account("comp"), small_tree(rich=True))
    page = sign_in(open_browser(), "comp")
    open_session(page, f"{server_url}/sessions/{session.pk}/")
    expect(page.locator("#composer-off")).to_contain_text("No model is configured")
    expect(page.locator("#composer-send")).to_be_disabled()
    expect(page.locator("#composer-text")).to_be_disabled()
    screenshot(page, "composer-no-model")

    provider = LLMProvider.objects.create(
        name="Local", base_url="http://127.0.0.1:9/v1", model_id="m", provider="p", reasoning=True
    )
    sent: list[dict[str, Any]] = []

    def fake_run(route: Any) -> None:
        if route.request.method != "POST":  # the page asks whether a run is active
            route.continue_()
            return
        sent.append(json.loads(route.request.post_data))
        route.fulfill(
            status=202,
            content_type="application/json",
            body='{"runId": "00000000-0000-0000-0000-000000000000"}',
        )

    page.route("**/api/sessions/*/runs/", fake_run)
    open_session(page, f"{server_url}/sessions/{session.pk}/")
    expect(page.locator("#composer-off")).to_be_hidden()
    expect(page.locator("#composer-model option")).to_have_count(1)
    page.select_option("#composer-thinking", "high")
    page.click("#composer-text")
    page.keyboard.type("first line")
    page.keyboard.press("Shift+Enter")
    page.keyboard.type("second line")
    assert page.input_value("#composer-text") == "first line\nsecond line"
    screenshot(page, "composer-ready")
    page.keyboard.press("Enter")
    expect(page.locator("#composer-text")).to_have_value("")
    assert sent == [{"prompt": "first line\nsecond line", "providerId": provider.pk, "thinkingLevel": "high"}]


def test_new_rename_fork_clone_and_delete(
    account: Any, open_browser: Any, sign_in: Any, server_url: str, screenshot: Any
) -> None:
    owner = account("house")
    session = store(owner, small_tree(rich=True), name="Invoices")
    page = sign_in(open_browser(), "house")
    # New session from the list.
    page.wait_for_selector("body[data-ready=true]")  # the page's module has attached its handlers
    page.click("#new-session-button")
    page.fill("#new-session-dialog input[name=name]", "Scratch")
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r"/sessions/\d+/"))
    expect(page.locator("#session-title")).to_have_text("Scratch")
    # Rename.
    open_session(page, f"{server_url}/sessions/{session.pk}/")
    page.click("#rename-button")
    page.fill("#rename-dialog input[name=name]", "Invoices v2")
    page.keyboard.press("Enter")
    expect(page.locator("#session-title")).to_have_text("Invoices v2")
    # Clone asks first; cancelling creates nothing.
    before = ChatSession.objects.count()
    row(page, "a2").click()
    page.click("#node-actions button[data-action=clone]")
    expect(page.locator("#clone-dialog input[name=name]")).to_have_value("Invoices v2 (copy)")
    screenshot(page, "clone-confirm")
    page.click("#clone-dialog [data-cancel]")
    page.wait_for_timeout(300)
    assert ChatSession.objects.count() == before
    # Fork gets its own name and links back to its source.
    page.click("#node-actions button[data-action=fork]")
    expect(page.locator("#fork-dialog input[name=name]")).to_have_value("Invoices v2 (fork)")
    page.click("#fork-dialog button[value=ok]")
    page.wait_for_url(re.compile(rf"/sessions/(?!{session.pk}/)\d+/"))
    page.wait_for_selector("body[data-ready=true]")
    expect(page.locator("#session-title")).to_have_text("Invoices v2 (fork)")
    expect(page.locator("#provenance")).to_contain_text("Invoices v2")
    screenshot(page, "fork-provenance")
    page.click("#provenance")
    page.wait_for_url(f"**/sessions/{session.pk}/**")
    page.wait_for_selector("body[data-ready=true]")
    # Delete asks first.
    page.click("#delete-button")
    expect(page.locator("#confirm-action-dialog")).to_be_visible()
    screenshot(page, "delete-confirm")
    page.click("#confirm-action-ok")
    page.wait_for_url(f"{server_url}/")
    assert not ChatSession.objects.filter(pk=session.pk).exists()


def test_share_dialog_copy_feedback_and_my_links_page(
    account: Any, open_browser: Any, sign_in: Any, server_url: str, screenshot: Any
) -> None:
    session = store(account("sha"), small_tree(rich=True), name="Shared one")
    page = sign_in(open_browser(), "sha")
    open_session(page, f"{server_url}/sessions/{session.pk}/")
    page.click("#sharing-button")
    page.check("#link-form input[name=frozen]")
    page.click("#link-submit")
    # The new address is shown once, with a copy button, and it opens the session.
    fresh = page.locator("#new-link")
    expect(fresh).to_contain_text("shown only once")
    url = fresh.locator("input").input_value()
    assert re.fullmatch(rf"{re.escape(server_url)}/s/[A-Za-z0-9_-]{{32}}/", url)
    fresh.locator(".copy-link").click()
    expect(fresh.locator(".copied")).to_have_text(re.compile("Copied|Ctrl\\+C"))
    item = page.locator("#share-links .share-link")
    expect(item).to_have_count(1)
    expect(item).to_contain_text("frozen")
    token = url.rstrip("/").rsplit("/", 1)[1]
    expect(item).to_contain_text(f"{token[:PREFIX_CHARS]}…")
    assert token not in page.inner_text("#share-links")
    screenshot(page, "share-dialog")
    page.keyboard.press("Escape")
    # Opened again, the dialog lists the link by its prefix only: the address is gone for good.
    page.click("#sharing-button")
    expect(item).to_have_count(1)
    expect(fresh).to_be_hidden()
    assert token not in page.content()
    page.keyboard.press("Escape")
    reader = open_browser().new_page()
    reader.goto(url)
    reader.wait_for_selector("body[data-ready=true]")
    expect(reader.locator("#read-only-tag")).to_contain_text("frozen")

    page.click("text=My links")
    table = page.locator("#links-table")
    expect(table).to_contain_text("Shared one")
    expect(table).to_contain_text("frozen")
    expect(table).to_contain_text(f"{token[:PREFIX_CHARS]}…")
    assert token not in page.content()
    page.wait_for_selector("body[data-ready=true]")  # the page's module has attached its handlers
    page.click(".revoke-link")
    expect(page.locator("#confirm-action-dialog")).to_be_visible()
    page.click("#confirm-action-ok")
    expect(table.locator("tr[data-state=revoked]")).to_have_count(1)
    assert ShareLink.objects.get().revoked_at is not None
    screenshot(page, "my-links")


def test_teams_are_managed_in_the_app(
    account: Any, open_browser: Any, sign_in: Any, server_url: str, screenshot: Any
) -> None:
    account("lead")
    account("mate")
    page = sign_in(open_browser(), "lead")
    page.click("text=Teams")
    page.wait_for_selector("body[data-ready=true]")  # the page's module has attached its handlers
    expect(page.locator("#roles-title")).to_be_visible()
    assert "caps what a share allows" in page.inner_text("main")
    page.click("#new-team-button")
    page.fill("#team-dialog input[name=name]", "Platform")
    page.keyboard.press("Enter")
    team = page.locator(".team", has_text="Platform")
    expect(team).to_contain_text("you: owner")
    team.locator(".invite-button").click()
    page.fill("#invite-dialog input[name=username]", "mate")
    page.select_option("#invite-dialog select[name=role]", "editor")
    page.keyboard.press("Enter")
    expect(page.locator("#teams-note")).to_contain_text("mate")
    screenshot(page, "teams")


def test_compare_two_nodes(
    account: Any, open_browser: Any, sign_in: Any, server_url: str, screenshot: Any
) -> None:
    session = store(account("cmp"), rich_session())
    page = sign_in(open_browser(), "cmp")
    open_session(page, f"{server_url}/sessions/{session.pk}/")
    row(page, "a9").click()
    page.click("#node-actions button[data-action=compare]")
    expect(page.locator("#node-actions button[data-action=compare]")).to_have_text("Compare with marked…")
    row(page, "a2").click()
    page.click("#node-actions button[data-action=compare]")
    page.wait_for_url("**/compare/**")
    page.wait_for_selector("body[data-ready=true]")
    assert page.locator("#compare-b .cmp.added").count() >= 2
    assert page.locator("#compare-a .cmp.removed").count() >= 2
    assert page.locator("#compare-a .cmp.same").count() >= 1
    expect(page.locator("#cmp-tokens")).to_have_text(re.compile(r"B − A: [+−][\d,]+ tokens"))
    screenshot(page, "compare")


def test_dark_theme_follows_the_system_and_the_toggle(
    account: Any, open_browser: Any, sign_in: Any, server_url: str, screenshot: Any
) -> None:
    session = store(account("dark"), rich_session())
    page = sign_in(open_browser(color_scheme="dark"), "dark")
    open_session(page, f"{server_url}/sessions/{session.pk}/")
    background = page.evaluate("getComputedStyle(document.body).backgroundColor")
    assert background == "rgb(15, 18, 24)"
    screenshot(page, "session-dark")
    page.click("#theme-toggle")
    assert page.evaluate("getComputedStyle(document.body).backgroundColor") == "rgb(246, 247, 249)"
    page.reload()
    page.wait_for_selector("body[data-ready=true]")
    assert page.evaluate("document.documentElement.dataset.theme") == "light"
    icon = page.get_attribute("link[rel=icon]", "href")
    assert page.request.get(f"{server_url}{icon}").status == 200


def test_phone_layout_switches_panels_without_overflow(
    account: Any, open_browser: Any, sign_in: Any, server_url: str, screenshot: Any
) -> None:
    owner = account("phone")
    session = store(
        owner, rich_session(), name="A long session name that would not fit on a phone screen at all"
    )
    page = sign_in(open_browser(width=390, height=844, is_mobile=True, has_touch=True), "phone")
    overflow = "document.scrollingElement.scrollWidth - document.documentElement.clientWidth"
    assert page.evaluate(overflow) <= 0
    screenshot(page, "phone-list")
    open_session(page, f"{server_url}/sessions/{session.pk}/")
    assert page.evaluate(overflow) <= 0
    expect(page.locator(".branch-panel")).to_be_visible()
    expect(page.locator(".tree-panel")).to_be_hidden()
    page.click(".panel-tabs button[data-panel=tree]")
    expect(page.locator(".tree-panel")).to_be_visible()
    screenshot(page, "phone-tree")
    row(page, "u1").tap()
    # Choosing a row shows its branch at once (the panel in view changes, not one below the fold).
    expect(page.locator(".branch-panel")).to_be_visible()
    expect(page.locator('#branch .branch-item.selected[data-id="u1"]')).to_be_in_viewport()
    assert page.evaluate(overflow) <= 0
    screenshot(page, "phone-branch")
    page.click(".panel-tabs button[data-panel=context]")
    expect(page.locator("#context .context-item").first).to_be_visible()
    assert page.evaluate(overflow) <= 0


def test_every_page_passes_axe(
    account: Any, open_browser: Any, sign_in: Any, server_url: str, axe: Any, screenshot: Any
) -> None:
    owner = account("axe", is_staff=True)
    session = store(owner, rich_session(), name="Accessible")
    link = services.create_share_link(session=session, actor=owner)
    team = team_services.create_team(actor=owner, name="Axe team")
    # A straight run long enough to fold into one row of the tree.
    chain: list[dict[str, Any]] = []
    for i in range(130):
        make = user_message if i % 2 == 0 else assistant_message
        chain.append(make(f"c{i}", f"c{i - 1}" if i else None, f"line {i}"))
    long_file = session_file(chain, {**HEADER, "id": "long"})
    long_session = services.import_jsonl(actor=owner, data=long_file, filename="long.jsonl").session
    # A thread on the leaf, so the comments under the branch are checked too.
    leaf = session.leaf_entry_id
    root = post_comment(actor=owner, session=session, entry_id=leaf, body="Is **this** right? @axe")
    post_comment(actor=owner, session=session, entry_id=leaf, body="Yes.", parent_id=root.pk)
    problems: dict[str, Any] = {}
    anonymous = open_browser().new_page()
    anonymous.goto(f"{server_url}/accounts/login/")
    problems["login"] = axe(anonymous)
    anonymous.goto(f"{server_url}/s/{link.raw_token}/")
    anonymous.wait_for_selector("body[data-ready=true]")
    problems["shared-link"] = axe(anonymous)
    for scheme in ("light", "dark"):
        page = sign_in(open_browser(color_scheme=scheme), "axe")
        problems[f"list-{scheme}"] = axe(page)
        open_session(page, f"{server_url}/sessions/{session.pk}/")
        expect(page.locator("#context .context-item").first).to_be_visible()
        page.evaluate("document.querySelectorAll('#branch details').forEach(d => d.open = true)")
        page.click("#comments-toggle")  # the leaf's thread, folded until opened
        expect(page.locator("#comment-threads .thread")).to_be_visible()
        problems[f"session-{scheme}"] = axe(page)
        row(page, "u1").click()
        page.click("#node-actions button[data-action=fork]")
        problems[f"fork-dialog-{scheme}"] = axe(page)
        page.keyboard.press("Escape")
        page.click("#sharing-button")
        expect(page.locator("#sharing-panel")).to_be_visible()
        problems[f"share-dialog-{scheme}"] = axe(page)
        page.keyboard.press("Escape")
        for name, path in (
            ("tokens", "/tokens/"),
            ("team", f"/teams/{team.pk}/"),
            ("long-session", f"/sessions/{long_session.pk}/"),
            ("import", "/import/"),
            ("links", "/links/"),
            ("teams", "/teams/"),
            ("usage", "/usage/"),
            ("inbox", "/inbox/"),
            ("reviews", f"/teams/{team.pk}/reviews/"),
            ("activity", "/activity/"),
            ("compare", f"/sessions/{session.pk}/compare/?a=u1&b=a4"),
            ("not-found", "/sessions/999999/"),
        ):
            page.goto(f"{server_url}{path}")
            page.wait_for_load_state("networkidle")
            problems[f"{name}-{scheme}"] = axe(page)
        screenshot(page, f"compare-{scheme}")
    found = {k: v for k, v in problems.items() if v}
    assert found == {}, json.dumps(found, indent=1)


def test_my_activity_page_lists_a_teammates_rename_filters_and_pages_back(
    account: Any, open_browser: Any, sign_in: Any, server_url: str, screenshot: Any
) -> None:
    from teams.models import Team, TeamMembership

    owner, mate = account("olive"), account("mateo")
    session = store(owner, small_tree(), name="Shared work")
    team = Team.objects.create(name="pair")
    TeamMembership.objects.create(team=team, user=owner, role=TeamMembership.Role.OWNER)
    TeamMembership.objects.create(team=team, user=mate, role=TeamMembership.Role.EDITOR)
    services.share_with_team(session=session, team=team, access="editor", actor=owner)
    for n in range(60):  # more than one page of 50
        services.rename_session(session=session, actor=mate, name=f"mateo's name {n}")
    page = sign_in(open_browser(), "olive")
    page.click("nav[aria-label=Main] >> text=Activity")
    expect(page.locator("h1")).to_have_text("My activity")
    rows = page.locator("#activity-table tbody tr")
    expect(rows).to_have_count(50)
    expect(rows.first.locator(".who")).to_have_text("mateo")
    expect(rows.first.locator(".what")).to_have_text("renamed")
    expect(rows.first.locator(".where a")).to_have_attribute("href", f"/sessions/{session.pk}/")
    screenshot(page, "activity")
    # The rest, and my own writes, are one page back.
    page.click("#activity-older")
    expect(page.locator("#activity-table tbody tr[data-action=import] .who")).to_have_text("you")
    # Only my shares.
    page.select_option("#activity-action", "share")
    page.click("#activity-filters button[type=submit]")
    expect(rows).to_have_count(1)
    expect(rows.first.locator(".who")).to_have_text("you")
    # A session the teammate cannot read is refused with a reason, for them as for anyone.
    private = session_file(small_tree(), header={**HEADER, "id": "sess-private"})
    mine_only = services.import_jsonl(actor=owner, data=private, filename="p.jsonl").session
    other = sign_in(open_browser(), "mateo")
    other.goto(f"{server_url}/activity/?session={mine_only.pk}")
    expect(other.locator("#activity-error")).to_contain_text(f"No session {mine_only.pk} that you can read")
    expect(other.locator("#activity-table")).to_have_count(0)
