"""Provider and transport failures come back as error messages with the provider's own text."""

from __future__ import annotations

import re
import threading
import time

import pytest

from compaction_app.domain import overflow
from providers.llm import ProviderConfig, complete, is_transient_error, stream_completion
from providers.llm import testserver as ts
from providers.llm.errors import transport_error_text
from tests.llm.conftest import user


def test_anthropic_prompt_too_long_keeps_the_exact_text(
    server: ts.ProviderServer, anthropic_config: ProviderConfig
) -> None:
    server.enqueue(ts.overflow(tokens=213462, window=200000))
    message = complete(anthropic_config, system=None, messages=[user("big")])
    assert message["stopReason"] == "error"
    # Pi's text for the same answer: the status, then the body as compact JSON.
    assert message["errorMessage"] == (
        '400 {"type":"error","error":{"type":"invalid_request_error",'
        '"message":"prompt is too long: 213462 tokens > 200000 maximum"}}'
    )
    assert message["content"] == []
    assert overflow.is_context_overflow(message, anthropic_config.context_window)


def test_openai_context_length_exceeded_keeps_the_exact_text(
    server: ts.ProviderServer, openai_config: ProviderConfig
) -> None:
    server.enqueue(ts.overflow(tokens=130000, window=128000))
    message = complete(openai_config, system=None, messages=[user("big")])
    # Pi's text for the same answer: the status, then the error object as compact JSON.
    assert message["errorMessage"] == (
        '400: {"message":"This model\'s maximum context length is 128000 tokens. However, your '
        'messages resulted in 130000 tokens. Please reduce the length of the messages.",'
        '"type":"invalid_request_error","param":null,"code":"context_length_exceeded"}'
    )
    assert overflow.is_context_overflow(message, openai_config.context_window)


def test_openai_exceeds_the_context_window(server: ts.ProviderServer, openai_config: ProviderConfig) -> None:
    text = "Your input exceeds the context window of this model. Please adjust your input and try again."
    server.enqueue(ts.error(400, text, type="invalid_request_error", code="context_length_exceeded"))
    message = complete(openai_config, system=None, messages=[user("big")])
    assert message["errorMessage"].startswith(f'400: {{"message":"{text}"')
    assert overflow.is_context_overflow(message)


def test_request_too_large_keeps_the_body_so_overflow_is_recognised(
    server: ts.ProviderServer, config: ProviderConfig
) -> None:
    server.enqueue(ts.too_large())
    message = complete(config, system=None, messages=[user("huge")])
    assert re.match(r"413:? \{", message["errorMessage"])
    assert "request_too_large" in message["errorMessage"]
    assert overflow.is_context_overflow(message)
    assert not is_transient_error(message)


@pytest.mark.parametrize(
    ("scripted", "status", "text"),
    [
        (ts.rate_limited(), 429, "Rate limit reached"),
        (ts.overloaded(), 529, "Overloaded"),
        (ts.server_error(), 500, "Internal server error"),
    ],
)
def test_transient_http_errors(
    server: ts.ProviderServer, config: ProviderConfig, scripted: ts.Spec, status: int, text: str
) -> None:
    server.enqueue(scripted)
    message = complete(config, system=None, messages=[user("hi")])
    assert message["stopReason"] == "error"
    assert message["errorMessage"].startswith(f"{status}")
    assert text in message["errorMessage"]
    assert is_transient_error(message)
    assert overflow.is_transient_error(message)
    assert not overflow.is_context_overflow(message)


@pytest.mark.parametrize("after", [0, 4])
def test_dropped_stream_is_an_error_not_a_crash(
    server: ts.ProviderServer, config: ProviderConfig, after: int
) -> None:
    server.enqueue(ts.dropped(after=after, text="one two three four five six seven"))
    message = complete(config, system=None, messages=[user("hi")])
    assert message["stopReason"] == "error"
    # Pi's words: the server closed before the response, or inside the chunked body.
    assert message["errorMessage"] == (
        "Connection error.: other side closed (UND_ERR_SOCKET)"
        if after == 0
        else "terminated: Response does not match the HTTP/1.1 protocol (Invalid EOF state)"
    )
    assert is_transient_error(message)
    assert overflow.is_transient_error(message)
    text = "".join(b["text"] for b in message["content"] if b["type"] == "text")
    assert "one two three four five six seven".startswith(text)


def test_stream_closed_cleanly_before_the_end_is_an_error(
    server: ts.ProviderServer, openai_config: ProviderConfig
) -> None:
    # Complete HTTP framing but no finish_reason: the provider stopped mid-turn.
    server.enqueue(ts.garbage('data: {"choices":[{"index":0,"delta":{"content":"Hal"}}]}\n\n'))
    message = complete(openai_config, system=None, messages=[user("hi")])
    assert message["stopReason"] == "error"
    assert message["errorMessage"] == "Stream ended without finish_reason"
    assert message["content"] == [{"type": "text", "text": "Hal"}]
    assert overflow.is_transient_error(message)


@pytest.mark.parametrize("after", [0, 3])
def test_hang_becomes_a_timeout_error(server: ts.ProviderServer, config: ProviderConfig, after: int) -> None:
    server.enqueue(ts.hang(30, after=after))
    started = time.monotonic()
    message = complete(config, system=None, messages=[user("hi")], timeout=0.5)
    assert time.monotonic() - started < 5
    assert message["stopReason"] == "error"
    assert "timed out after 0.5s" in message["errorMessage"]
    assert is_transient_error(message)


