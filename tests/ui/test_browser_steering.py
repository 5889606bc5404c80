"""Steering runs from the page, in Chromium, against a real run: daphne, a Celery runs worker and the
scripted provider server on loopback. Stop (and Escape), Send while a run is active (here, in another
tab and after a reload), Markdown while streaming, Regenerate and edit-and-resend."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.db import connection
from playwright.sync_api import expect

from agent.models import AgentRun
from providers.llm import testserver as script
from providers.llm.testserver import ProviderServer
from providers.models import LLMProvider
from sessions_app import services
from sessions_app.models import ChatSession
from tests.factories import assistant_message, entries, session_file, user_message
from tests.procs import free_port, wait_for_port, wait_until

from .conftest import REPO, database_url, signed_in

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        not str(settings.CELERY_BROKER_URL).startswith("redis"), reason="a runs worker needs the Redis broker"
    ),
]
expect.set_options(timeout=15000)

APP_NAME = "piweb-steering-tests"
CODE_REPLY = "Here is the code:\n\n```python\nprint('streamed')\n```\n\nThat prints one line."


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


@pytest.fixture(scope="module")
def run_stack(django_db_setup: Any, django_db_blocker: Any) -> Iterator[str]:
    """daphne that queues runs (not in-process) and a threads worker on a queue of this module's own."""
    folder = Path(tempfile.mkdtemp(prefix="piweb-steering-"))
    env = {
        **os.environ,
        "DATABASE_URL": database_url(),
        "DJANGO_DEBUG": "1",
        "PIWEB_CELERY_EAGER": "0",
        "PIWEB_RUNS_QUEUE": f"runs-ui-{uuid.uuid4().hex[:8]}",
        "PIWEB_SUMMARIZER": "",
        "PYTHONUNBUFFERED": "1",
        "DJANGO_SETTINGS_MODULE": "piweb.settings",
        # Their database connections carry this name, so only they are closed at the end.
        "PGAPPNAME": APP_NAME,
    }
    port = free_port()
    server_log = folder / "daphne.log"
    worker_log = folder / "worker.log"
    with server_log.open("wb") as out, worker_log.open("wb") as wout:
        server = subprocess.Popen(
            [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "piweb.asgi:application"],
            cwd=REPO,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
        celery = str(Path(sys.executable).with_name("celery"))
        worker = subprocess.Popen(
            [
                *(celery, "-A", "piweb", "worker", "-Q", env["PIWEB_RUNS_QUEUE"], "--pool=threads"),
                *("--concurrency=2", "--without-gossip", "--without-mingle", "--without-heartbeat"),
            ],
            cwd=REPO,
            env=env,
            stdout=wout,
            stderr=subprocess.STDOUT,
        )
        try:
            wait_for_port(port, server, server_log)
            yield f"http://127.0.0.1:{port}"
        finally:
            _stop(worker)
            _stop(server)
            with django_db_blocker.unblock(), connection.cursor() as cursor:
                cursor.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    "WHERE datname = current_database() AND application_name = %s",
                    [APP_NAME],
                )


@pytest.fixture
def provider_server() -> Iterator[ProviderServer]:
    with ProviderServer() as running:
        yield running


@pytest.fixture
def steering_session(
    account: Callable[..., Any], provider_server: ProviderServer
) -> Callable[[str, list[dict[str, Any]]], ChatSession]:
    def make(username: str, entries: list[dict[str, Any]]) -> ChatSession:
        owner = account(username)
        LLMProvider.objects.create(
            name="Scripted",
            api="anthropic-messages",
            base_url=provider_server.url,
            model_id="claude-test",
            provider="anthropic",
            api_key="sk-ant-test",
        )
        data = session_file(entries)
        return services.import_jsonl(actor=owner, data=data, filename="s.jsonl").session

    return make


def open_session(page: Any, url: str) -> None:
    page.goto(url)
    page.wait_for_selector("body[data-ready=true]")
    page.wait_for_selector("#live-status[data-state=live]")


def card(page: Any, entry_id: str) -> Any:
    return page.locator(f'#branch .branch-item[data-id="{entry_id}"]')


class NoRun:
    status = None
    finished_at = None


def latest_run(session: ChatSession) -> AgentRun | NoRun:
    return AgentRun.objects.filter(session=session).order_by("-created_at").first() or NoRun()


def entries_of(session: ChatSession) -> list[dict[str, Any]]:
    return entries(session)


# Started with the configured model (as Pi starts a session), so a run needs no model_change first.
MODEL = {"api": "anthropic-messages", "provider": "anthropic", "model": "claude-test"}
EXCHANGE = [
    {
        "type": "model_change",
        "id": "m0",
        "parentId": None,
        "timestamp": "2026-01-02T03:04:05.000Z",
        "provider": "anthropic",
        "modelId": "claude-test",
    },
    user_message("u1", "m0", "Say hello"),
    assistant_message("a1", "u1", "Hello!", **MODEL),
]


