"""``JSON.parse`` errors as Node 22 words them.

Pi stores the parser's message when a tool call's arguments are not JSON (``argumentsError``), so a
port that must write the same entries needs the same words and positions. Positions, lines and columns
count UTF-16 units, as JavaScript strings do; lines break at ``\\n``, ``\\r`` and ``\\r\\n``.
"""

from __future__ import annotations

from typing import Final

__all__ = ["json_parse_error"]

_WHITESPACE: Final = " \t\n\r"
_ESCAPES: Final = '"\\/bfnrt'
_HEX: Final = "0123456789abcdefABCDEF"
_DIGITS: Final = "0123456789"
# Around an unexpected character the message quotes up to this many units on each side.
_CONTEXT: Final = 10
# Sources passed whole to String(), which JSON.parse names instead of quoting a character.
_SPECIAL: Final = ("NaN", "Infinity", "undefined", "[object Object]")


def _joined(units: str) -> str:
    """UTF-16 units back to text: pairs become their character, a lone surrogate stays alone."""
    data = b"".join(ord(unit).to_bytes(2, "little") for unit in units)
    return data.decode("utf-16-le", "surrogatepass")


class _Fail(Exception):
    pass


class _Parser:
    def __init__(self, text: str) -> None:
        # One Python character per UTF-16 unit, so indexes are JavaScript positions.
        data = text.encode("utf-16-le", "surrogatepass")
        self.units = [chr(int.from_bytes(data[i : i + 2], "little")) for i in range(0, len(data), 2)]
        self.text = "".join(self.units)
        self.pos = 0
        self.message = ""

    # -- reporting ---------------------------------------------------------------------------------

    def _located(self, what: str) -> str:
        """``what`` at the current position; most messages say where in the JSON, one names it already."""
        line, last_break, i = 1, 0, 0
        while i < self.pos:
            if self.text[i] == "\r" and i < self.pos - 1 and self.text[i + 1] == "\n":
                i += 1
            if self.text[i] in "\r\n":
                line += 1
                last_break = i + 1
            i += 1
        where = "" if what.endswith("JSON") else " in JSON"
        return f"{what}{where} at position {self.pos} (line {line} column {1 + i - last_break})"

    def fail(self, what: str | None = None) -> _Fail:
        """The error at the current position: ``what``, else the one the character there calls for."""
        if what is not None:
            self.message = self._located(what)
        elif self.pos >= len(self.text):
            self.message = "Unexpected end of JSON input"
        elif self.text[self.pos] in _DIGITS + "-":
            self.message = self._located("Unexpected number")
        elif self.text[self.pos] == '"':
            self.message = self._located("Unexpected string")
        elif self.text in _SPECIAL:
            self.message = f'"{self.text}" is not valid JSON'
        else:
            self.message = self._unexpected_token()
        return _Fail()

    def _unexpected_token(self) -> str:
        pos, length = self.pos, len(self.text)
        char = _joined(self.text[pos])
        if length < 2 * _CONTEXT + 1:
            return f"Unexpected token '{char}', \"{_joined(self.text)}\" is not valid JSON"
        if pos < _CONTEXT:
            quoted = _joined(self.text[: pos + _CONTEXT])
            return f"Unexpected token '{char}', \"{quoted}\"... is not valid JSON"
        if pos < length - _CONTEXT:
            quoted = _joined(self.text[pos - _CONTEXT : pos + _CONTEXT])
            return f"Unexpected token '{char}', ...\"{quoted}\"... is not valid JSON"
        return f"Unexpected token '{char}', ...\"{_joined(self.text[pos - _CONTEXT :])}\" is not valid JSON"

    # -- scanning ----------------------------------------------------------------------------------

    def peek(self) -> str:
        while self.pos < len(self.text) and self.text[self.pos] in _WHITESPACE:
            self.pos += 1
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def expect(self, char: str, what: str) -> None:
        if self.peek() != char:
            raise self.fail(what)
        self.pos += 1

    def document(self) -> None:
        self.value()
        if self.peek():
            raise self.fail("Unexpected non-whitespace character after JSON")

    def value(self) -> None:
        char = self.peek()
        if char == '"':
            self.string()
        elif char and char in _DIGITS + "-":
            self.number()
        elif char == "{":
            self.pos += 1
            self.members()
        elif char == "[":
            self.pos += 1
            self.elements()
        elif char in ("t", "f", "n") and char:
            self.literal({"t": "true", "f": "false", "n": "null"}[char])
        else:
            raise self.fail()

    def members(self) -> None:
        if self.peek() == "}":
            self.pos += 1
            return
        if self.peek() != '"':
            raise self.fail("Expected property name or '}'")
        while True:
            self.string()
            self.expect(":", "Expected ':' after property name")
            self.value()
            if self.peek() == ",":
                self.pos += 1
                if self.peek() != '"':
                    raise self.fail("Expected double-quoted property name")
                continue
            self.expect("}", "Expected ',' or '}' after property value")
            return

    def elements(self) -> None:
        if self.peek() == "]":
            self.pos += 1
            return
        while True:
            self.value()
            if self.peek() == ",":
                self.pos += 1
                continue
            self.expect("]", "Expected ',' or ']' after array element")
            return

    def literal(self, word: str) -> None:
        for expected in word:
            if self.pos >= len(self.text):
                raise self.fail()
            if self.text[self.pos] != expected:
                raise self.fail()
            self.pos += 1

    def string(self) -> None:
        self.pos += 1  # the opening quote
        text = self.text
        while True:
            if self.pos >= len(text):
                raise self.fail("Unterminated string")
            char = text[self.pos]
            if char == '"':
                self.pos += 1
                return
            if char < " ":
                raise self.fail("Bad control character in string literal")
            if char == "\\":
                self.pos += 1
                if self.pos >= len(text):
                    raise self.fail()
                escaped = text[self.pos]
                if escaped == "u":
                    for _ in range(4):
                        self.pos += 1
                        if self.pos >= len(text) or text[self.pos] not in _HEX:
                            raise self.fail("Bad Unicode escape")
                elif escaped not in _ESCAPES:
                    # Past Latin-1 the parser no longer names the escape, only the character.
                    raise self.fail("Bad escaped character" if escaped <= "\xff" else None)
            self.pos += 1

    def number(self) -> None:
        text = self.text

        def digit() -> bool:
            return self.pos < len(text) and text[self.pos] in _DIGITS

        if text[self.pos] == "-":
            self.pos += 1
            if not digit():
                raise self.fail("No number after minus sign")
        if text[self.pos] == "0":
            self.pos += 1
            if digit():
                raise self.fail("Unexpected number")
        else:
            while digit():
                self.pos += 1
        if self.pos < len(text) and text[self.pos] == ".":
            self.pos += 1
            if not digit():
                raise self.fail("Unterminated fractional number")
            while digit():
                self.pos += 1
        if self.pos < len(text) and text[self.pos] in "eE":
            self.pos += 1
            if self.pos < len(text) and text[self.pos] in "+-":
                self.pos += 1
            if not digit():
                raise self.fail("Exponent part is missing a number")
            while digit():
                self.pos += 1


def json_parse_error(text: str) -> str | None:
    """Return the message ``JSON.parse(text)`` throws, or None when ``text`` is JSON."""
    parser = _Parser(text)
    try:
        parser.document()
    except _Fail:
        return parser.message
    return None
