"""Reading and writing Pi session files (JSONL, version 3), with Pi's tolerance and migrations.

A file is a header line then one entry per line. Loading never fails on a bad line: the line is
skipped and reported with its number (the first ``REPORTED_SKIPPED_LINES`` of them, and how many in all).
The verbatim text of every kept line is retained so an unmigrated file exports byte for byte.

Pi keeps a line that parses to a truthy value which is not an object (``42``, ``"text"``, ``[1,2]``,
``true``) as an entry without an id, and ``load_text`` does too (Pi lists it as a root of its tree).
piweb's tree, paths and contexts never use such a line, so an import (``scan_lines``, ``objects_only``)
reports it as skipped instead of storing it: millions of them cost a counter, not millions of rows.
"""

from __future__ import annotations

import heapq
import secrets
from array import array
from collections.abc import Callable, Container, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from pitree.context_sums import OwnColumns
from pitree.context_sums import own_sums as _own_sums
from pitree.entries import Entry, entry_from_value
from pitree.jsjson import INVALID, JS_WHITESPACE, js_stringify, js_truthy, parse_json
from pitree.searchable import search_text
from pitree.storable import check_fields
from pitree.tool_uses import Facts, says_anything, tool_facts

CURRENT_VERSION = 3

REPORTED_SKIPPED_LINES = 500
NOT_JSON = "not valid JSON"
EMPTY_VALUE = "empty JSON value"
NOT_AN_OBJECT = "not a JSON object"

__all__ = [
    "CURRENT_VERSION",
    "EMPTY_VALUE",
    "NOT_AN_OBJECT",
    "NOT_JSON",
    "REPORTED_SKIPPED_LINES",
    "LoadedFile",
    "ParsedLine",
    "SkipReport",
    "SkippedLine",
    "generate_entry_id",
    "is_object_line",
    "iter_lines",
    "load_text",
    "objects_only",
    "serialize_entry",
    "skip_reason",
]


@dataclass(frozen=True, slots=True)
class SkippedLine:
    line_no: int  # 1-based, as an editor shows it
    reason: str
    text: str  # the first characters of the line, for the report


@dataclass(slots=True)
class SkipReport:
    """The lines a load left out: the first ``REPORTED_SKIPPED_LINES`` by number, and how many in all.

    Bounded whatever the file holds, so millions of bad lines cost neither memory nor a huge answer.
    """

    lines: list[SkippedLine] = field(default_factory=list)
    total: int = 0

    def add(self, line_no: int, reason: str, text: str) -> None:
        self.total += 1
        if len(self.lines) < REPORTED_SKIPPED_LINES:
            self.lines.append(SkippedLine(line_no, reason, text[:120]))

    @property
    def unlisted(self) -> int:
        """Skipped lines beyond those listed."""
        return self.total - len(self.lines)


@dataclass(slots=True)
class ParsedLine:
    line_no: int
    value: Any  # the parsed JSON value; dicts are mutated only by migration
    raw: str  # the verbatim line without its "\n"; re-serialized after a migration


@dataclass(slots=True)
class LoadedFile:
    """The result of loading one session file's text."""

    valid: bool
    header: dict[str, Any] | None
    entries: list[ParsedLine]  # every parsed line after the header, stray headers included
    parsed_line_count: int  # parsed lines including the header (Pi's fileEntries length)
    raw_version: Any  # header.version as written (None when absent)
    migrated: bool
    missing_final_newline: bool
    skipped: SkipReport = field(default_factory=SkipReport)
    header_raw: str = ""
    error: str | None = None
    generated_ids: dict[str, int] = field(default_factory=dict)  # v1 migration: new id → parsed-line index

    @property
    def file_effect(self) -> str:
        """Name what Pi would do to the file on disk when opening it."""
        if not self.valid:
            return "none"
        if self.migrated:
            return "rewritten"
        if self.missing_final_newline:
            return "newline_appended"
        return "none"


def iter_lines(text: str) -> Iterator[tuple[int, str]]:
    """Yield (1-based line number, line) split on "\\n" only, as Pi splits."""
    start = 0
    line_no = 1
    length = len(text)
    while start < length:
        end = text.find("\n", start)
        if end < 0:
            yield line_no, text[start:]
            return
        yield line_no, text[start:end]
        start = end + 1
        line_no += 1


