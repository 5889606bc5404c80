"""Pi and piweb answer the same prompts from the same session against the same scripted provider.

Pi 1.6.0's CLI writes the starting session (a tool call answered by Pi's own ``read`` tool, then a
reply), piweb imports that file, and both continue it with the same prompts and the same scripted
answers: a transient 500 that is retried, a context overflow that is compacted (summaries written by the
run's own model, answered from a side queue so their number is compared too) and retried, a thinking
answer past the compaction threshold, and an answer cut off at the output limit. The entries each wrote
and every request each sent are compared field by field. No compat settings are configured on either
side: both detect them from the host.

Differences allowed, and why:
- entry ``id``/``parentId``/``targetId``/``firstKeptEntryId`` are random on both sides: they are compared
  as positions, which checks the shape of the tree;
- entry, message and ``systemMessage`` ``timestamp`` and message ``durationMs``: clocks;
- the wording of the summarization prompt and instructions: piweb words them itself. The serialized
  conversation inside a summary request, and every other request field, must be equal.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from compaction_app.domain.prompts import SUMMARIZATION_SYSTEM_PROMPT
from compaction_app.models import LLMProvider
from piweb.agent import services
from piweb.llm import testserver as script
from piweb.llm.testserver import ProviderServer
from sessions_app import services as session_services
from tests.factories import entries

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


def _pi_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()[1:] if line.strip()]


def _scenario() -> list[tuple[str, list[script.Spec]]]:
    return [
        ("Now explain the parser in detail.", [script.server_error(), script.reply(LONG)]),
        (
            "And the tokenizer?",
            [script.overflow(tokens=20000, window=WINDOW), script.reply("Tokenizer: fine.")],
        ),
        # A thinking answer whose usage passes the threshold: auto-compaction after the turn.
        (
            "Think it over.",
            [
                script.reply("Thought it over.", thinking="Weigh the options.", usage={"input": 14500}),
            ],
        ),
        # An answer cut off at the output limit.
        ("Write it all out.", [script.reply("Part one", stop="length"), script.reply("Part two")]),
    ]


@pytest.mark.parametrize("api", ["openai-completions", "anthropic-messages"])
def test_runs_write_and_send_what_pi_writes_and_sends(api: str, tmp_path: Path, user, settings) -> None:
    settings.PIWEB_AGENT_RETRY = RETRY
    settings.PIWEB_COMPACTION = COMPACTION
    settings.PIWEB_RUN_SUMMARIZER = "run"
    # Summary requests are answered from their own queue: how many a compaction makes is compared too.
    summaries = (PI_SUMMARY_SYSTEM_START, SUMMARIZATION_SYSTEM_PROMPT)
    with (
        ProviderServer(side_prompts=summaries) as pi_server,
        ProviderServer(side_prompts=summaries) as web_server,
    ):
        pi_server.enqueue_side(*[script.reply(SUMMARY)] * 10)
        web_server.enqueue_side(*[script.reply(SUMMARY)] * 10)
        pi = PiCli(
            tmp_path,
            provider_url=pi_server.url,
            api=api,
            context_window=WINDOW,
            max_tokens=MAX_TOKENS,
            compaction=COMPACTION,
            retry=RETRY,
        )
        (pi.work / "calc.py").write_text("def add(a, b):\n    return a + b\n")
        # The starting session, written by Pi itself.
        pi_server.enqueue(
            script.tool_call("read", {"path": "calc.py"}, text="Let me look."), script.reply(LONG)
        )
        file = pi.prompt("Look at calc.py and fix the parser.")
        start = file.read_text()
        started = len(pi_server.requests)

        owner = user()
        session = session_services.import_jsonl(owner=owner, data=start.encode()).session
        base_url = f"{web_server.url}/v1" if api == "openai-completions" else web_server.url
        provider = LLMProvider.objects.create(
            name="fake",
            api=api,
            base_url=base_url,
            model_id=MODEL,
            provider=PROVIDER,
            context_window=WINDOW,
            max_output_tokens=MAX_TOKENS,
            api_key="k",
            cost_input=3,
            cost_output=15,
            cost_cache_read=0.3,
            cost_cache_write=3.75,
        )
        outcomes: list[tuple[str, str]] = []
        for prompt, answers in _scenario():
            pi_server.enqueue(*answers)
            pi.prompt(prompt, session=file)
            web_server.enqueue(*answers)
            run = services.start_run(session=session, user=owner, prompt=prompt, provider=provider)
            run.refresh_from_db()
            outcomes.append((run.status, run.error))

        pi_requests = [r.body for r in pi_server.requests[started:]]
        web_requests = [r.body for r in web_server.requests]
        pi_written = _normalize(_pi_lines(file))
        web_written = _normalize(entries(session))

    # The failed length recovery ends the last run as an error, as Pi ends its turn.
    assert [status for status, _ in outcomes] == ["succeeded", "succeeded", "succeeded", "failed"], outcomes
    assert "Nothing to compact" in outcomes[-1][1]
    kinds = [(e["type"], e.get("message", {}).get("stopReason")) for e in web_written]
    for wanted in [("message", "error"), ("context_edit", None), ("compaction", None), ("message", "length")]:
        assert wanted in kinds  # the script reached every case
    assert web_written == pi_written
    assert len(web_requests) == len(pi_requests)
    for index, (ours, theirs) in enumerate(zip(web_requests, pi_requests, strict=True)):
        assert _wording_aside(ours) == _wording_aside(theirs), f"request {index} differs"
