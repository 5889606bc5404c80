"""The pure rules: where secrets are in a line, and how a line reads once they are redacted."""

from __future__ import annotations

import json

from documents.secrets import scan_value
from governance.domain.redaction import redact_line

AWS_KEY = "AKIAIOSFODNN7EXAMPLE"


def test_secrets_are_found_in_any_string_with_their_position() -> None:
    value = {
        "type": "message",
        "message": {"content": [{"type": "toolCall", "arguments": {"command": f"export K={AWS_KEY}"}}]},
        "note": "nothing here",
    }
    [finding] = scan_value(value)
    assert (finding.kind, finding.path) == ("aws-access-key", "/message/content/0/arguments/command")
    text = value["message"]["content"][0]["arguments"]["command"]  # type: ignore[index]
    assert text[finding.start : finding.end] == AWS_KEY


def test_a_private_key_is_the_whole_block_and_a_cut_block_runs_to_the_end() -> None:
    whole = "key:\n-----BEGIN EC PRIVATE KEY-----\nMHcCAQEE\n-----END EC PRIVATE KEY-----\nafter"
    [found] = scan_value({"t": whole})
    assert whole[found.start : found.end] == whole[5 : whole.index("\nafter")]
    cut = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAA"
    [found] = scan_value({"t": cut})
    assert (found.start, found.end) == (0, len(cut))


def test_ordinary_transcript_text_has_no_findings() -> None:
    text = "commit 3f2a9c1d4e5b6a7980fedcba9876543210abcdef; uuid 123e4567-e89b-12d3-a456-426614174000"
    digest = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    assert scan_value({"t": text, "sha": digest}) == []


def test_redaction_changes_only_the_secrets_characters_of_the_line() -> None:
    raw = '{"type":"message","n":1.0,"t":"a ' + AWS_KEY + " b " + AWS_KEY + '","u":"\\u00e9"}'
    found = scan_value(json.loads(raw))
    result = redact_line(raw, found)
    mark = "[REDACTED:aws-access-key]"
    assert result.raw == '{"type":"message","n":1.0,"t":"a ' + mark + " b " + mark + '","u":"\\u00e9"}'
    assert json.loads(result.raw)["t"].count("[REDACTED:aws-access-key]") == 2


def test_a_secret_written_with_needless_escapes_is_still_removed() -> None:
    escaped = "".join(f"\\u{ord(c):04x}" for c in AWS_KEY)
    raw = '{"t":"key ' + escaped + '"}'
    result = redact_line(raw, scan_value(json.loads(raw)))
    assert json.loads(result.raw) == {"t": "key [REDACTED:aws-access-key]"}
    assert AWS_KEY not in result.raw and escaped not in result.raw


def test_redacting_twice_changes_nothing_more() -> None:
    raw = json.dumps({"t": f"x {AWS_KEY}"})
    found = scan_value(json.loads(raw))
    once = redact_line(raw, found)
    assert redact_line(once.raw, found).raw == once.raw


def test_a_secret_split_across_two_strings_is_not_one_finding_and_positions_stay_per_string() -> None:
    assert scan_value({"a": "AKIA", "b": "IOSFODNN7EXAMPLE"}) == []
    value = {"id": "a1b2c3d4", "t": "x", "msg": f"first line\n{AWS_KEY}", "z": f"{AWS_KEY} again"}
    found = scan_value(value)
    assert [(f.path, f.start, f.end) for f in found] == [("/msg", 11, 31), ("/z", 0, 20)]


def test_a_stored_redaction_is_recognised_as_the_original_line_and_nothing_else() -> None:
    from pitree.redacted import is_redaction_of

    original = '{"id":"t1","t":"key ' + AWS_KEY + ' and \\"quoted\\" text"}'
    stored = redact_line(original, scan_value(json.loads(original))).raw
    assert stored != original and is_redaction_of(stored, original)
    assert not is_redaction_of(stored, original.replace("text", "texts"))
    assert not is_redaction_of(original, original)  # no marker: only byte equality counts
    assert not is_redaction_of(stored, original.replace(AWS_KEY, 'x","y":"z'))  # not across strings
