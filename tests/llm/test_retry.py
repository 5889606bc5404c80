"""Retrying transient failures against the scripted server, with recorded instead of real waits."""

from __future__ import annotations

import threading

from providers.llm import ProviderConfig, complete, retry_transient
from providers.llm import testserver as ts
from tests.llm.conftest import user


def call(config: ProviderConfig) -> dict[str, object]:
    return complete(config, system="Summarize.", messages=[user("history")], timeout=2)


def test_retry_succeeds_after_rate_limit_and_overload(
    server: ts.ProviderServer, config: ProviderConfig
) -> None:
    server.enqueue(ts.rate_limited(), ts.overloaded(), ts.reply("## Goal\nShip it."))
    waits: list[float] = []
    retries: list[tuple[int, float, str]] = []

    message = retry_transient(
        lambda: call(config),
        attempts=3,
        base_delay=0.5,
        sleep=waits.append,
        on_retry=lambda attempt, delay, failed: retries.append((attempt, delay, failed["errorMessage"])),
    )

    assert message["stopReason"] == "stop"
    assert message["content"] == [{"type": "text", "text": "## Goal\nShip it."}]
    assert waits == [0.5, 1.0]
    assert [(a, d) for a, d, _ in retries] == [(1, 0.5), (2, 1.0)]
    assert retries[0][2].startswith("429") and retries[1][2].startswith("529")
    assert len(server.requests) == 3


def test_retry_gives_up_after_the_attempt_limit(server: ts.ProviderServer, config: ProviderConfig) -> None:
    server.enqueue(ts.server_error(), ts.server_error(), ts.server_error(), ts.reply("too late"))
    waits: list[float] = []
    message = retry_transient(lambda: call(config), attempts=3, base_delay=1, sleep=waits.append)
    assert message["stopReason"] == "error"
    assert message["errorMessage"].startswith("500")
    assert waits == [1, 2]
    assert len(server.requests) == 3


def test_dropped_stream_is_retried(server: ts.ProviderServer, config: ProviderConfig) -> None:
    server.enqueue(ts.dropped(after=2), ts.reply("whole"))
    message = retry_transient(lambda: call(config), base_delay=0, sleep=lambda _s: None)
    assert message["content"] == [{"type": "text", "text": "whole"}]


def test_overflow_is_not_retried(server: ts.ProviderServer, config: ProviderConfig) -> None:
    server.enqueue(ts.overflow(), ts.reply("unused"))
    waits: list[float] = []
    message = retry_transient(lambda: call(config), sleep=waits.append)
    assert message["stopReason"] == "error"
    assert waits == []
    assert len(server.requests) == 1


def test_success_is_not_retried(server: ts.ProviderServer, config: ProviderConfig) -> None:
    server.enqueue(ts.reply("once"), ts.reply("twice"))
    message = retry_transient(lambda: call(config), sleep=lambda _s: None)
    assert message["content"][0]["text"] == "once"
    assert len(server.requests) == 1


def test_abort_during_the_wait_stops_retrying(server: ts.ProviderServer, config: ProviderConfig) -> None:
    server.enqueue(ts.rate_limited(), ts.reply("unused"))
    abort = threading.Event()
    threading.Timer(0.1, abort.set).start()
    message = retry_transient(lambda: call(config), base_delay=30, abort=abort)
    assert message["errorMessage"].startswith("429")
    assert len(server.requests) == 1