def _is_falsy_value(value: Any) -> bool:
    return not js_truthy(value) and not isinstance(value, dict | list)


def _pi_drops(value: Any) -> str | None:
    """Why Pi's loader drops a parsed line (None: Pi keeps it as an entry)."""
    if value is INVALID:
        return NOT_JSON
    if _is_falsy_value(value):
        return EMPTY_VALUE
    return None


def skip_reason(value: Any) -> str | None:
    """Why an import or a sync leaves a parsed line out of storage (None: it is stored).

    Beyond what Pi drops, a value that is not an object: it can take no part in the tree.
    """
    reason = _pi_drops(value)
    if reason is None and not isinstance(value, dict):
        return NOT_AN_OBJECT
    return reason


def is_object_line(raw: str) -> bool:
    """Return whether a stored (valid JSON) line is an object: only objects start with "{"."""
    return raw.lstrip(JS_WHITESPACE).startswith("{")


def load_text(text: str) -> LoadedFile:
    """Parse a session file's text with Pi's tolerance, then migrate it to version 3."""
    parsed: list[ParsedLine] = []
    skipped = SkipReport()
    for line_no, line in iter_lines(text):
        if not line.strip(JS_WHITESPACE):
            continue
        value = parse_json(line)
        reason = _pi_drops(value)
        if reason is not None:
            skipped.add(line_no, reason, line)
            continue
        parsed.append(ParsedLine(line_no, value, line))
    missing_newline = bool(text) and not text.endswith("\n")
    if not parsed:
        return LoadedFile(
            False,
            None,
            [],
            0,
            None,
            False,
            missing_newline,
            skipped,
            error="no session header: the file has no JSON lines",
        )
    first = parsed[0].value
    if not (isinstance(first, dict) and first.get("type") == "session" and isinstance(first.get("id"), str)):
        where = f"line {parsed[0].line_no}"
        return LoadedFile(
            False,
            None,
            [],
            len(parsed),
            None,
            False,
            missing_newline,
            skipped,
            error=f"invalid session header at {where}: the first JSON line must be "
            '{"type":"session", "id": <string>, ...}',
        )
    raw_version = first.get("version")
    generated: dict[str, int] = {}
    migrated = _migrate([p.value for p in parsed], generated)
    if migrated:
        for p in parsed:
            p.raw = js_stringify(p.value)
    return LoadedFile(
        valid=True,
        header=first,
        entries=parsed[1:],
        parsed_line_count=len(parsed),
        raw_version=raw_version,
        migrated=migrated,
        missing_final_newline=missing_newline,
        skipped=skipped,
        header_raw=parsed[0].raw,
        generated_ids=generated,
    )


def objects_only(loaded: LoadedFile) -> LoadedFile:
    """Return the load without its entries that are not objects, reported as skipped (for storing it).

    Applied after migration: Pi's v1 migration counts every parsed line when it resolves an index.
    """
    others = [p for p in loaded.entries if not isinstance(p.value, dict)]
    if not others:
        return loaded
    report = SkipReport()
    dropped = (SkippedLine(p.line_no, NOT_AN_OBJECT, p.raw[:120]) for p in others)
    for line in heapq.merge(loaded.skipped.lines, dropped, key=lambda item: item.line_no):
        report.add(line.line_no, line.reason, line.text)
    # The merged listing is exact: the first lines of the union are among the first lines of each.
    report.total = loaded.skipped.total + len(others)
    return replace(loaded, entries=[p for p in loaded.entries if isinstance(p.value, dict)], skipped=report)


def _version_number(version: Any) -> float | None:
    """Return the header version as JavaScript's relational operators would see it."""
    if version is None:
        return 1.0
    if isinstance(version, bool):
        return float(version)
    if isinstance(version, int | float):
        return float(version)
    if isinstance(version, str):
        text = version.strip()
        if not text:
            return 0.0
        try:
            return float(text)
        except ValueError:
            return None  # NaN: every comparison is false
    return None


def _migrate(values: list[Any], generated: dict[str, int]) -> bool:
    """Migrate parsed values in place; return whether the file would be rewritten."""
    header = values[0]
    version = _version_number(header.get("version", None))
    if version is not None and version >= CURRENT_VERSION:
        return False
    if version is not None and version < 2:
        _migrate_v1_to_v2(values, generated)
    if version is not None and version < 3:
        _migrate_v2_to_v3(values)
    return True


