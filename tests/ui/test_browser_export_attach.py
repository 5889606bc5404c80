"""In Chromium: downloading a branch or the whole tree as a document, from the page and from a link;
attaching a picture in the composer."""

from __future__ import annotations

import base64
import re
import struct
import zlib
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from providers.llm import testserver as script
from providers.llm.testserver import ProviderServer
from providers.models import LLMProvider
from sessions_app import services
from sessions_app.models import ChatSession
from tests.domain.test_document_export import working_session
from tests.factories import session_file, small_tree

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
expect.set_options(timeout=15000)


def store(owner: Any, entries: list[dict[str, Any]]) -> ChatSession:
    return services.import_jsonl(actor=owner, data=session_file(entries), filename="s.jsonl").session


def open_session(page: Any, url: str) -> None:
    page.goto(url)
    page.wait_for_selector("body[data-ready=true]")


def download(page: Any, fmt: str, scope: str | None, folder: Path) -> tuple[str, str]:
    """Export through the dialog; return the file name the browser saved and its text."""
    page.click("#export-button")
    page.select_option('#export-dialog select[name="format"]', fmt)
    if scope is not None:
        page.check(f'#export-dialog input[name="scope"][value="{scope}"]')
    with page.expect_download() as caught:
        page.click("#export-download")
    saved = folder / caught.value.suggested_filename
    caught.value.save_as(saved)
    expect(page.locator("#export-dialog")).not_to_be_visible()
    return caught.value.suggested_filename, saved.read_text()


def test_the_branch_to_the_selected_entry_and_the_whole_tree_download_as_documents(
    account: Any, open_browser: Any, sign_in: Any, server_url: str, tmp_path: Path
) -> None:
    session = store(account("exa"), small_tree(rich=True))
    page = sign_in(open_browser(accept_downloads=True), "exa")
    open_session(page, f"{server_url}/sessions/{session.pk}/")
    page.locator('.tree-row[data-id="a2"]').click()
    name, text = download(page, "markdown", "branch", tmp_path)
    assert name == "hello-there.md"  # named after the session's title, its first prompt
    assert "first question" in text and "second question" not in text

    name, page_text = download(page, "html", "tree", tmp_path)
    assert name == "hello-there.tree.html"
    assert "first question" in page_text and "second question" in page_text
    # The saved page opens on its own, with nothing to fetch, and shows the messages.
    viewer = page.context.new_page()
    fetched: list[str] = []
    viewer.on("request", lambda request: fetched.append(request.url))
    viewer.goto((tmp_path / name).as_uri())
    expect(viewer.locator("article.msg-user").first).to_contain_text("hello there")
    expect(viewer.locator("article.msg-assistant strong")).to_have_text("answer")
    assert fetched == [(tmp_path / name).as_uri()]

    name, jsonl = download(page, "jsonl", None, tmp_path)
    assert name.endswith(".jsonl") and jsonl.encode() == session_file(small_tree(rich=True))


def test_a_path_link_holder_downloads_only_the_path(
    account: Any, open_browser: Any, server_url: str, tmp_path: Path
) -> None:
    owner = account("exb")
    session = store(owner, small_tree(rich=True))
    link = services.create_share_link(session=session, actor=owner, scope="path", entry_id="a2")
    page = open_browser(accept_downloads=True).new_page()
    open_session(page, f"{server_url}/s/{link.raw_token}/")
    _, text = download(page, "markdown", "tree", tmp_path)
    assert "first question" in text and "second question" not in text