def _ended_early(config: ProviderConfig) -> str:
    """Pi's text for a stream that ended before the turn did, in this format."""
    if config.api == "anthropic-messages":
        return "Anthropic stream ended without a stop reason"
    return "Stream ended without finish_reason"


def test_a_body_with_no_events_ends_like_a_cut_stream(
    server: ts.ProviderServer, config: ProviderConfig
) -> None:
    # A gateway's page in a 200: Pi's readers find no events in it, and the stream ends before the turn.
    server.enqueue(ts.garbage())
    message = complete(config, system=None, messages=[user("hi")])
    assert message["stopReason"] == "error"
    assert message["errorMessage"] == _ended_early(config)
    assert message["content"] == []


def test_unreadable_event_data_is_stored_in_pis_words(
    server: ts.ProviderServer, config: ProviderConfig
) -> None:
    server.enqueue(ts.garbage("data: {not json\n\nevent: content_block_delta\ndata: {not json\n\n"))
    message = complete(config, system=None, messages=[user("hi")])
    assert message["stopReason"] == "error"
    if config.api == "anthropic-messages":
        # Only named message events are read; the first, unnamed, is passed over.
        assert message["errorMessage"] == (
            "Could not parse Anthropic SSE event content_block_delta: Expected property name or '}' in JSON"
            " at position 1 (line 1 column 2); data={not json;"
            " raw=event: content_block_delta\\ndata: {not json"
        )
    else:
        assert message["errorMessage"] == "Error reading response: malformed server-sent event JSON."


def test_unreachable_server_is_a_connection_error(config: ProviderConfig, server: ts.ProviderServer) -> None:
    port = server.url.rsplit(":", 1)[1]
    server.stop()
    message = complete(config, system=None, messages=[user("hi")], timeout=2)
    assert message["stopReason"] == "error"
    assert message["errorMessage"] == f"Connection error.: connect ECONNREFUSED 127.0.0.1:{port}"
    assert is_transient_error(message)


@pytest.mark.parametrize("after", [0, 3])
def test_abort_ends_a_stalled_call_promptly(
    server: ts.ProviderServer, config: ProviderConfig, after: int
) -> None:
    server.enqueue(ts.hang(30, after=after, text="never finished"))
    abort = threading.Event()
    threading.Timer(0.3, abort.set).start()
    started = time.monotonic()
    message = stream_completion(config, system=None, messages=[user("hi")], abort=abort, timeout=60)
    assert time.monotonic() - started < 3
    assert message["stopReason"] == "aborted"
    assert not is_transient_error(message)


def test_abort_before_the_call_sends_nothing(server: ts.ProviderServer, config: ProviderConfig) -> None:
    abort = threading.Event()
    abort.set()
    message = stream_completion(config, system=None, messages=[user("hi")], abort=abort)
    assert message["stopReason"] == "aborted"
    assert server.requests == []


def test_error_event_mid_stream_keeps_partial_text(server: ts.ProviderServer, config: ProviderConfig) -> None:
    server.enqueue(ts.stream_error("Overloaded", type="overloaded_error", after=3))
    message = complete(config, system=None, messages=[user("hi")])
    assert message["stopReason"] == "error"
    # Stored as Pi stores it: OpenAI's client keeps the error's message, Anthropic's the event's data.
    if config.api == "openai-completions":
        assert message["errorMessage"] == "Overloaded"
    else:
        assert (
            message["errorMessage"]
            == '{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}'
        )

    assert message["content"] and message["content"][-1]["type"] == "text"
    assert is_transient_error(message)
    assert overflow.is_transient_error(message)


_IN_BODY = "terminated: Response does not match the HTTP/1.1 protocol (Invalid EOF state)"


@pytest.mark.parametrize(
    ("kind", "errno", "responded", "keep_alive", "framed", "text"),
    [
        (
            "ConnectError",
            "ECONNREFUSED",
            False,
            False,
            True,
            "Connection error.: connect ECONNREFUSED 10.0.0.7:80",
        ),
        ("ReadError", "ECONNRESET", False, False, True, "Connection error.: read ECONNRESET"),
        (
            "RemoteProtocolError",
            None,
            False,
            False,
            True,
            "Connection error.: other side closed (UND_ERR_SOCKET)",
        ),
        # Inside a response that keeps its connection: what the socket said.
        ("ReadError", "ECONNRESET", True, True, True, "terminated: read ECONNRESET"),
        ("RemoteProtocolError", None, True, True, True, "terminated: other side closed (UND_ERR_SOCKET)"),
        # Inside one that closes it: its end, which a chunked or sized body had not reached...
        ("ReadError", "ECONNRESET", True, False, True, _IN_BODY),
        # ...and which ends a body read to the close cleanly.
        ("ReadError", "ECONNRESET", True, False, False, None),
    ],
)
def test_connection_failures_read_as_pis_client_reports_them(
    kind: str, errno: str | None, responded: bool, keep_alive: bool, framed: bool, text: str | None
) -> None:
    got = transport_error_text(
        "OpenAI",
        kind,
        "detail",
        responded=responded,
        errno=errno,
        peer="10.0.0.7:80",
        keep_alive=keep_alive,
        framed=framed,
    )
    assert got == text