def _migrate_v1_to_v2(values: list[Any], generated: dict[str, int]) -> None:
    previous: str | None = None
    for index_in_file, value in enumerate(values):
        if not isinstance(value, dict):
            continue
        if value.get("type") == "session":
            value["version"] = 2
            continue
        value["id"] = generate_entry_id(generated)
        generated[value["id"]] = index_in_file
        value["parentId"] = previous
        previous = value["id"]
        if value.get("type") == "compaction" and "firstKeptEntryIndex" in value:
            index = value["firstKeptEntryIndex"]
            if isinstance(index, int | float) and not isinstance(index, bool):
                target = (
                    values[int(index)] if float(index).is_integer() and 0 <= index < len(values) else None
                )
                if isinstance(target, dict) and target.get("type") != "session":
                    if "id" in target:
                        value["firstKeptEntryId"] = target["id"]
                    else:
                        # The target has no id yet (it lies later in the file): Pi stores undefined.
                        value.pop("firstKeptEntryId", None)
                del value["firstKeptEntryIndex"]


def _migrate_v2_to_v3(values: list[Any]) -> None:
    for value in values:
        if not isinstance(value, dict):
            continue
        if value.get("type") == "session":
            value["version"] = 3
        elif value.get("type") == "message":
            message = value.get("message")
            if isinstance(message, dict) and message.get("role") == "hookMessage":
                message["role"] = "custom"


def generate_entry_id(taken: Container[str]) -> str:
    """Return a new 8-hex-digit entry id not in ``taken``."""
    for _ in range(100):
        candidate = secrets.token_hex(4)
        if candidate not in taken:
            return candidate
    import uuid

    return str(uuid.uuid4())


def serialize_entry(value: Any) -> str:
    """Return the line Pi would write for ``value`` (without the newline)."""
    return js_stringify(value)


_LIGHT_MESSAGE_KEYS = ("role", "provider", "model")
_LIGHT_KEYS: dict[str, tuple[str, ...]] = {
    "label": ("targetId", "label"),
    "session_info": ("name",),
    "compaction": ("firstKeptEntryId",),
    "model_change": ("provider", "modelId"),
    "thinking_level_change": ("thinkingLevel",),
}


# The values a shared light payload may be keyed by (what JSON decodes to, less floats and containers).
_SHAREABLE = frozenset((str, int, bool, type(None)))


class _LightPayloads:
    """Build the small payloads an import keeps; identical ones are shared, so 100k messages cost little."""

    def __init__(self) -> None:
        self._shared: dict[tuple[Any, ...], dict[str, Any]] = {}

    def __call__(self, value: Any) -> Any:
        if not isinstance(value, dict):
            return value
        kind = value.get("type")
        out = {k: value[k] for k in _LIGHT_KEYS.get(str(kind), ()) if k in value}
        message = value.get("message")
        if isinstance(message, dict):
            out["message"] = {k: message[k] for k in _LIGHT_MESSAGE_KEYS if k in message}
        if kind == "message" and len(out) == 1:
            light = out["message"]
            key = (kind, *(light.get(k) for k in _LIGHT_MESSAGE_KEYS), len(light))
            for part in key:
                if type(part) not in _SHAREABLE:
                    return out
            return self._shared.setdefault(key, out)
        return out


@dataclass(slots=True)
class ScannedFile:
    """A streamed scan: the load report, each kept line's entry (with a light payload) and line number.

    ``kept_bytes`` is the UTF-8 size of the kept lines (without their newlines): what storing them takes.
    """

    loaded: LoadedFile
    entries: list[Entry]
    line_numbers: Sequence[int]
    needs_migration: bool
    kept_bytes: int = 0