def test_stop_and_escape_end_the_run_keeping_the_partial_reply_and_send_follows_the_run_everywhere(
    run_stack: str, provider_server: ProviderServer, steering_session: Any, open_browser: Any, screenshot: Any
) -> None:
    session = steering_session("stopper", EXCHANGE)
    # The reply streams up to the code line, then the provider stalls: only Stop can end the run.
    streamed = CODE_REPLY.split("```\n\nThat")[0]
    events_before_stall = 3 + len(script._pieces(streamed))
    provider_server.enqueue(script.hang(60, after=events_before_stall, text=CODE_REPLY))
    url = f"{run_stack}/sessions/{session.pk}/"
    browser = open_browser()
    page = signed_in(browser, run_stack, "stopper")
    open_session(page, url)
    other = browser.new_page()  # a second tab of the same person
    open_session(other, url)
    # Record whether a raw fence is ever on screen while the reply streams.
    page.evaluate(
        """() => { window.__rawFence = false;
          new MutationObserver(() => {
            const s = document.querySelector('#branch .streaming');
            if (s && s.textContent.includes('```')) window.__rawFence = true;
          }).observe(document.getElementById('branch'),
                     {subtree: true, childList: true, characterData: true});
        }"""
    )

    expect(page.locator("#composer-stop")).to_be_hidden()
    page.fill("#composer-text", "Show me some code")
    page.keyboard.press("Enter")

    # Send is off and Stop offered here and in the other tab while the run is active.
    for tab in (page, other):
        expect(tab.locator("#composer-stop")).to_be_visible()
        expect(tab.locator("#composer-send")).to_be_disabled()
    # The reply so far is Markdown: the open fence is already a code block.
    expect(page.locator("#branch .streaming pre")).to_contain_text("print('streamed')")
    expect(page.locator("#branch .streaming")).to_contain_text("Here is the code:")
    screenshot(page, "steering-streaming-markdown")
    # A reload while the run is active still knows it.
    other.reload()
    other.wait_for_selector("body[data-ready=true]")
    expect(other.locator("#composer-send")).to_be_disabled()
    expect(other.locator("#composer-stop")).to_be_visible()
    # A second prompt is not even sent.
    page.fill("#composer-text", "And another thing")
    page.keyboard.press("Enter")
    assert AgentRun.objects.filter(session=session).count() == 1

    page.keyboard.press("Escape")

    wait_until(lambda: latest_run(session).status == "aborted", 15, "the run to end as aborted")
    last = entries_of(session)[-1]["message"]
    assert last["role"] == "assistant" and last["stopReason"] == "aborted"
    assert last["content"][0]["text"] == streamed.rstrip()
    for tab in (page, other):
        expect(tab.locator("#composer-stop")).to_be_hidden()
        expect(tab.locator("#composer-send")).to_be_enabled()
    # The kept reply is shown, rendered, and marked as stopped (in the words Pi stores for Anthropic).
    kept = page.locator("#branch .branch-item.msg-assistant").last
    expect(kept).to_contain_text("This operation was aborted")
    expect(kept.locator("pre")).to_contain_text("print('streamed')")
    expect(page.locator("#branch .streaming")).to_have_count(0)
    assert page.evaluate("window.__rawFence") is False
    assert page.input_value("#composer-text") == "And another thing"  # the unsent prompt is kept
    screenshot(page, "steering-stopped")

    # The Stop button does the same as Escape.
    provider_server.enqueue(script.hang(60, after=5, text="Counting one two three four five six"))
    page.keyboard.press("Enter")
    expect(page.locator("#composer-stop")).to_be_visible()
    expect(page.locator("#branch .streaming")).to_contain_text("Counting")
    other.click("#composer-stop")
    wait_until(
        lambda: latest_run(session).status == "aborted" and latest_run(session).finished_at is not None,
        15,
        "the second run to end",
    )
    expect(page.locator("#composer-send")).to_be_enabled()
    assert entries_of(session)[-1]["message"]["stopReason"] == "aborted"


