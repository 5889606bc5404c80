"""Pi and piweb answer the same prompts from the same session against the same scripted provider.

Pi 1.6.0's CLI writes the starting session (a tool call answered by Pi's own ``read`` tool, then a
reply), piweb imports that file, and both continue it with the same prompts and the same scripted
answers: a transient 500 that is retried, a context overflow that is compacted (summaries written by the
run's own model, answered from a side queue so their number is compared too) and retried, a thinking
answer past the compaction threshold, and an answer cut off at the output limit. The entries each wrote
and every request each sent are compared field by field. No compat settings are configured on either
side: both detect them from the host.

Tool calls answered in the continuation are compared up to the call: Pi's CLI runs its tools itself,
piweb runs none (a ``toolUse`` stop ends the run), so what follows a call differs by design.

Differences allowed, and why:
- entry ``id``/``parentId``/``targetId``/``firstKeptEntryId`` are random on both sides: they are compared
  as positions, which checks the shape of the tree;
- entry, message and ``systemMessage`` ``timestamp`` and message ``durationMs``: clocks;
- the wording of the summarization prompt and instructions: piweb words them itself. The serialized
  conversation inside a summary request, and every other request field, must be equal;
- the provider's port inside an error text (each side has its own server).

Entries and requests are compared as written: a number is compared with its spelling (``100000`` and
``100000.0`` differ, as they do on the wire and in the file).
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import random
import struct
import threading
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from django.db import connection

from agent import services
from compaction_app.domain.prompts import SUMMARIZATION_SYSTEM_PROMPT
from compaction_app.services import start_branch_summary
from pitree.jsjson import js_number
from providers.llm import testserver as script
from providers.llm.testserver import ProviderServer
from providers.models import LLMProvider
from sessions_app import services as session_services
from sessions_app.models import Entry

from .pi_cli import MODEL, PROVIDER, PiCli, pi_installed

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not pi_installed(), reason="Pi 1.6.0 is not installed in bench/node_modules"),
]

WINDOW = 16000
MAX_TOKENS = 2000
COMPACTION = {"enabled": True, "reserveTokens": 2000, "keepRecentTokens": 300}
RETRY = {"enabled": True, "maxRetries": 2, "baseDelayMs": 1}
LONG = " ".join(f"Step {i}: the parser reads one more token and checks the grammar." for i in range(60))
# How each side's summary request opens and where its instructions start (Pi's prompt is recognised by
# its first words only).
PI_SUMMARY_SYSTEM_START = "You are a context summarization assistant."
INSTRUCTIONS = "\n\n# Instructions\n"
CONVERSATION_END = "</conversation>"
SUMMARY = "## Goal\n- Fix the parser\n\n## Progress\n### Done\n- Read calc.py"


def _normalize(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Drop clocks and replace ids by positions, so two runs of the same events compare equal."""
    position = {e["id"]: i for i, e in enumerate(lines) if isinstance(e.get("id"), str)}

    def ref(value: Any) -> Any:
        return f"@{position[value]}" if isinstance(value, str) and value in position else value

    out = []
    for entry in lines:
        entry = json.loads(json.dumps(entry))
        entry.pop("timestamp", None)
        for key in ("id", "parentId", "targetId", "firstKeptEntryId", "fromId"):
            if key in entry:
                entry[key] = ref(entry[key])
        message = entry.get("message")
        if isinstance(message, dict):
            message.pop("timestamp", None)
            message.pop("durationMs", None)
        if isinstance(entry.get("systemMessage"), dict):
            entry["systemMessage"].pop("timestamp", None)
        out.append(entry)
    return out


def _wording_aside(body: dict[str, Any]) -> dict[str, Any]:
    """A request with the summarization prompts' own wording set aside, the transcript kept.

    piweb words its summarization instructions itself (Pi's text is not copied), so a summary request
    is compared on everything else: model, limits, flags and the serialized conversation.
    """
    body = json.loads(json.dumps(body))
    system = body.get("system")
    messages = body["messages"]
    head = messages[0] if messages and messages[0].get("role") == "system" else None
    prompt = (system or [{}])[0].get("text") if isinstance(system, list) else (head or {}).get("content")
    if prompt not in (SUMMARIZATION_SYSTEM_PROMPT, PI_SUMMARY_SYSTEM_START) and not str(prompt).startswith(
        PI_SUMMARY_SYSTEM_START
    ):
        return body
    if isinstance(system, list):
        system[0]["text"] = "<summarization prompt>"
    else:
        messages[0]["content"] = "<summarization prompt>"
    for block in messages[-1]["content"]:
        text = block["text"]
        end = text.find(CONVERSATION_END)
        block["text"] = text[: end + len(CONVERSATION_END)] if end >= 0 else text.split(INSTRUCTIONS)[0]
    return body


def _number(text: str) -> Any:
    """A number as JSON.stringify would spell it, else its own spelling marked (``1e5`` is written
    ``100000`` by JavaScript)."""
    value = float(text)
    return value if js_number(value) == text else f"<number {text}>"


def _spelled(text: str, port: int = 0) -> Any:
    """JSON whose numbers keep their spelling (see ``_number``); the provider's port in it made neutral."""
    if port:
        text = text.replace(f"127.0.0.1:{port}", "127.0.0.1:<port>")
    return json.loads(text, parse_float=_number)


def _pi_lines(path: Path, port: int = 0) -> list[dict[str, Any]]:
    return [_spelled(line, port) for line in path.read_text().splitlines()[1:] if line.strip()]


