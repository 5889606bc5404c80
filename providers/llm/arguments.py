"""A tool call's arguments as Pi 1.6.0 stores them, from the JSON text the provider streamed.

A call that ended is parsed once, strictly (after repairing raw control characters and bad escapes in
strings): text that is not a JSON object gives ``{}`` and an ``argumentsError`` holding the parser's
message and the text received. A call cut off before its end keeps what its text shows so far, read
leniently: unterminated strings and containers show what they hold, a member whose key or value has not
started is left out. (Pi refreshes very large open containers lazily while they stream; the value
shown here is always that of the whole text.)
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Final

from pitree.jsjson import INVALID, JS_WHITESPACE, parse_json
from pitree.jsonerrors import json_parse_error

__all__ = ["parse_json_with_repair", "parse_tool_call_arguments", "partial_tool_call_arguments"]

_ESCAPES: Final = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_HEX: Final = "0123456789abcdefABCDEF"
_DELIMITERS: Final = ' \t\n\r,:{}[]"'
_LITERALS: Final = (("true", True), ("false", False), ("null", None))
# An unfinished number longer than this is not shown until it ends.
_MAX_PENDING_SCALAR: Final = 64
_NUMBER: Final = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_NUMBER_WITHOUT_EXPONENT_DIGITS: Final = re.compile(r"(-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?)[eE][+-]?")
# Characters of a string up to its closing quote or next escape.
_STRING_RUN: Final = re.compile(r'[^"\\]*')


def _repair(text: str) -> str:
    """Escape raw control characters inside strings and double backslashes that start no valid escape."""
    out: list[str] = []
    in_string = False
    i = 0
    while i < len(text):
        char = text[i]
        if not in_string:
            out.append(char)
            in_string = char == '"'
        elif char == '"':
            out.append(char)
            in_string = False
        elif char == "\\":
            following = text[i + 1 : i + 2]
            digits = text[i + 2 : i + 6]
            if following == "u" and len(digits) == 4 and all(d in _HEX for d in digits):
                out.append(f"\\u{digits}")
                i += 5
            elif following and following in _ESCAPES:
                out.append(f"\\{following}")
                i += 1
            else:
                out.append("\\\\")
        elif char < " ":
            named = {"\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
            out.append(named.get(char, f"\\u{ord(char):04x}"))
        else:
            out.append(char)
        i += 1
    return "".join(out)


def parse_json_with_repair(text: str) -> tuple[Any, str | None]:
    """The value of ``text``, or of its repair when only that parses; else ``INVALID`` and the error of
    the last try (Node's JSON.parse message). Pi reads tool arguments and Anthropic's events this way."""
    error = json_parse_error(text)
    if error is None:
        return parse_json(text), None
    repaired = _repair(text)
    if repaired == text:
        return INVALID, error
    error = json_parse_error(repaired)
    return (parse_json(repaired), None) if error is None else (INVALID, error)


def parse_tool_call_arguments(text: str) -> tuple[dict[str, Any], str | None]:
    """Return the arguments of a finished call and Pi's ``argumentsError`` (None when they parse)."""
    if not text.strip(JS_WHITESPACE):
        return {}, None
    value, error = parse_json_with_repair(text)
    if error is None and not isinstance(value, dict):
        error = "Tool arguments must be a JSON object"
    if error is not None or value is INVALID:
        return {}, f"{error}\n\nReceived arguments:\n{text}"
    return value, None


# -- a call cut off while streaming -------------------------------------------------------------------


@dataclass
class _Frame:
    container: dict[str, Any] | list[Any]
    slot: tuple[str, Any] | None  # where the container sits in its parent: ("root"|"member"|"element", key)
    key: str | None = None
    phase: str = "key"  # object: key, colon, value, comma; array: value, comma


@dataclass
class _String:
    target: str  # "key" or "value"
    slot: tuple[str, Any] | None
    parts: list[str] = field(default_factory=list)
    escape: str = ""  # an escape begun and not yet complete: held back

    def text(self) -> str:
        return _joined("".join(self.parts))


@dataclass
class _Lenient:
    """Reads text left to right and keeps the value it shows so far."""

    stack: list[_Frame] = field(default_factory=list)
    root: Any = INVALID
    done: bool = False
    string: _String | None = None
    scalar: str = ""
    scalar_slot: tuple[str, Any] | None = None

    def slot(self) -> tuple[str, Any] | None:
        """Where a value starting now goes; None when nothing may start here."""
        if not self.stack:
            return ("root", None) if self.root is INVALID else None
        frame = self.stack[-1]
        if isinstance(frame.container, list):
            return ("element", len(frame.container))
        if frame.phase in ("value", "colon") and frame.key is not None:
            return ("member", frame.key)
        return None

    def place(self, slot: tuple[str, Any] | None, value: Any) -> None:
        if slot is None:
            return
        kind, where = slot
        if kind == "root":
            self.root = value
            return
        container = self.stack[-1].container
        if isinstance(container, list):
            if where == len(container):
                container.append(value)
            else:
                container[where] = value
        else:
            container[where] = value

    def value_ended(self) -> None:
        if not self.stack:
            self.done = self.root is not INVALID  # text after the root value is ignored
        else:
            self.stack[-1].phase = "comma"

    def read(self, text: str) -> None:
        i = 0
        while i < len(text) and not self.done:
            if self.string is not None:
                i = self._read_string(text, i)
            elif self.scalar:
                i = self._read_scalar(text, i)
            else:
                self._structural(text[i])
                i += 1

    def _structural(self, char: str) -> None:
        frame = self.stack[-1] if self.stack else None
        if char in " \t\n\r":
            return
        if char == '"':
            if frame is not None and isinstance(frame.container, dict) and frame.phase in ("key", "comma"):
                self.string = _String("key", None)
            else:
                slot = self.slot()
                self.string = _String("value", slot)
                self.place(slot, "")
        elif char in "{[":
            slot = self.slot()
            container: dict[str, Any] | list[Any] = {} if char == "{" else []
            self.place(slot, container)
            self.stack.append(_Frame(container, slot, phase="key" if char == "{" else "value"))
        elif char in "}]":
            if self.stack:
                self.stack.pop()
                self.value_ended()
        elif char == ":":
            if frame is not None and isinstance(frame.container, dict) and frame.phase == "colon":
                frame.phase = "value"
        elif char == ",":
            if frame is not None:
                frame.phase = "value" if isinstance(frame.container, list) else "key"
        else:
            self.scalar = char
            self.scalar_slot = self.slot()

    def _read_string(self, text: str, i: int) -> int:
        state = self.string
        assert state is not None
        while i < len(text):
            if state.escape == "\\":
                char = text[i]
                state.escape = ""
                if char in _ESCAPES:
                    state.parts.append(_ESCAPES[char])
                    i += 1
                    continue
                if char == "u":
                    state.escape = "\\u"
                    i += 1
                    continue
                state.parts.append("\\")  # not an escape: the backslash is text, the character reads as usual
            elif state.escape:
                char = text[i]
                if char in _HEX:
                    state.escape += char
                    i += 1
                    if len(state.escape) == 6:
                        state.parts.append(chr(int(state.escape[2:], 16)))
                        state.escape = ""
                    continue
                state.parts.append(state.escape)
                state.escape = ""
            match = _STRING_RUN.match(text, i)
            assert match is not None
            state.parts.append(match.group())
            i = match.end()
            if i == len(text):
                break
            if text[i] == "\\":
                state.escape = "\\"
                i += 1
                continue
            self.string = None  # the closing quote
            if state.target == "key":
                if self.stack:
                    self.stack[-1].key = state.text()
                    self.stack[-1].phase = "colon"
            else:
                self.place(state.slot, state.text())
                self.value_ended()
            return i + 1
        return i

    def _read_scalar(self, text: str, i: int) -> int:
        end = i
        while end < len(text) and text[end] not in _DELIMITERS:
            end += 1
        self.scalar += text[i:end]
        if end < len(text):
            token, slot = self.scalar, self.scalar_slot
            self.scalar, self.scalar_slot = "", None
            value = _scalar(token)
            if value is not INVALID:
                self.place(slot, value)
            self.value_ended()
        return end

    def snapshot(self) -> Any:
        if self.string is not None and self.string.target == "value":
            self.place(self.string.slot, self.string.text())
        if self.scalar and self.scalar_slot is not None and len(self.scalar) <= _MAX_PENDING_SCALAR:
            value = _pending_scalar(self.scalar)
            if value is not INVALID:
                self.place(self.scalar_slot, value)
        if self.stack and self.stack[0].slot is not None and self.stack[0].slot[0] == "root":
            return self.stack[0].container
        return None if self.root is INVALID else self.root


def _joined(text: str) -> str:
    """Surrogate pairs written as two escapes become their character."""
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")


def _is_number(token: str) -> bool:
    return _NUMBER.fullmatch(token) is not None


def _scalar(token: str) -> Any:
    for literal, value in _LITERALS:
        if token == literal:
            return value
    return parse_json(token) if _is_number(token) else INVALID


def _pending_scalar(token: str) -> Any:
    for literal, value in _LITERALS:
        if literal.startswith(token):
            return value
    if _is_number(token):
        return parse_json(token)
    # An exponent without its digits yet shows the number before it.
    mantissa = _NUMBER_WITHOUT_EXPONENT_DIGITS.fullmatch(token)
    return INVALID if mantissa is None else parse_json(mantissa.group(1))


def partial_tool_call_arguments(text: str) -> dict[str, Any]:
    """Return what the arguments of a call cut off at ``text`` show: an object, else ``{}``."""
    reader = _Lenient()
    reader.read(text)
    value = reader.snapshot()
    return value if isinstance(value, dict) else {}
