"""A staff user reviews a real overflow recovery and its compaction in the admin audit pages."""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import expect

from agent import services as agent_services
from agent.models import AgentRun
from compaction_app.models import CompactionRun
from providers.llm import testserver as script
from tests.agent.conftest import _agent_settings, make_provider, server  # noqa: F401
from tests.factories import seeded_session

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
expect.set_options(timeout=15000)


@pytest.fixture
def recovered(request: Any, account: Any, settings: Any) -> AgentRun:
    """Run a prompt that overflows, is compacted and retried; before the browser starts its event loop."""
    settings.PIWEB_COMPACTION = {"keepRecentTokens": 100}
    provider_server = request.getfixturevalue("server")
    provider = request.getfixturevalue("make_provider")()
    owner = account("ada")
    session = seeded_session(owner)
    provider_server.enqueue(script.overflow(), script.reply("Recovered: here is the plan."))
    run = agent_services.start_run(session=session, user=owner, prompt="Carry on.", provider=provider)
    run.refresh_from_db()
    assert run.status == "succeeded", run.error
    return run


def test_staff_see_the_overflow_recovery_and_its_compaction(
    recovered, account, open_browser, sign_in, server_url, screenshot
) -> None:
    account("root", is_staff=True, is_superuser=True)
    session = recovered.session
    failed_id = recovered.recovery_events[0]["entryId"]
    compaction = CompactionRun.objects.get(session=session)

    page = sign_in(open_browser(), "root")
    page.goto(f"{server_url}/admin/")
    expect(page.locator("#audit-links")).to_contain_text("Omitted failed attempts")
    screenshot(page, "audit-admin-index")

    page.click("#audit-links >> text=Omitted failed attempts")
    row = page.locator("#result_list tbody tr").filter(has_text=failed_id)
    expect(row).to_have_count(1)
    expect(row).to_contain_text("overflow")
    expect(row).to_contain_text("prompt is too long")
    expect(row).to_contain_text("anthropic/claude-test")
    expect(row.locator("td.field-retry img")).to_have_attribute("alt", "True")
    screenshot(page, "audit-omitted-attempts")

    row.locator("td.field-compaction a").click()
    expect(page.locator("#content")).to_contain_text(str(compaction.operation_id))
    expect(page.locator("#content")).to_contain_text("Replaced entries")
    expect(page.locator("#content")).to_contain_text("Question 0")
    page.locator("text=Summary and the entries it replaced").scroll_into_view_if_needed()
    screenshot(page, "audit-compaction-detail")

    page.goto(f"{server_url}/admin/compaction_app/compactionrun/")
    listed = page.locator("#result_list tbody tr").filter(has_text=str(compaction.operation_id))
    expect(listed).to_contain_text(re.compile("overflow", re.I))
    expect(listed).to_contain_text(re.compile("succeeded", re.I))
    screenshot(page, "audit-compaction-history")

    page.goto(f"{server_url}/admin/audit/omittedattempt/")
    page.locator("#result_list tbody tr").filter(has_text=failed_id).locator(
        "td.field-failed_entry a"
    ).click()
    page.wait_for_url(f"**/sessions/{session.pk}/#entry={failed_id}")

    page.goto(f"{server_url}/admin/audit/usagerollup/")
    expect(page.locator("table[data-table=per-model]")).to_contain_text("anthropic/claude-test")
    # What a team's row counts, said as the rollup counts it (the sessions shared with the team).
    expect(page.locator(".usage-rollup")).to_contain_text("the sessions shared with it")
    expect(page.locator(".usage-rollup")).not_to_contain_text("sum over its members")
    screenshot(page, "audit-usage")