def test_the_saved_page_reads_like_pis_export_without_a_script(
    account: Any, open_browser: Any, sign_in: Any, server_url: str, tmp_path: Path, screenshot: Any
) -> None:
    session = store(account("exc"), working_session())
    session.name = "Cold cache investigation"
    session.save(update_fields=["name"])
    page = sign_in(open_browser(accept_downloads=True), "exc")
    open_session(page, f"{server_url}/sessions/{session.pk}/")
    name, _ = download(page, "html", "branch", tmp_path)
    assert name == "cold-cache-investigation.html"
    served = page.request.get(f"{server_url}/api/sessions/{session.pk}/export/?format=html")
    assert "default-src 'none'" in served.headers["content-security-policy"]
    assert "script-src" not in served.headers["content-security-policy"]

    for width, height, label in ((1400, 850, "desktop"), (390, 844, "phone")):
        # A reader's browser with scripts off: everything below must work without one.
        viewer = open_browser(width=width, height=height, java_script_enabled=False).new_page()
        viewer.goto((tmp_path / name).as_uri())
        assert viewer.locator("script").count() == 0
        csp = viewer.locator('meta[http-equiv="Content-Security-Policy"]').get_attribute("content") or ""
        assert csp.startswith("default-src 'none';") and "script" not in csp
        facts = viewer.locator("dl.facts")
        for words in (
            "Date2026-01-02 03:04 UTC",
            "Modelsanthropic/claude-x, openai/gpt-y",
            "Messages1 user, 2 assistant, 1 tool result, 1 shell command",
            "Tool calls1",
            "Tokens2,700 input · 120 output · 300 cache read · 20 cache write",
            # As the session page counts it: a2 records parts but no total, and no price is set.
            "Cost$0.013",
        ):
            expect(facts).to_contain_text(words)
        # The prompt Pi wrote as sections, and the tools with their parameters.
        prompt = viewer.locator("article.msg-system")
        expect(prompt.locator("summary").first).to_have_text("Section preamble")
        expect(prompt).to_contain_text("You are a careful coding agent.")
        expect(prompt.locator(".tools")).to_contain_text("path string, required — Path of the file")
        # The outline's links move to their entries; the branch's end is marked.
        expect(viewer.locator(".outline a[aria-current]")).to_contain_text("The cache starts empty.")
        viewer.locator('.outline a[href="#e-a2"]').click()
        expect(viewer).to_have_url(re.compile("#e-a2$"))
        expect(viewer.locator("#e-a2")).to_be_in_viewport()
        viewer.locator('.outline a[href="#e-s1"]').click()
        expect(viewer.locator("#e-s1")).to_be_in_viewport()
        # Thinking and tool output are folded, and open and close with a click.
        for fold, inside in (
            ("details.thinking", "The cache may be cold."),
            ("#e-t1 details.output", "CACHE"),
        ):
            details = viewer.locator(fold)
            expect(details.get_by_text(inside)).to_be_hidden()
            details.locator("summary").click()
            expect(details.get_by_text(inside)).to_be_visible()
            details.locator("summary").click()
            expect(details.get_by_text(inside)).to_be_hidden()
        # Nothing runs off the side of a phone.
        for part in ("main", ".outline", "dl.facts"):
            box = viewer.locator(part).bounding_box()
            assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= width + 1, (
                label,
                part,
                box,
            )
        screenshot(viewer, f"export-html-{label}")


def _png(width: int, height: int) -> bytes:
    rows = b"".join(b"\x00" + b"\x20\x60\xc0" * width for _ in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    head = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", head)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


def test_a_picture_attached_in_the_composer_is_sent_and_shown_in_the_message(
    account: Any, open_browser: Any, sign_in: Any, server_url: str, tmp_path: Path
) -> None:
    owner = account("pix")
    session = store(owner, small_tree())
    picture = tmp_path / "chart.png"
    picture.write_bytes(_png(40, 30))
    (tmp_path / "notes.txt").write_text("not a picture")
    with ProviderServer() as provider_server:
        LLMProvider.objects.create(
            name="vision",
            api="anthropic-messages",
            base_url=provider_server.url,
            model_id="claude-test",
            provider="anthropic",
            api_key="k",
        )
        provider_server.enqueue(script.reply("A blue rectangle."))
        page = sign_in(open_browser(), "pix")
        open_session(page, f"{server_url}/sessions/{session.pk}/")
        # A file that is not a picture is refused, naming it; the picture shows as a thumbnail.
        page.set_input_files("#composer-file", str(tmp_path / "notes.txt"))
        expect(page.locator("#composer-note")).to_contain_text("notes.txt is not a PNG")
        page.set_input_files("#composer-file", str(picture))
        expect(page.locator("#composer-attachments img")).to_have_count(1)
        # A pasted picture is attached too, and an attached one can be taken off again.
        page.evaluate(
            """(b64) => {
                const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
                const data = new DataTransfer();
                data.items.add(new File([bytes], "pasted.png", { type: "image/png" }));
                const box = document.getElementById("composer-text");
                const init = { clipboardData: data, bubbles: true, cancelable: true };
                box.dispatchEvent(new ClipboardEvent("paste", init));
            }""",
            base64.b64encode(_png(2, 2)).decode(),
        )
        expect(page.locator("#composer-attachments img")).to_have_count(2)
        page.get_by_role("button", name="Remove pasted.png").click()
        expect(page.locator("#composer-attachments img")).to_have_count(1)
        page.fill("#composer-text", "What does this chart show?")
        page.click("#composer-send")
        card = page.locator("#branch article.msg-user").filter(has_text="What does this chart show?")
        image = card.locator("img.inline-image")
        expect(image).to_have_count(1)
        expect(page.locator("#branch article.msg-assistant").last).to_contain_text("A blue rectangle.")
        expect(page.locator("#composer-attachments")).to_be_hidden()
        # The picture that arrived is the file that was chosen, drawn as a thumbnail.
        src = image.get_attribute("src") or ""
        assert src.startswith("data:image/png;base64,")
        assert base64.b64decode(src.split(",", 1)[1]) == picture.read_bytes()
        assert image.evaluate("img => img.naturalWidth") == 40
        assert image.evaluate("img => img.getBoundingClientRect().height") <= 160
        (request,) = provider_server.requests
        sent = request.body["messages"][-1]["content"]
        assert [b["type"] for b in sent] == ["text", "image"]
