"""The team activity page in a real browser: reached from the team page, its charts drawn by the
repository's own uPlot, the per-person table, the CSV download and the member's digest choice."""

from __future__ import annotations

import csv
import io
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from activity.models import DigestChoice
from sessions_app import services
from teams.models import Team, TeamMembership
from tests.activity.conftest import import_session, worked

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
expect.set_options(timeout=15000)


def _today(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The entries as written today, so the page's default range (the last 12 weeks) holds them."""
    stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    return [{**e, "timestamp": stamp} for e in entries]


def test_the_activity_page_charts_the_weeks_lists_people_and_downloads_them(
    account: Any,
    open_browser: Any,
    sign_in: Any,
    server_url: str,
    screenshot: Any,
    tmp_path: Path,
    axe: Any,
) -> None:
    olga, eddie, vera = account("olga"), account("eddie"), account("vera")
    team = Team.objects.create(name="crew")
    for person, role in ((olga, "owner"), (eddie, "editor"), (vera, "viewer")):
        TeamMembership.objects.create(team=team, user=person, role=role)
    shared = import_session(olga, _today(worked(0.25, "src/shared.py")), "shared")
    eddies = import_session(eddie, _today(worked(0.5, "src/eddie.py")), "eddies")
    import_session(olga, _today(worked(4.0, "src/secret_plan.py")), "private")  # never shown
    services.share_with_team(session=shared, team=team, access="editor", actor=olga)
    services.share_with_team(session=eddies, team=team, access="viewer", actor=eddie)

    context = open_browser()
    requested: list[str] = []
    context.on("request", lambda request: requested.append(request.url))
    page = sign_in(context, "vera")
    page.goto(f"{server_url}/teams/{team.pk}/")
    page.click("#team-activity")
    page.wait_for_url(f"{server_url}/teams/{team.pk}/activity/")

    work = page.locator("#activity-work-chart")
    expect(work.locator("canvas")).to_be_visible()
    expect(work).to_have_attribute("data-series", "4")
    expect(work).to_have_attribute("data-points", "12")
    for name in ("Sessions", "Runs", "Failed runs", "Reviews"):
        expect(work.locator(".u-legend")).to_contain_text(name)
    expect(page.locator("#activity-cost-chart canvas")).to_be_visible()
    tools = page.locator("#activity-tools-chart")
    expect(tools).to_have_attribute("data-series", "3")
    for tool in ("write", "read", "bash"):
        expect(tools.locator(".u-legend")).to_contain_text(tool)
    expect(page.locator("#activity-totals")).to_contain_text("2 sessions")
    expect(page.locator("#activity-totals")).to_contain_text("$0.75")
    rows = page.locator("#activity-people tbody tr")
    expect(rows).to_have_count(2)
    expect(page.locator('#activity-people tr[data-person="eddie"] td.cost')).to_have_text("$0.50")
    expect(page.locator('#activity-people tr[data-person="olga"] td.cost')).to_have_text("$0.25")
    expect(page.locator("main")).not_to_contain_text("4.00")
    screenshot(page, "team-activity")
    assert axe(page) == []
    assert all(not url.startswith("http") or url.startswith(server_url) for url in requested)
    assert any(url.endswith("/static/vendor/uplot/uPlot.esm.js") or "uPlot.esm" in url for url in requested)

    with page.expect_download() as download_info:
        page.click("#activity-csv")
    saved = tmp_path / "activity.csv"
    download_info.value.save_as(saved)
    lines = list(csv.DictReader(io.StringIO(saved.read_text(encoding="utf-8"))))
    assert sorted((r["person"], r["cost"]) for r in lines) == [("eddie", "0.500000"), ("olga", "0.250000")]

    page.uncheck("#activity-digest")
    expect(page.locator("#activity-digest-state")).to_have_text("You no longer get it.")
    assert DigestChoice.objects.get(user=vera, team=team).wanted is False
    page.reload()
    expect(page.locator("#activity-digest")).not_to_be_checked()