def test_regenerate_answers_again_as_a_sibling_branch_and_the_page_follows_it(
    run_stack: str, provider_server: ProviderServer, steering_session: Any, open_browser: Any, screenshot: Any
) -> None:
    session = steering_session(
        "regen",
        [
            *EXCHANGE,
            user_message("u2", "a1", "And goodbye?"),
            assistant_message("a2", "u2", "Goodbye!", **MODEL),
        ],
    )
    provider_server.enqueue(script.reply("Hi there, **again**."))
    page = signed_in(open_browser(), run_stack, "regen")
    open_session(page, f"{run_stack}/sessions/{session.pk}/")

    # Regenerate from an assistant message that is not the last one.
    card(page, "a1").locator("button.regenerate").click()

    wait_until(lambda: latest_run(session).status == "succeeded", 15, "the regenerated answer")
    new = entries_of(session)[-1]
    assert new["parentId"] == "u1" and new["id"] != "a1"
    assert new["message"]["content"] == [{"type": "text", "text": "Hi there, **again**."}]
    # The page follows the new branch: it ends with the new answer, the old one is a sibling.
    answer = card(page, new["id"])
    expect(answer).to_contain_text("Hi there, again.")
    expect(answer.locator("strong")).to_have_text("again")
    expect(answer.locator(".sibling-pos")).to_have_text("2/2")
    expect(card(page, "a2")).to_have_count(0)
    expect(page.locator("#composer-send")).to_be_enabled()
    screenshot(page, "steering-regenerated")
    # The first answer and what followed it are one click away.
    answer.locator(".sibling-prev").click()
    expect(card(page, "a2")).to_contain_text("Goodbye!")
    # The same question went out again, without the later turns.
    sent = provider_server.requests[-1].body["messages"]
    assert "Say hello" in str(sent) and "Goodbye" not in str(sent)


def test_a_user_message_edited_inline_is_sent_as_a_sibling(
    run_stack: str, provider_server: ProviderServer, steering_session: Any, open_browser: Any, screenshot: Any
) -> None:
    session = steering_session(
        "editor",
        [*EXCHANGE, user_message("u2", "a1", "What is 2 + 2?"), assistant_message("a2", "u2", "4", **MODEL)],
    )
    provider_server.enqueue(script.reply("6"))
    page = signed_in(open_browser(), run_stack, "editor")
    open_session(page, f"{run_stack}/sessions/{session.pk}/")

    card(page, "u2").locator("button.edit-message").click()
    editor = card(page, "u2").locator(".inline-edit textarea")
    expect(editor).to_have_value("What is 2 + 2?")
    # Escape closes the editor and changes nothing.
    editor.press("Escape")
    expect(card(page, "u2").locator(".inline-edit")).to_have_count(0)
    expect(card(page, "u2")).to_contain_text("What is 2 + 2?")
    assert AgentRun.objects.filter(session=session).count() == 0

    card(page, "u2").locator("button.edit-message").click()
    editor = card(page, "u2").locator(".inline-edit textarea")
    editor.fill("What is 3 + 3?")
    screenshot(page, "steering-edit-inline")
    editor.press("Enter")

    wait_until(lambda: latest_run(session).status == "succeeded", 15, "the answer to the edited message")
    *_, asked, answered = entries_of(session)
    assert asked["parentId"] == "a1" and asked["message"]["content"] == [
        {"type": "text", "text": "What is 3 + 3?"}
    ]
    assert answered["parentId"] == asked["id"]
    expect(card(page, answered["id"])).to_contain_text("6")
    expect(card(page, asked["id"])).to_contain_text("What is 3 + 3?")
    expect(card(page, asked["id"]).locator(".sibling-pos")).to_have_text("2/2")
    expect(card(page, "u2")).to_have_count(0)
    screenshot(page, "steering-edited")
    # The model saw the edited question, not the original.
    sent = str(provider_server.requests[-1].body["messages"])
    assert "3 + 3" in sent and "2 + 2" not in sent


def test_after_a_failed_prompt_the_gauge_keeps_pis_estimate_and_shows_the_last_report_beside_it(
    run_stack: str, steering_session: Any, open_browser: Any, screenshot: Any
) -> None:
    reported = {"input": 9000, "output": 560, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 9560}
    session = steering_session(
        "gauge",
        [
            *EXCHANGE[:2],
            assistant_message("a1", "u1", "Read it all.", usage=reported, **MODEL),
            user_message("u2", "a1", "Now refactor it"),
            assistant_message("a2", "u2", "", stop="error", errorMessage="400: prompt is too long", **MODEL),
            {
                "type": "context_edit",
                "id": "e1",
                "parentId": "a2",
                "timestamp": "2026-01-02T03:04:08.000Z",
                "targetId": "a2",
                "replacement": None,
            },
        ],
    )
    page = signed_in(open_browser(), run_stack, "gauge")
    open_session(page, f"{run_stack}/sessions/{session.pk}/#entry=u2")
    expect(page.locator("#context-tokens")).to_contain_text("9,5")
    expect(page.locator("#context-drop")).to_be_hidden()

    page.locator('.tree-row[data-id="e1"]').click()

    note = page.locator("#context-drop")
    expect(note).to_be_visible()
    expect(note).to_contain_text("Last reported by the provider: 9,560 tokens (at a1)")
    expect(note).to_contain_text("a failed attempt was left out of the context after it")
    shown = int(page.inner_text("#context-tokens").strip("≈ tokens").replace(",", ""))
    assert shown < 200  # Pi's estimate at this leaf, what auto-compaction compares
    screenshot(page, "gauge-explains-a-drop")