def _web_lines(session: Any, port: int = 0) -> list[dict[str, Any]]:
    rows = Entry.objects.filter(session=session).order_by("seq").values_list("raw", flat=True)
    return [_spelled(raw, port) for raw in rows]


def _port(url: str) -> int:
    return int(url.rsplit(":", 1)[1])


def _bodies(requests: list[script.RecordedRequest]) -> list[Any]:
    return [_spelled(r.raw) if r.raw else r.body for r in requests]


def _scenario() -> list[tuple[str, list[script.Spec]]]:
    return [
        ("Now explain the parser in detail.", [script.server_error(), script.reply(LONG)]),
        (
            "And the tokenizer?",
            [script.overflow(tokens=20000, window=WINDOW), script.reply("Tokenizer: fine.")],
        ),
        # A long thinking answer whose usage passes the threshold: auto-compaction after the turn (long
        # enough that the turns since the overflow's compaction hold more than keepRecentTokens).
        (
            "Think it over.",
            [script.reply(LONG, thinking="Weigh the options.", usage={"input": 14500})],
        ),
        # An answer cut off at the output limit.
        ("Write it all out.", [script.reply("Part one", stop="length"), script.reply("Part two")]),
    ]


@dataclass
class Outcome:
    pi_written: list[dict[str, Any]]
    web_written: list[dict[str, Any]]
    pi_requests: list[Any]
    web_requests: list[Any]
    runs: list[tuple[str, str]]  # each piweb run's status and error


def _run_both(
    api: str,
    root: Path,
    owner: Any,
    scenario: list[tuple[str, list[script.Spec]]],
    *,
    reasoning: bool = False,
    thinking: str = "off",
    pictures: dict[int, dict[str, bytes]] | None = None,
    aborted: frozenset[int] = frozenset(),
    text_only: bool = False,
    images: bool = False,
    navigate_back: bool = False,
    refused: frozenset[int] = frozenset(),
    start_arguments: str | None = None,
    other_summarizer: bool = False,
    edit_start: Callable[[list[dict[str, Any]]], None] | None = None,
) -> Outcome:
    """Write the starting session with Pi, import it, then play ``scenario`` through Pi and piweb.

    ``pictures`` attaches files to the scenario's prompt at that index: Pi gets them as ``@file``
    arguments; piweb gets the text Pi made of that prompt and the same files as image attachments.
    The prompts at the indexes in ``aborted`` are stopped by their user once the reply stalls.
    ``text_only`` declares the model as taking no pictures on both sides. ``navigate_back`` then returns
    both to the end of the starting session, summarizing the branch left (piweb's summaries by the same
    model, as its default summarizer; with ``other_summarizer`` another model is the default summarizer,
    and the session's model must still write the summary, as in Pi). ``images`` declares the model as
    taking pictures. ``edit_start`` rewrites the starting session's entries (all but the header) in
    place before either side continues it, for histories Pi's own tools do not write. The prompts at the
    indexes in ``refused`` find the provider not listening. ``start_arguments`` is the argument text of
    the starting session's tool call, as the provider writes it.
    """
    pictures = pictures or {}
    # Summary requests are answered from their own queue: how many a compaction makes is compared too.
    summaries = (PI_SUMMARY_SYSTEM_START, SUMMARIZATION_SYSTEM_PROMPT)
    with (
        ProviderServer(side_prompts=summaries) as pi_server,
        ProviderServer(side_prompts=summaries) as web_server,
    ):
        pi_server.enqueue_side(*[script.reply(SUMMARY)] * 40)
        web_server.enqueue_side(*[script.reply(SUMMARY)] * 40)
        pi = PiCli(
            root,
            provider_url=pi_server.url,
            api=api,
            context_window=WINDOW,
            max_tokens=MAX_TOKENS,
            compaction=COMPACTION,
            retry=RETRY,
            reasoning=reasoning,
            thinking=thinking,
            images=(images or bool(pictures)) and not text_only,
        )
        (pi.work / "calc.py").write_text("def add(a, b):\n    return a + b\n")
        # The starting session, written by Pi itself.
        start_call = script.tool_call("read", {"path": "calc.py"}, text="Let me look.")
        if start_arguments is not None:
            start_call["tool_calls"][0]["arguments_json"] = start_arguments
        pi_server.enqueue(start_call, script.reply(LONG))
        file = pi.prompt("Look at calc.py and fix the parser.")
        started = len(pi_server.requests)
        if edit_start is not None:
            header, *rest = file.read_text().splitlines()
            lines = [json.loads(line) for line in rest if line.strip()]
            edit_start(lines)
            file.write_text("\n".join([header, *(json.dumps(line) for line in lines)]) + "\n")
        start_leaf = _pi_lines(file)[-1]["id"]

        session = session_services.import_jsonl(actor=owner, data=file.read_bytes()).session
        base_url = f"{web_server.url}/v1" if api == "openai-completions" else web_server.url
        provider = LLMProvider.objects.create(
            name=f"fake-{api}",
            api=api,
            base_url=base_url,
            model_id=MODEL,
            provider=PROVIDER,
            context_window=WINDOW,
            max_output_tokens=MAX_TOKENS,
            api_key="k",
            reasoning=reasoning,
            accepts_images=not text_only,
            is_summarizer_default=navigate_back and not other_summarizer,
            cost_input=3,
            cost_output=15,
            cost_cache_read=0.3,
            cost_cache_write=3.75,
        )
        if other_summarizer:
            LLMProvider.objects.create(
                name="summaries",
                api=api,
                base_url=base_url,
                model_id="summary-model",
                provider="elsewhere",
                context_window=WINDOW,
                max_output_tokens=MAX_TOKENS,
                api_key="k",
                is_summarizer_default=True,
            )
        runs: list[tuple[str, str]] = []
        for index, (prompt, answers) in enumerate(scenario):
            files = pictures.get(index, {})
            for name, data in files.items():
                (pi.work / name).write_bytes(data)
            pi_server.enqueue(*answers)
            if index in aborted:
                pi_server.stalled.clear()
                pi.prompt_aborted(prompt, session=file, stalled=pi_server.stalled)
            elif index in refused:
                with pi_server.refusing():
                    pi.prompt(prompt, session=file, check=False)
            else:
                # Pi's print mode exits non-zero when its turn ends in an error; the entries are what count.
                pi.prompt(prompt, session=file, check=False, files=tuple(files))
            web_server.enqueue(*answers)
            stopper = None
            if index in aborted:
                web_server.stalled.clear()
                stopper = threading.Thread(
                    target=_stop_when_stalled, args=(session, owner, web_server.stalled)
                )
                stopper.start()
            images = [
                {"data": base64.b64encode(data).decode(), "mimeType": "image/png"} for data in files.values()
            ]
            if files:  # the prompt as Pi wrote it: the text names the attached files
                prompt = _last_user_text(file)
            with web_server.refusing() if index in refused else contextlib.nullcontext():
                run = services.start_run(
                    session=session, user=owner, prompt=prompt, provider=provider, images=images
                )
            if stopper is not None:
                stopper.join()
            run.refresh_from_db()
            runs.append((run.status, run.error))
        if navigate_back:
            pi.navigate(start_leaf, session=file)
            start_branch_summary(session=session, target_id=start_leaf, actor=owner)
        return Outcome(
            pi_written=_normalize(_pi_lines(file, _port(pi_server.url))),
            web_written=_normalize(_web_lines(session, _port(web_server.url))),
            pi_requests=_bodies(pi_server.requests[started:]),
            web_requests=_bodies(web_server.requests),
            runs=runs,
        )


