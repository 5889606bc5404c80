"""Replace secrets in a stored line by markers such as ``[REDACTED:aws-access-key]``.

The line is changed as little as possible: when each secret appears in the stored text as JSON wrote
it, only those characters change and the rest of the line keeps its bytes; otherwise the line is written
again from its redacted value. Either way the redacted line parses to the same value.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from documents.secrets import Finding
from pitree.jsjson import js_stringify, parse_json
from pitree.redacted import MARKER_PREFIX, marker

__all__ = ["Redacted", "marker", "redact_line", "resolve"]


@dataclass(frozen=True, slots=True)
class Redacted:
    raw: str
    value: Any
    # (path, start of the replaced span, characters it grew by) per finding, for the findings after it.
    shifts: tuple[tuple[str, int, int], ...]
    # (secret, marker) pairs, for what was copied out of the line (a session's name).
    replaced: tuple[tuple[str, str], ...] = ()


def resolve(value: Any, path: str) -> Any:
    """Return the value a JSON pointer names in ``value`` (KeyError/IndexError when it names nothing)."""
    if path == "":
        return value
    for part in path.split("/")[1:]:
        key = part.replace("~1", "/").replace("~0", "~")
        value = value[int(key)] if isinstance(value, list) else value[key]
    return value


def _replace(value: Any, path: str, new: str) -> Any:
    if path == "":
        return new
    parts = [p.replace("~1", "/").replace("~0", "~") for p in path.split("/")[1:]]
    node = value
    for key in parts[:-1]:
        node = node[int(key)] if isinstance(node, list) else node[key]
    last = parts[-1]
    if isinstance(node, list):
        node[int(last)] = new
    else:
        node[last] = new
    return value


def redact_line(raw: str, findings: Sequence[Finding]) -> Redacted:
    """Return the line with every finding's span replaced by its marker (findings of this line only)."""
    value = parse_json(raw)
    secrets: list[tuple[str, str]] = []
    shifts: list[tuple[str, int, int]] = []
    # Later spans first, so earlier positions in the same string stay right.
    for finding in sorted(findings, key=lambda f: (f.path, -f.start)):
        text = resolve(value, finding.path)
        if not isinstance(text, str) or finding.end > len(text):
            continue  # the string changed since the scan (already redacted): nothing left to replace
        secret = text[finding.start : finding.end]
        if secret.startswith(MARKER_PREFIX):
            continue
        mark = marker(finding.kind)
        value = _replace(value, finding.path, text[: finding.start] + mark + text[finding.end :])
        secrets.append((secret, mark))
        shifts.append((finding.path, finding.start, len(mark) - len(secret)))
    if not secrets:
        return Redacted(raw, value, (), ())
    out = raw
    for secret, mark in secrets:
        encoded = js_stringify(secret)[1:-1]
        out = out.replace(encoded, mark)
    if parse_json(out) != value:
        # The secret was written with escapes JSON did not need, or also sits in a key: write it anew.
        out = js_stringify(value)
    return Redacted(out, value, tuple(shifts), tuple(secrets))
