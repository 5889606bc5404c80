"""The pure rules of hooks: signatures, backoff, the Slack message, event choices (no database)."""

from __future__ import annotations

import random

import pytest

from hooks.domain import events, slack
from hooks.domain.backoff import Backoff
from hooks.domain.signing import signature, verify


def test_a_signature_checks_out_only_for_its_secret_body_and_a_recent_time() -> None:
    body = b'{"event":"ping"}'
    header = signature("s3cret", 1_700_000_000, body)
    assert header.startswith("sha256=") and len(header) == len("sha256=") + 64
    assert verify("s3cret", "1700000000", body, header, now=1_700_000_010)
    assert not verify("other", "1700000000", body, header, now=1_700_000_010)
    assert not verify("s3cret", "1700000000", body + b" ", header, now=1_700_000_010)
    assert not verify("s3cret", "1700000001", body, header, now=1_700_000_010)
    assert not verify("s3cret", "1700000000", body, header, now=1_700_001_000)  # replayed much later
    assert not verify("s3cret", "soon", body, header, now=1_700_000_010)


def test_backoff_doubles_to_its_cap_with_jitter_and_gives_up_after_a_day() -> None:
    rules = Backoff()
    rng = random.Random(7)
    delays = [rules.delay(n, rng) for n in range(1, 12)]
    assert 24 <= delays[0] <= 30 and 48 <= delays[1] <= 60
    assert all(2880 <= d <= 3600 for d in delays[7:])
    assert len({round(rules.delay(3, random.Random(s))) for s in range(20)}) > 1  # not in lockstep
    assert not rules.exhausted(23 * 3600) and rules.exhausted(24 * 3600)


def test_the_slack_message_escapes_what_a_title_holds() -> None:
    payload = {
        "event": "mention",
        "actor": {"name": "ann"},
        "session": {"title": "<!channel> & co", "url": "https://piweb.example/sessions/3/"},
        "data": {"mentioned": ["bob"], "text": "look <here>"},
    }
    message = slack.message(payload)
    assert (
        message["text"]
        == "ann mentioned @bob in <https://piweb.example/sessions/3/|&lt;!channel&gt; &amp; co>"
    )
    assert message["blocks"][1]["text"]["text"] == "> look &lt;here&gt;"


def test_a_hook_chooses_known_events_only() -> None:
    assert events.check_events(["run.failed", "mention"]) == ["mention", "run.failed"]
    for wrong in ([], ["run.exploded"], "mention", [3]):
        with pytest.raises(events.InvalidEvents):
            events.check_events(wrong)
