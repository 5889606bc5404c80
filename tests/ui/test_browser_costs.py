"""Cost in a real browser: the usage page draws its chart from the repository's own copy of uPlot, the
session page shows each message's, the branch's and the abandoned branches' cost, the list each session's."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from playwright.sync_api import expect

from sessions_app import services
from sessions_app.models import SessionShare
from teams import services as team_services
from tests.factories import assistant_message, session_file, user_message

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
expect.set_options(timeout=15000)


def _stamp(days_ago: int) -> str:
    when = datetime.now(UTC) - timedelta(days=days_ago)
    return when.strftime("%Y-%m-%dT%H:%M:%S.000Z")


def _answer(entry_id: str, parent: str, cost: float, model: str, days_ago: int) -> dict:
    usage = {"input": 100, "output": 10, "cacheRead": 0, "cacheWrite": 0, "cost": {"total": cost}}
    entry = assistant_message(entry_id, parent, f"answer {entry_id}", model=model, usage=usage)
    entry["timestamp"] = _stamp(days_ago)
    return entry


def _costly_session(owner: Any, pi_id: str = "costly") -> Any:
    """u1 → a1 → u2 → a2 (abandoned); a1 → u3 → a3, the leaf: $0.10 + $0.20 + $0.40 over two models."""
    entries = [
        user_message("u1", None, "hello", _stamp(3)),
        _answer("a1", "u1", 0.10, "alpha", 3),
        user_message("u2", "a1", "first", _stamp(3)),
        _answer("a2", "u2", 0.20, "alpha", 3),
        user_message("u3", "a1", "second", _stamp(1)),
        _answer("a3", "u3", 0.40, "beta", 1),
    ]
    header = {"type": "session", "version": 3, "id": pi_id, "timestamp": _stamp(3), "cwd": "/w"}
    return services.import_jsonl(actor=owner, data=session_file(entries, header)).session


def test_the_usage_page_charts_cost_per_day_and_model_from_local_files(
    account: Any, open_browser: Any, sign_in: Any, server_url: str, screenshot: Any
) -> None:
    owner = account("uma")
    session = _costly_session(owner)
    team = team_services.create_team(actor=owner, name="crew")
    _costly_session(owner, pi_id="private")  # not shared: never in the team's usage
    SessionShare.objects.create(session=session, team=team)
    _costly_session(account("other"))  # another user's: never in uma's usage

    context = open_browser()
    requested: list[str] = []
    context.on("request", lambda request: requested.append(request.url))
    page = sign_in(context, "uma")
    page.goto(f"{server_url}/usage/")

    chart = page.locator("#usage-chart")
    expect(chart.locator("canvas")).to_be_visible()
    expect(chart).to_have_attribute("data-models", "2")
    expect(chart).to_have_attribute("data-points", "3")  # three days, the middle one without use
    expect(chart.locator(".u-legend")).to_contain_text("p/alpha")
    expect(chart.locator(".u-legend")).to_contain_text("p/beta")
    expect(page.locator("#usage-totals")).to_contain_text("$1.40")
    expect(page.locator("#usage-totals")).to_contain_text("in 2 sessions")
    expect(page.locator('#usage-models tr[data-model="p/beta"] td.cost')).to_have_text("$0.800")
    screenshot(page, "usage-chart")

    page.select_option("#usage-scope", str(team.pk))
    expect(page.locator("#usage-totals")).to_contain_text("$0.700")
    expect(page.locator("#usage-totals")).to_contain_text("in 1 session")

    page.goto(f"{server_url}/teams/")
    expect(page.locator(f'[data-team="{team.pk}"] .team-usage')).to_contain_text("1 shared sessions: $0.700")

    # Every file came from the server itself: the chart library is served from the repository.
    assert requested and all(url.startswith(server_url) for url in requested), requested
    assert any(url.endswith(".js") and "uplot" in url.lower() for url in requested)


def test_the_session_page_and_list_show_cost(
    account: Any, open_browser: Any, sign_in: Any, server_url: str, screenshot: Any
) -> None:
    owner = account("cy")
    session = _costly_session(owner)
    page = sign_in(open_browser(), "cy")

    page.goto(f"{server_url}/")
    expect(page.locator(f'[data-cost-session="{session.pk}"]')).to_have_text("$0.700")

    page.goto(f"{server_url}/sessions/{session.pk}/")
    page.wait_for_selector("body[data-ready=true]")
    line = page.locator("#branch-cost")
    expect(line).to_have_text("Cost: this branch $0.500 · session $0.700 · abandoned branches $0.200")
    expect(page.locator('#branch article[data-id="a3"] .cost')).to_have_text("$0.400")
    expect(page.locator('#branch article[data-id="a1"] .cost')).to_have_text("$0.100")
    screenshot(page, "session-costs")

    page.locator('.tree-row[data-id="a2"]').click()
    expect(line).to_contain_text("this branch $0.300")
    expect(page.locator('#branch article[data-id="a2"] .cost')).to_have_text("$0.200")

    # A path link's holder sees the cost of that path alone.
    link = services.create_share_link(session=session, actor=owner, scope="path", entry_id="a2")
    anonymous = open_browser().new_page()
    anonymous.goto(f"{server_url}/s/{link.raw_token}/")
    anonymous.wait_for_selector("body[data-ready=true]")
    expect(anonymous.locator("#branch-cost")).to_have_text("Cost: this branch $0.300")
    expect(anonymous.locator('#branch article[data-id="a2"] .cost')).to_have_text("$0.200")
