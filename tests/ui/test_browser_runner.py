"""Two browsers on a session Pi works on through a runner: one runs, steers, queues a follow-up and stops;
the other follows the reply and each tool live."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from actionlog.models import ActionLog as ActionLogEntry
from providers.llm import testserver as script
from providers.llm.testserver import ProviderServer
from runners import services as runner_services
from runners.models import Runner
from sessions_app import services
from sessions_app.models import ApiToken, ChatSession
from teams.models import Team, TeamMembership
from tests.e2e.pi import PiHome, file_lines, pi_installed, stored_lines
from tests.runners.test_runner_end_to_end import RunnerProcess, pi_written_session, wait_for

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not pi_installed(), reason="Pi is not installed: run `npm ci --prefix bench`"),
]
expect.set_options(timeout=20000)


@pytest.fixture
def provider() -> Iterator[ProviderServer]:
    server = ProviderServer().start()
    yield server
    server.stop()


@pytest.fixture
def workbench(
    account: Any, server_url: str, provider: ProviderServer, tmp_path: Path
) -> Iterator[tuple[ChatSession, RunnerProcess, PiHome]]:
    """Ada's session (shared with Bob's team), and her runner on a git repository."""
    ada, bob = account("ada"), account("bob")
    home = PiHome(tmp_path, provider.url, server_url, ApiToken.objects.create(user=ada)[1])
    session = pi_written_session(home, provider, ada)
    team = Team.objects.create(name="crew")
    TeamMembership.objects.create(team=team, user=ada, role="owner")
    TeamMembership.objects.create(team=team, user=bob, role="viewer")
    services.share_with_team(session=session, team=team, access="viewer", actor=ada)
    runner, token = runner_services.create_runner(actor=ada, name="box")
    process = RunnerProcess(home, server_url, token, home.work)
    try:
        wait_for(lambda: Runner.objects.get(pk=runner.pk).online, "the runner coming online")
        wait_for(lambda: Runner.objects.get(pk=runner.pk).workspaces(), "the runner's hello")
        yield session, process, home
    finally:
        process.stop()


def test_run_steer_follow_up_and_stop_from_one_browser_while_another_follows(
    workbench: Any,
    provider: ProviderServer,
    open_browser: Any,
    sign_in: Any,
    server_url: str,
    screenshot: Any,
) -> None:
    session, process, home = workbench
    workspace = home.work
    mine = sign_in(open_browser(), "ada")
    theirs = sign_in(open_browser(), "bob")
    for page in (mine, theirs):
        page.goto(f"{server_url}/sessions/{session.pk}/")
        page.wait_for_selector("body[data-ready=true]")
    where = mine.locator("#composer-where")
    expect(where).to_be_visible()
    options = where.locator("option").all_inner_texts()
    where.select_option(label=next(o for o in options if o.startswith("box · work")))

    # A run that edits a real file with Pi's own tool, then runs git: Bob sees each tool live; Ada steers
    # while git runs and queues a follow-up.
    provider.enqueue(
        script.tool_call("edit", {"path": "notes.txt", "edits": [{"oldText": "3.11", "newText": "3.12"}]}),
        # Long enough for Ada's page to offer "Steer" while git runs on a busy machine (3 s was missed once).
        script.tool_call("bash", {"command": "sleep 6 && git diff --stat && git log --oneline"}, id="call_2"),
        script.reply("Bumped to 3.12, and hi.", delay=0.02),
        script.reply("The follow-up is done.", delay=0.02),
    )
    mine.fill("#composer-text", "Bump the Python version")
    mine.click("#composer-send")
    # The edit is quick: Bob sees its call and result in the branch (the prompt names no file).
    expect(theirs.locator("#branch")).to_contain_text("notes.txt")
    expect(theirs.locator('.tool-live[data-tool="bash"]')).to_be_visible()
    expect(theirs.locator("#operation-text")).to_contain_text("Pi is working on box, started by ada")
    expect(theirs.locator('.tool-live[data-tool="bash"] .tool-what')).to_contain_text("git log")
    screenshot(theirs, "runner-follower-tool")
    expect(mine.locator("#composer-send")).to_have_text("Steer")
    mine.fill("#composer-text", "Also say hi")
    mine.click("#composer-send")
    expect(mine.locator("#composer-note")).to_contain_text("Sent")
    mine.fill("#composer-text", "Then summarize")
    mine.click("#composer-follow")
    expect(mine.locator("#composer-note")).to_contain_text("Queued")
    for page in (mine, theirs):
        expect(page.locator("#branch")).to_contain_text("The follow-up is done.")
        expect(page.locator("#branch")).to_contain_text("Bumped to 3.12")
        expect(page.locator("#branch")).to_contain_text("Also say hi")
        expect(page.locator("#branch")).to_contain_text("Then summarize")
    expect(mine.locator("#composer-send")).to_have_text("Send")
    assert (workspace / "notes.txt").read_text() == "The build needs Python 3.12.\n"

    # Stop while the reply streams: the run ends, what was written is kept, both pages say so.
    provider.enqueue(script.reply(" ".join(f"word{i}" for i in range(300)), delay=0.05))
    mine.fill("#composer-text", "Write a long answer")
    mine.click("#composer-send")
    expect(theirs.locator("#branch .streaming")).to_contain_text("word3")
    # A page Ada opens now, in another browser, learns the run is on her runner and offers to steer it.
    later = sign_in(open_browser(), "ada")
    later.goto(f"{server_url}/sessions/{session.pk}/")
    expect(later.locator("#composer-send")).to_have_text("Steer")
    expect(later.locator("#composer-follow")).to_be_visible()
    mine.click("#composer-stop")
    expect(mine.locator("#composer-stop")).to_be_hidden()
    expect(mine.locator("#composer-send")).to_have_text("Send")
    expect(theirs.locator("#branch")).to_contain_text("word1")
    stored = stored_lines(ChatSession.objects.get(pk=session.pk))
    assert stored == file_lines(process.file(session.pi_id))


def test_hand_a_session_to_a_teammate_who_continues_it_on_their_runner(
    account: Any,
    server_url: str,
    provider: ProviderServer,
    tmp_path: Path,
    open_browser: Any,
    sign_in: Any,
    screenshot: Any,
) -> None:
    ada, bob = account("ada"), account("bob")
    home = PiHome(tmp_path, provider.url, server_url, ApiToken.objects.create(user=bob)[1])
    session = pi_written_session(home, provider, ada)
    team = Team.objects.create(name="crew")
    TeamMembership.objects.create(team=team, user=ada, role="owner")
    TeamMembership.objects.create(team=team, user=bob, role="editor")
    services.share_with_team(session=session, team=team, access="editor", actor=ada)
    runner, token = runner_services.create_runner(actor=bob, name="bobs-box")
    process = RunnerProcess(home, server_url, token, home.work)
    try:
        wait_for(lambda: Runner.objects.get(pk=runner.pk).workspaces(), "Bob's runner coming online")
        mine = sign_in(open_browser(), "ada")
        mine.goto(f"{server_url}/sessions/{session.pk}/")
        mine.wait_for_selector("body[data-ready=true]")
        mine.click("#handoff-button")
        dialog = mine.locator("#handoff-dialog")
        expect(dialog).to_be_visible()
        dialog.locator("select[name=to]").select_option(label="bob")
        dialog.locator("textarea[name=note]").fill("The tests still fail on CI; please finish.")
        dialog.locator("button[type=submit]").click()
        expect(mine.locator("#handoff-button")).to_have_text("Handed to bob")

        # Bob hears of it in his inbox, opens the session and continues it on his own runner.
        theirs = sign_in(open_browser(), "bob")
        theirs.goto(f"{server_url}/inbox/")
        expect(theirs.locator("body")).to_contain_text("this session is yours now")
        expect(theirs.locator("body")).to_contain_text("The tests still fail on CI")
        screenshot(theirs, "handoff-inbox")
        theirs.goto(f"{server_url}/sessions/{session.pk}/")
        theirs.wait_for_selector("body[data-ready=true]")
        where = theirs.locator("#composer-where")
        options = where.locator("option").all_inner_texts()
        where.select_option(label=next(o for o in options if o.startswith("bobs-box")))
        provider.enqueue(script.reply("Fixed the tests."))
        theirs.fill("#composer-text", "Fix the tests")
        theirs.click("#composer-send")
        expect(theirs.locator("#branch")).to_contain_text("Fixed the tests.")
    finally:
        process.stop()
    assert ActionLogEntry.objects.filter(action="handoff", session=session, actor=ada).count() == 1


def test_register_a_runner_see_its_token_once_and_revoke_it(
    account: Any, open_browser: Any, sign_in: Any, server_url: str
) -> None:
    account("ada")
    page = sign_in(open_browser(), "ada")
    page.goto(f"{server_url}/runners/")
    page.wait_for_selector("body[data-ready=true]")
    expect(page.locator("#runners-empty")).to_be_visible()
    page.fill("#runner-form input[name=name]", "build-box")
    page.click("#runner-form button[type=submit]")
    commands = page.locator("#runner-commands")
    expect(commands).to_contain_text("PIWEB_RUNNER_TOKEN=pwr_")
    expect(commands).to_contain_text("piweb-runner --workspace")
    token = commands.inner_text().split("PIWEB_RUNNER_TOKEN=")[1].split()[0]
    assert runner_services.runner_by_token(token) is not None, "the token shown is the runner's"
    row = page.locator('tr[data-runner="build-box"]')
    expect(row).to_contain_text("offline")
    page.reload()
    page.wait_for_selector("body[data-ready=true]")
    expect(page.locator("#runner-commands")).to_be_hidden()  # shown once
    page.locator('tr[data-runner="build-box"] button.danger').click()
    page.locator("#confirm-action-ok").click()
    expect(page.locator('tr[data-runner="build-box"]')).to_have_count(0)
    assert runner_services.runner_by_token(token) is None