def scan_lines(lines: Iterable[bytes]) -> ScannedFile:
    """Scan a file line by line, keeping only what the tree needs; version < 3 asks for a full load.

    The verbatim lines are not kept: an importer reads the file a second time (``iter_kept_lines``), so
    memory stays well below the file's size. Only objects are kept (``objects_only``): the other lines
    after the header are counted in the skip report.
    """
    import orjson

    light = _LightPayloads()
    kinds: dict[str, str] = {}
    entries: list[Entry] = []
    line_numbers = array("q")  # 8 bytes a line, not an int object each
    skipped = SkipReport()
    header: dict[str, Any] | None = None
    header_raw = ""
    last_ended = True
    count = 0
    kept_bytes = 0
    for line_no, chunk in enumerate(lines, start=1):
        last_ended = chunk.endswith(b"\n")
        value, text = _parse_chunk(chunk, orjson.loads, orjson.JSONDecodeError)
        if value is _BLANK:
            continue
        reason = _pi_drops(value)
        if reason is not None:
            skipped.add(line_no, reason, text)
            continue
        count += 1
        if header is None:
            if not (
                isinstance(value, dict)
                and value.get("type") == "session"
                and isinstance(value.get("id"), str)
            ):
                loaded = LoadedFile(
                    False,
                    None,
                    [],
                    count,
                    None,
                    False,
                    not last_ended,
                    skipped,
                    error=f"invalid session header at line {line_no}: the first JSON line must be "
                    '{"type":"session", "id": <string>, ...}',
                )
                return ScannedFile(loaded, [], [], False)
            header, header_raw = value, text
            version = _version_number(value.get("version"))
            if version is None or version < CURRENT_VERSION:
                return ScannedFile(
                    LoadedFile(True, header, [], count, value.get("version"), True, False), [], [], True
                )
            continue
        if not isinstance(value, dict):
            skipped.add(line_no, NOT_AN_OBJECT, text)
            continue
        kept_bytes += len(text.encode("utf-8", "surrogatepass"))
        # The payload kept below is light, so the key fields are measured here, on the whole line.
        check_fields(value, f"line {line_no}")
        entry = entry_from_value(len(entries), value)
        # One string per entry type, not one per line (100k "message"s held 5.6 MB).
        kind = entry.type if entry.type is None else kinds.setdefault(entry.type, entry.type)
        entries.append(
            Entry(seq=entry.seq, id=entry.id, parent_id=entry.parent_id, type=kind, payload=light(value))
        )
        line_numbers.append(line_no)
    if header is None:
        loaded = LoadedFile(
            False,
            None,
            [],
            0,
            None,
            False,
            not last_ended,
            skipped,
            error="no session header: the file has no JSON lines",
        )
        return ScannedFile(loaded, [], [], False)
    loaded = LoadedFile(
        True, header, [], count, header.get("version"), False, not last_ended, skipped, header_raw=header_raw
    )
    return ScannedFile(loaded, entries, line_numbers, False, kept_bytes)


_BLANK: Any = object()  # a blank line; distinct from a "null" line, which is reported as skipped


def _parse_chunk(chunk: bytes, fast: Any, fast_error: type[Exception]) -> tuple[Any, str]:
    """Return (value, text) for one raw line; value _BLANK for a blank line, INVALID for bad JSON."""
    text = (chunk[:-1] if chunk.endswith(b"\n") else chunk).decode("utf-8", errors="replace")
    if not text.strip(JS_WHITESPACE):
        return _BLANK, text
    try:
        return fast(text), text
    except fast_error:
        return parse_json(text), text  # the stdlib parser accepts what JSON.parse accepts beyond orjson


def iter_kept_lines(
    lines: Iterable[bytes],
    line_numbers: Sequence[int],
    tools: Callable[[int, str | None, Facts], None] | None = None,
    own: OwnColumns | None = None,
) -> Iterator[tuple[str, Any, str]]:
    """Yield (verbatim text, timestamp, search text) of the kept lines on a second read of the same file.

    What needs the whole line, which the scan's light payloads do not keep, is worked out as each line
    is read (an importer copies the lines meanwhile, and waits on the database more than it works):
    ``tools`` is told (seq, entry id, facts) of each line that says anything about tools, and ``own``
    gets each line's share of the context's running sums.
    """
    import orjson

    wanted = iter(line_numbers)
    target = next(wanted, None)
    seq = 0  # the kept line's place: its entry's seq
    for line_no, chunk in enumerate(lines, start=1):
        if target is None:
            return
        if line_no != target:
            continue
        value, text = _parse_chunk(chunk, orjson.loads, orjson.JSONDecodeError)
        stamp = value.get("timestamp") if isinstance(value, dict) else None
        if tools is not None or own is not None:
            entry = entry_from_value(seq, value)
            if tools is not None and says_anything(facts := tool_facts(value)):
                tools(seq, entry.id, facts)
            if own is not None:
                own.append(_own_sums(entry))
        seq += 1
        yield text, stamp, search_text(value)
        target = next(wanted, None)