def _stop_when_stalled(session: Any, owner: Any, stalled: threading.Event) -> None:
    """Press Stop on the session's run once the provider has sent part of the reply and stalled."""
    try:
        assert stalled.wait(60), "the provider never reached the stall"
        time.sleep(0.5)  # the run reads what was sent before the stall, as Pi does
        services.abort_active_run(session=session, actor=owner)
    finally:
        connection.close()


def _last_user_text(file: Path) -> str:
    users = [e["message"] for e in _pi_lines(file) if e.get("message", {}).get("role") == "user"]
    return str(users[-1]["content"][0]["text"])


def _png(width: int, height: int) -> bytes:
    """A real PNG of one red colour."""
    rows = b"".join(b"\x00" + b"\xff\x00\x00" * width for _ in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    head = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", head)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


def _assert_same(outcome: Outcome) -> None:
    pi_written, pi_requests = outcome.pi_written, outcome.pi_requests
    last = outcome.web_written[-1].get("message") if outcome.web_written else None
    if isinstance(last, dict) and last.get("stopReason") == "toolUse":
        # Pi ran the tool and went on; piweb's run ended at the call. Up to it, both must agree.
        pi_written = pi_written[: len(outcome.web_written)]
        pi_requests = pi_requests[: len(outcome.web_requests)]
    assert outcome.web_written == pi_written
    assert len(outcome.web_requests) == len(pi_requests)
    pairs = zip(outcome.web_requests, pi_requests, strict=True)
    for index, (ours, theirs) in enumerate(pairs):
        assert _wording_aside(ours) == _wording_aside(theirs), f"request {index} differs"


@pytest.fixture
def run_settings(settings: Any) -> Any:
    settings.PIWEB_AGENT_RETRY = RETRY
    settings.PIWEB_COMPACTION = COMPACTION
    settings.PIWEB_RUN_SUMMARIZER = "run"
    return settings


@pytest.mark.parametrize("api", ["openai-completions", "anthropic-messages"])
def test_runs_write_and_send_what_pi_writes_and_sends(api: str, tmp_path: Path, user, run_settings) -> None:
    outcome = _run_both(api, tmp_path, user(), _scenario())

    # The failed length recovery ends the last run as an error, as Pi ends its turn.
    statuses = [status for status, _ in outcome.runs]
    assert statuses == ["succeeded", "succeeded", "succeeded", "failed"], outcome.runs
    assert "Nothing to compact" in outcome.runs[-1][1]
    kinds = [(e["type"], e.get("message", {}).get("stopReason")) for e in outcome.web_written]
    for wanted in [("message", "error"), ("context_edit", None), ("compaction", None), ("message", "length")]:
        assert wanted in kinds  # the script reached every case
    # Two compactions: the overflow's, and the threshold's right after the answer whose usage passed it.
    assert kinds.count(("compaction", None)) == 2
    texts = [str(e.get("message", {}).get("content")) for e in outcome.web_written]
    past_threshold = next(i for i, text in enumerate(texts) if "Weigh the options." in text)
    assert outcome.web_written[past_threshold + 1]["type"] == "compaction"
    _assert_same(outcome)


@pytest.mark.parametrize("api", ["openai-completions", "anthropic-messages"])
def test_a_tool_call_is_written_as_pi_writes_it_and_the_run_ends_where_pi_runs_the_tool(
    api: str, tmp_path: Path, user, run_settings
) -> None:
    # Pi's CLI runs its tools itself (an unknown one answers "Tool … not found" and the loop goes on);
    # piweb runs none: its run ends at the call, and the page offers to continue in Pi. Up to the call
    # both must agree entry for entry and request for request.
    calls = [{"id": "call_7", "name": "read", "arguments": {"path": "calc.py", "offset": 1}}]
    answers = [script.reply("Reading it again.", tool_calls=calls), script.reply("It adds two numbers.")]
    outcome = _run_both(api, tmp_path, user(), [("Read calc.py once more.", answers)])

    assert outcome.runs == [("succeeded", "")]
    ours = outcome.web_written
    assert ours[-1]["message"]["stopReason"] == "toolUse"
    assert ours[-1]["message"]["content"][-1]["arguments"] == {"path": "calc.py", "offset": 1}
    assert ours == outcome.pi_written[: len(ours)]
    after = [e["message"]["role"] for e in outcome.pi_written[len(ours) :]]
    assert after == ["toolResult", "assistant"]  # Pi ran the tool and asked again
    assert len(outcome.web_requests) == 1
    assert _wording_aside(outcome.web_requests[0]) == _wording_aside(outcome.pi_requests[0])


@pytest.mark.parametrize("api", ["openai-completions", "anthropic-messages"])
@pytest.mark.parametrize("thinking", ["off", "medium"])
def test_reasoning_models_are_asked_to_think_as_pi_asks(
    api: str, thinking: str, tmp_path: Path, user, run_settings
) -> None:
    scenario = [("Think about it.", [script.reply("Done.", thinking="Hmm.")])]
    outcome = _run_both(api, tmp_path, user(), scenario, reasoning=True, thinking=thinking)
    _assert_same(outcome)
    last = outcome.web_requests[-1]
    if api == "anthropic-messages":
        assert last["thinking"]["type"] == ("disabled" if thinking == "off" else "enabled")
    else:
        assert last.get("reasoning_effort") == (None if thinking == "off" else "medium")


@pytest.mark.parametrize("api", ["openai-completions", "anthropic-messages"])
def test_an_attached_picture_is_stored_and_sent_as_pi_stores_and_sends_it(
    api: str, tmp_path: Path, user, run_settings
) -> None:
    scenario = [("What is in this picture?", [script.reply("A red square.")])]
    pictures = {0: {"dot.png": _png(3, 2)}}
    outcome = _run_both(api, tmp_path, user(), scenario, pictures=pictures)
    _assert_same(outcome)
    stored = outcome.web_written[-2]["message"]["content"]
    assert [b["type"] for b in stored] == ["text", "image"]
    assert base64.b64decode(stored[1]["data"]) == pictures[0]["dot.png"]


# -- failures Pi classifies by their text (issue 37) ----------------------------------------------------

QUOTA = script.error(
    429,
    "You exceeded your current quota, please check your plan and billing details.",
    type="insufficient_quota",
    code="insufficient_quota",
)


@pytest.mark.parametrize("api", ["openai-completions", "anthropic-messages"])
def test_an_exhausted_quota_is_final_as_in_pi(api: str, tmp_path: Path, user, run_settings) -> None:
    # A 429 saying the quota (or billing) is exhausted will fail again: one request, an error, no retry.
    scenario = [("Go on.", [QUOTA, script.reply("Answered on a second, paid request.")])]
    outcome = _run_both(api, tmp_path, user(), scenario)

    assert len(outcome.web_requests) == 1
    ((status, error),) = outcome.runs
    assert status == "failed" and "insufficient_quota" in error
    assert outcome.web_written[-1]["message"]["stopReason"] == "error"
    _assert_same(outcome)


@pytest.mark.parametrize("api", ["openai-completions", "anthropic-messages"])
@pytest.mark.parametrize("text", ["stream was interrupted", "Connection closed."])
def test_an_error_event_inside_a_stream_is_retried_as_in_pi(
    api: str, text: str, tmp_path: Path, user, run_settings
) -> None:
    # A gateway that loses its upstream mid-reply says so in an error event of a 200 stream.
    answers = [script.stream_error(text, type="api_error"), script.reply("Recovered.")]
    outcome = _run_both(api, tmp_path, user(), [("Go on.", answers)])

    assert outcome.runs == [("succeeded", "")]
    assert len(outcome.web_requests) == 2
    failed = next(e for e in outcome.web_written if e.get("message", {}).get("stopReason") == "error")
    assert text in failed["message"]["errorMessage"]
    assert outcome.web_written[-1]["message"]["content"] == [{"type": "text", "text": "Recovered."}]
    _assert_same(outcome)


@pytest.mark.parametrize("api", ["openai-completions", "anthropic-messages"])
@pytest.mark.parametrize("after", [0, 4])
def test_a_dropped_connection_is_stored_and_retried_as_in_pi(
    api: str, after: int, tmp_path: Path, user, run_settings
) -> None:
    answers = [script.dropped(after=after, text="one two three four five"), script.reply("Recovered.")]
    outcome = _run_both(api, tmp_path, user(), [("Go on.", answers)])

    assert outcome.runs == [("succeeded", "")]
    kinds = [(e["type"], e.get("message", {}).get("stopReason")) for e in outcome.web_written]
    assert ("message", "error") in kinds and ("context_edit", None) in kinds
    _assert_same(outcome)


def _stall_in_arguments(api: str, spec: script.Spec, pieces: int) -> script.Spec:
    """``spec`` stalling for good once ``pieces`` pieces of its tool call's arguments are sent."""
    render = script.render_openai if api == "openai-completions" else script.render_anthropic
    events = render(spec, {})
    deltas = [i for i, e in enumerate(events) if b"partial_json" in e or b'"function": {"arguments"' in e]
    return {**spec, "fault": {"type": "hang", "after": deltas[pieces], "seconds": 30}}


@pytest.mark.parametrize("api", ["openai-completions", "anthropic-messages"])
def test_a_reply_stopped_inside_a_tool_call_is_stored_as_pi_stores_it(
    api: str, tmp_path: Path, user, run_settings
) -> None:
    calls = [{"id": "call_9", "name": "read", "arguments": {"path": "calc.py", "offset": 1}}]
    # Stopped after '{"path": "calc.py", "off' of the arguments.
    stalled = _stall_in_arguments(api, script.reply("Let me look.", tool_calls=calls), 2)
    outcome = _run_both(api, tmp_path, user(), [("Read it.", [stalled])], aborted=frozenset({0}))

    assert [status for status, _ in outcome.runs] == ["aborted"]
    message = outcome.web_written[-1]["message"]
    assert message["stopReason"] == "aborted"
    assert message["content"][0] == {"type": "text", "text": "Let me look."}
    assert message["content"][-1]["name"] == "read"
    _assert_same(outcome)


# Argument numbers as a model may write them: JavaScript spells each as the number it is.
EXPONENT_ARGUMENTS = (
    '{"path": "calc.py", "offset": 1E0, "limit": 1e3, "scale": 2.50, "tiny": 1.5e-7, "huge": 1e21}'
)


@pytest.mark.parametrize("api", ["openai-completions", "anthropic-messages"])
def test_argument_numbers_are_stored_and_sent_as_javascript_writes_them(
    api: str, tmp_path: Path, user, run_settings
) -> None:
    # The starting session's call (written by Pi) is sent back with every request; the continuation's
    # own call is stored by each side.
    call = {"id": "call_5", "name": "read", "arguments": {}, "arguments_json": EXPONENT_ARGUMENTS}
    scenario = [
        ("Go on.", [script.reply("Fine.")]),
        ("Read it again.", [script.reply("Reading.", tool_calls=[call]), script.reply("Read.")]),
    ]
    outcome = _run_both(api, tmp_path, user(), scenario, start_arguments=EXPONENT_ARGUMENTS)

    stored = outcome.web_written[-1]["message"]["content"][-1]["arguments"]
    assert stored == {
        "path": "calc.py",
        "offset": 1,
        "limit": 1000,
        "scale": 2.5,
        "tiny": 1.5e-7,
        "huge": 1e21,
    }
    assert all(type(stored[key]) is int for key in ("offset", "limit"))
    _assert_same(outcome)


@pytest.mark.parametrize("api", ["openai-completions", "anthropic-messages"])
def test_a_stop_before_the_response_begins_is_stored_as_pi_stores_it(
    api: str, tmp_path: Path, user, run_settings
) -> None:
    # The provider takes the request and says nothing: Stop is pressed while waiting for its status.
    scenario = [("Go on.", [script.hang(30, after=0)]), ("Again.", [script.reply("Here.")])]
    outcome = _run_both(api, tmp_path, user(), scenario, aborted=frozenset({0}))

    assert [status for status, _ in outcome.runs] == ["aborted", "succeeded"]
    stopped = outcome.web_written[-3]["message"]
    assert stopped["stopReason"] == "aborted" and stopped["content"] == []
    _assert_same(outcome)


@pytest.mark.parametrize("api", ["openai-completions", "anthropic-messages"])
def test_a_refused_connection_is_stored_and_retried_as_in_pi(
    api: str, tmp_path: Path, user, run_settings
) -> None:
    # Nothing listens for the first prompt (every retry is refused too); the next one is answered.
    scenario = [("Go on.", []), ("Again.", [script.reply("Here.")])]
    outcome = _run_both(api, tmp_path, user(), scenario, refused=frozenset({0}))

    assert [status for status, _ in outcome.runs] == ["failed", "succeeded"]
    failed = [e for e in outcome.web_written if e.get("message", {}).get("stopReason") == "error"]
    assert len(failed) == 1 + RETRY["maxRetries"]
    assert "127.0.0.1:<port>" in failed[0]["message"]["errorMessage"]
    _assert_same(outcome)


@pytest.mark.parametrize("api", ["openai-completions", "anthropic-messages"])
@pytest.mark.parametrize(
    ("after", "keep_alive", "text"),
    [
        (0, False, "read ECONNRESET"),
        # A response that closes its connection ends with it; its chunked body had promised more.
        # (A reset in a response that keeps its connection open reads in Pi as the reset or as a close,
        # by the kernel's timing, so it is not compared.)
        (4, False, "Invalid EOF state"),
    ],
)
def test_a_reset_connection_is_stored_and_retried_as_in_pi(
    api: str, after: int, keep_alive: bool, text: str, tmp_path: Path, user, run_settings
) -> None:
    reset = script.reset(after=after, keep_alive=keep_alive, text="one two three four five")
    outcome = _run_both(api, tmp_path, user(), [("Go on.", [reset, script.reply("Recovered.")])])

    assert outcome.runs == [("succeeded", "")]
    failed = next(e for e in outcome.web_written if e.get("message", {}).get("stopReason") == "error")
    assert text in failed["message"]["errorMessage"]
    _assert_same(outcome)


@pytest.mark.parametrize("api", ["openai-completions", "anthropic-messages"])
def test_an_error_body_cut_short_is_stored_and_retried_as_in_pi(
    api: str, tmp_path: Path, user, run_settings
) -> None:
    # A 500 declares its body's length and closes the connection before sending it all.
    answers = [script.cut_error(500, "Internal server error"), script.reply("Recovered.")]
    outcome = _run_both(api, tmp_path, user(), [("Go on.", answers)])

    assert outcome.runs == [("succeeded", "")]
    failed = next(e for e in outcome.web_written if e.get("message", {}).get("stopReason") == "error")
    assert failed["message"]["errorMessage"].startswith("500 ")
    _assert_same(outcome)


ERROR_PAYLOAD = '{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}'


@pytest.mark.parametrize("event", [None, "ping", "content_block_delta"])
def test_an_anthropic_error_payload_counts_only_under_the_error_event_as_in_pi(
    event: str | None, tmp_path: Path, user, run_settings
) -> None:
    # Pi reads an error only from an event named "error"; the same payload under another name is passed
    # over and the reply goes on.
    head = f"event: {event}\n" if event else ""
    answers = [script.injected(f"{head}data: {ERROR_PAYLOAD}\n\n", text="one two three")]
    outcome = _run_both("anthropic-messages", tmp_path, user(), [("Go on.", answers)])

    assert outcome.runs == [("succeeded", "")]
    assert outcome.web_written[-1]["message"]["content"] == [{"type": "text", "text": "one two three"}]
    _assert_same(outcome)


@pytest.mark.parametrize("api", ["openai-completions", "anthropic-messages"])
@pytest.mark.parametrize("event", [None, "content_block_delta"])
def test_unreadable_stream_data_is_stored_as_pi_stores_it(
    api: str, event: str | None, tmp_path: Path, user, run_settings
) -> None:
    head = f"event: {event}\n" if event else ""
    answers = [
        script.injected(f": note\n{head}data: {{oops\n\n", text="one two three"),
        script.reply("Recovered."),
    ]
    outcome = _run_both(api, tmp_path, user(), [("Go on.", answers)])
    _assert_same(outcome)


@pytest.mark.parametrize("api", ["openai-completions", "anthropic-messages"])
@pytest.mark.parametrize(
    "body", ["<html><body>502 Bad Gateway</body></html>", '{"id": "chatcmpl-1", "choices": []}', ""]
)
def test_a_200_that_is_not_an_event_stream_is_stored_as_pi_stores_it(
    api: str, body: str, tmp_path: Path, user, run_settings
) -> None:
    answers = [script.garbage(body), script.reply("Recovered.")]
    outcome = _run_both(api, tmp_path, user(), [("Go on.", answers)])
    _assert_same(outcome)


def _is_summary(body: dict[str, Any]) -> bool:
    return _wording_aside(body) != body


@pytest.mark.parametrize("api", ["openai-completions", "anthropic-messages"])
def test_summaries_inside_a_run_think_at_the_sessions_level_as_pi_asks(
    api: str, tmp_path: Path, user, run_settings
) -> None:
    # An overflow compacted inside the run: the summary request carries the session's thinking level.
    scenario = [
        ("Now explain the parser in detail.", [script.reply(LONG)]),
        (
            "And the tokenizer?",
            [script.overflow(tokens=20000, window=WINDOW), script.reply("Tokenizer: fine.")],
        ),
    ]
    outcome = _run_both(api, tmp_path, user(), scenario, reasoning=True, thinking="medium")
    summaries = [body for body in outcome.web_requests if _is_summary(body)]
    assert summaries, "the overflow was compacted by the run's model"
    for body in summaries:
        if api == "anthropic-messages":
            assert body["thinking"]["type"] == "enabled"
            assert body["max_tokens"] > body["thinking"]["budget_tokens"]
        else:
            assert body.get("reasoning_effort") == "medium"
    _assert_same(outcome)


@pytest.mark.parametrize("api", ["openai-completions", "anthropic-messages"])
def test_branch_summaries_think_at_the_sessions_level_as_pi_asks(
    api: str, tmp_path: Path, user, run_settings
) -> None:
    scenario = [("Now explain the parser in detail.", [script.reply(LONG, thinking="Hmm.")])]
    outcome = _run_both(api, tmp_path, user(), scenario, reasoning=True, thinking="high", navigate_back=True)
    assert outcome.web_written[-1]["type"] == "branch_summary"
    summary = outcome.web_requests[-1]
    assert _is_summary(summary)
    if api == "anthropic-messages":
        assert summary["thinking"]["type"] == "enabled"
    else:
        assert summary.get("reasoning_effort") == "high"
    _assert_same(outcome)


SEALED = {
    "type": "reasoning.encrypted",
    "data": "gAAAAB-sealed-reasoning==",
    "id": "rs_1",
    "format": "openai-responses-v1",
    "index": 1,
}


def test_encrypted_reasoning_details_are_stored_and_replayed_as_pi_does(
    tmp_path: Path, user, run_settings
) -> None:
    # OpenRouter-style answers: readable reasoning in `reasoning` and its replay data in
    # `reasoning_details` (text deltas that merge, then an encrypted entry); then one with only the
    # encrypted entry. The next request must give the details back, not the readable text.
    details = [
        {"type": "reasoning.text", "text": "Weigh ", "format": "unknown", "index": 0},
        {"type": "reasoning.text", "text": "the options.", "index": 0},
        SEALED,
    ]
    scenario = [
        (
            "Think about it.",
            [
                script.reply(
                    "Done.",
                    thinking="Weigh the options.",
                    reasoning_field="reasoning",
                    reasoning_details=details,
                )
            ],
        ),
        ("Only the sealed part now.", [script.reply("Sealed.", reasoning_details=[SEALED])]),
        ("And again?", [script.reply("Again.")]),
    ]
    outcome = _run_both("openai-completions", tmp_path, user(), scenario, reasoning=True, thinking="medium")
    _assert_same(outcome)
    answers = [e["message"] for e in outcome.web_written if e.get("message", {}).get("role") == "assistant"]
    first, second = answers[-3]["content"][0], answers[-2]["content"][0]
    assert first["thinking"] == "Weigh the options."
    assert json.loads(first["thinkingSignature"])[-1] == SEALED
    assert second["thinking"] == "" and json.loads(second["thinkingSignature"]) == [SEALED]
    replayed = [m for m in outcome.web_requests[-1]["messages"] if m["role"] == "assistant"][-2:]
    assert [m["reasoning_details"][-1] for m in replayed] == [SEALED, SEALED]
    assert all("reasoning" not in m for m in replayed)


def test_redacted_thinking_is_stored_and_replayed_as_pi_does(tmp_path: Path, user, run_settings) -> None:
    scenario = [
        ("Think about it.", [script.reply("Done.", thinking="Hmm.", redacted="EqQBCgIYAhIM-redacted")]),
        ("Go on.", [script.reply("On.")]),
    ]
    outcome = _run_both("anthropic-messages", tmp_path, user(), scenario, reasoning=True, thinking="medium")
    _assert_same(outcome)
    answer = next(
        e["message"] for e in outcome.web_written if "Done." in str(e.get("message", {}).get("content"))
    )
    sealed = answer["content"][0]
    assert sealed["redacted"] is True and sealed["thinking"]  # a placeholder a reader sees, not nothing
    replayed = [m for m in outcome.web_requests[-1]["messages"] if m["role"] == "assistant"][-1]
    assert replayed["content"][0] == {"type": "redacted_thinking", "data": "EqQBCgIYAhIM-redacted"}


@pytest.mark.parametrize("api", ["openai-completions", "anthropic-messages"])
def test_a_text_only_model_is_sent_pis_note_in_place_of_each_picture(
    api: str, tmp_path: Path, user, run_settings
) -> None:
    scenario = [
        ("What is in these pictures?", [script.reply("I cannot see them.")]),
        ("And now?", [script.reply("Still not.")]),
    ]
    pictures = {0: {"dot.png": _png(3, 2), "box.png": _png(2, 2)}}
    outcome = _run_both(api, tmp_path, user(), scenario, pictures=pictures, text_only=True)
    _assert_same(outcome)
    stored = next(
        e["message"]["content"]
        for e in outcome.web_written
        if "pictures" in str(e.get("message", {}).get("content"))
    )
    assert [b["type"] for b in stored] == ["text", "image", "image"]  # the pictures are kept
    for body in outcome.web_requests:
        sent = json.dumps(body["messages"])
        assert '"image' not in sent  # no picture block in either format (image, image_url)
        # The two pictures went out as one note, in both turns.
        assert sent.count("(image omitted: model does not support images)") == 1


# -- replay rules: empty tool results, one thinking block, other models' turns -------------------------


def _messages(lines: list[dict[str, Any]], role: str) -> list[dict[str, Any]]:
    return [e["message"] for e in lines if e.get("type") == "message" and e["message"]["role"] == role]


@pytest.mark.parametrize("api", ["openai-completions", "anthropic-messages"])
@pytest.mark.parametrize("result", ["picture", "picture with empty text", "blank"])
def test_a_tool_result_without_text_is_sent_as_pi_sends_it(
    api: str, result: str, tmp_path: Path, user, run_settings
) -> None:
    # The starting session's read answered with a picture (alone, or after an empty text), or with
    # blank text.
    picture = {"type": "image", "data": base64.b64encode(_png(2, 2)).decode(), "mimeType": "image/png"}
    content = {
        "picture": [picture],
        "picture with empty text": [{"type": "text", "text": ""}, picture],
        "blank": [{"type": "text", "text": " \n"}],
    }[result]

    def edit(lines: list[dict[str, Any]]) -> None:
        (answer,) = _messages(lines, "toolResult")
        answer["content"] = content

    scenario = [("What did you see?", [script.reply("Something.")])]
    outcome = _run_both(api, tmp_path, user(), scenario, images=True, edit_start=edit)
    _assert_same(outcome)
    if api == "openai-completions":
        (sent,) = [m for m in outcome.web_requests[0]["messages"] if m["role"] == "tool"]
        assert sent["content"] == ("(no tool output)" if result == "blank" else "(see attached image)")


@pytest.mark.parametrize("api", ["openai-completions", "anthropic-messages"])
def test_reasoning_that_resumes_after_text_is_stored_and_replayed_as_pi_does(
    api: str, tmp_path: Path, user, run_settings
) -> None:
    # The model thinks, answers, thinks again and answers more. An OpenAI-compatible stream has one
    # thinking and one text block per answer in Pi; Anthropic's numbered blocks stay apart.
    resumed = [("thinking", " Then the grammar."), ("text", " And the grammar.")]
    scenario = [
        ("Think twice.", [script.reply("The tokens.", thinking="First the tokens.", resumed=resumed)]),
        ("Go on.", [script.reply("On.")]),
    ]
    outcome = _run_both(api, tmp_path, user(), scenario, reasoning=True, thinking="medium")
    _assert_same(outcome)
    answer = next(m for m in _messages(outcome.web_written, "assistant") if "tokens" in str(m["content"]))
    kinds = [b["type"] for b in answer["content"]]
    if api == "openai-completions":
        assert kinds == ["thinking", "text"]
        assert answer["content"][0]["thinking"] == "First the tokens. Then the grammar."
        assert answer["content"][1]["text"] == "The tokens. And the grammar."
    else:
        assert kinds == ["thinking", "text", "thinking", "text"]


LEGACY_SEALED = json.dumps({**SEALED, "id": "rs_other"})


def _from_another_model(api: str) -> Callable[[list[dict[str, Any]]], None]:
    """Make the starting session's first answer another provider's (with its reasoning, signatures and a
    Responses-style tool call id), and give the last answer, the session's model's own, unsigned and
    blank thinking."""
    other_api = "anthropic-messages" if api == "openai-completions" else "openai-completions"
    call_id = "call_1|fc_68a+item/=="

    def edit(lines: list[dict[str, Any]]) -> None:
        first, last = _messages(lines, "assistant")[0], _messages(lines, "assistant")[-1]
        (call,) = [b for b in first["content"] if b["type"] == "toolCall"]
        first.update(provider="elsewhere", api=other_api, model="other-model")
        first["content"] = [
            {"type": "thinking", "thinking": "Their plain reasoning."},
            {"type": "thinking", "thinking": "Their signed reasoning.", "thinkingSignature": "sig-other"},
            {"type": "thinking", "thinking": "Their field.", "thinkingSignature": "reasoning_content"},
            {"type": "text", "text": "Let me look.", "textSignature": "msg_other"},
            {**call, "id": call_id, "thoughtSignature": LEGACY_SEALED},
        ]
        (result,) = _messages(lines, "toolResult")
        result["toolCallId"] = call_id
        last["content"] = [
            {"type": "thinking", "thinking": "My own reasoning.", "thinkingSignature": "reasoning_content"},
            {"type": "thinking", "thinking": " \n"},
            *last["content"],
        ]

    return edit


@pytest.mark.parametrize("api", ["openai-completions", "anthropic-messages"])
def test_another_models_turns_are_replayed_as_pi_replays_them(
    api: str, tmp_path: Path, user, run_settings
) -> None:
    scenario = [("Go on.", [script.reply("On.")])]
    outcome = _run_both(api, tmp_path, user(), scenario, edit_start=_from_another_model(api))
    _assert_same(outcome)
    sent = json.dumps(outcome.web_requests[0]["messages"])
    assert "Their" not in sent and "rs_other" not in sent  # another model's reasoning stays behind
    assert "My own reasoning." in sent
    assert "call_1|" not in sent and "call_1_fc_68a_item___" in sent


@pytest.mark.parametrize("api", ["openai-completions", "anthropic-messages"])
def test_a_branch_summary_is_written_by_the_sessions_model_as_in_pi(
    api: str, tmp_path: Path, user, run_settings
) -> None:
    # Another model is piweb's default summarizer; the session's model still writes the summary.
    scenario = [("Now explain the parser in detail.", [script.reply(LONG)])]
    outcome = _run_both(api, tmp_path, user(), scenario, navigate_back=True, other_summarizer=True)
    assert outcome.web_written[-1]["type"] == "branch_summary"
    assert _is_summary(outcome.web_requests[-1])
    assert outcome.web_requests[-1]["model"] == MODEL
    _assert_same(outcome)


# -- random campaigns: `make fuzz-runs N=50 SEED=7` ------------------------------------------------------

FUZZ_N = int(os.environ.get("PIWEB_FUZZ_RUNS_N") or 1)
FUZZ_SEED = int(os.environ.get("PIWEB_FUZZ_RUNS_SEED") or 1)


def _random_answer(rng: random.Random, turn: int) -> list[script.Spec]:
    kind = rng.choice(["text", "text", "thinking", "transient", "overflow", "length", "big"])
    words = " ".join(
        rng.choice(["parse", "token", "grammar", "fix", "test", "é", "→"]) for _ in range(rng.randint(1, 80))
    )
    if kind == "thinking":
        return [script.reply(words, thinking=f"Consider {turn}.")]
    if kind == "transient":
        failure = rng.choice([script.server_error(), script.overloaded(), script.rate_limited()])
        return [failure] * rng.randint(1, 3) + [script.reply(words)]
    if kind == "overflow":
        return [script.overflow(tokens=WINDOW + 1000, window=WINDOW), script.reply(words)]
    if kind == "length":
        return [script.reply(words, stop="length"), script.reply(words)]
    if kind == "big":  # usage past the compaction threshold
        return [script.reply(words, usage={"input": WINDOW - rng.randint(100, 1500)})]
    return [script.reply(words)]


def _random_scenario(seed: int) -> list[tuple[str, list[script.Spec]]]:
    rng = random.Random(seed)
    steps = [
        (f"Prompt {turn}: {LONG[: rng.randint(10, 400)]}", _random_answer(rng, turn))
        for turn in range(rng.randint(2, 5))
    ]
    if rng.random() < 0.3:  # the last answer calls a tool: compared up to the call
        call = {
            "id": f"call_{seed}",
            "name": "read",
            "arguments": {"path": "calc.py", "limit": rng.randint(1, 9)},
        }
        steps.append(("Use the tool.", [script.reply("Reading.", tool_calls=[call]), script.reply("Read.")]))
    return steps


@pytest.mark.parametrize("seed", range(FUZZ_SEED, FUZZ_SEED + FUZZ_N))
def test_random_scripts_write_and_send_what_pi_does(seed: int, tmp_path: Path, user, run_settings) -> None:
    api = ("openai-completions", "anthropic-messages")[seed % 2]
    _assert_same(_run_both(api, tmp_path, user(), _random_scenario(seed)))
