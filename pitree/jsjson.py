"""JSON as JavaScript reads and writes it.

Pi writes session files with ``JSON.stringify`` and measures text in UTF-16 units, so a port that
must produce identical files and identical token estimates needs the same number spelling, key order
and string lengths.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

__all__ = [
    "INVALID",
    "JS_WHITESPACE",
    "is_array_index",
    "js_number",
    "js_stringify",
    "js_truthy",
    "parse_json",
    "utf16_len",
]


# What String.prototype.trim removes.
JS_WHITESPACE = (
    "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000\ufeff"
)


class _Invalid:
    __slots__ = ()

    def __repr__(self) -> str:
        return "INVALID"


INVALID: Any = _Invalid()

_MAX_SAFE = 2**53


def _parse_int(text: str) -> int | float:
    value = int(text)
    # JavaScript numbers are doubles: larger integers lose precision exactly as JSON.parse loses it.
    return value if -_MAX_SAFE <= value <= _MAX_SAFE else float(value)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


_decoder = json.JSONDecoder(parse_int=_parse_int, parse_constant=_reject_constant)


def parse_json(text: str) -> Any:
    """Return the value of ``text`` as ``JSON.parse`` would, or ``INVALID``."""
    try:
        return _decoder.decode(text)
    except (ValueError, RecursionError):
        return INVALID


def js_truthy(value: Any) -> bool:
    """Return JavaScript truthiness (empty arrays and objects are truthy, NaN is not)."""
    if value is None or value is False:
        return False
    if isinstance(value, bool):
        return True
    if isinstance(value, int | float):
        return value == value and value != 0
    if isinstance(value, str):
        return value != ""
    return True


def utf16_len(text: str) -> int:
    """Return the length of ``text`` in UTF-16 code units, as ``String.prototype.length``."""
    if text.isascii():
        return len(text)
    # Two bytes a unit; a lone surrogate (JSON allows one) is one unit, as in JavaScript.
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def js_number(value: float | int) -> str:
    """Spell a number as ``Number.prototype.toString`` does (``1.0`` → ``1``, ``1e21`` → ``1e+21``)."""
    if isinstance(value, bool):
        raise TypeError("booleans are not numbers here")
    if isinstance(value, int):
        if -_MAX_SAFE <= value <= _MAX_SAFE:
            return str(value)
        value = float(value)
    if math.isnan(value) or math.isinf(value):
        return "null"  # what JSON.stringify writes for NaN and Infinity
    if value == 0:
        return "0"
    sign = "-" if value < 0 else ""
    digits, exponent = _shortest_digits(abs(value))
    k = len(digits)
    n = exponent  # value = 0.digits × 10^n
    if k <= n <= 21:
        return sign + digits + "0" * (n - k)
    if 0 < n <= 21:
        return sign + digits[:n] + "." + digits[n:]
    if -6 < n <= 0:
        return sign + "0." + "0" * (-n) + digits
    e = n - 1
    exp = f"e{'+' if e >= 0 else '-'}{abs(e)}"
    if k == 1:
        return sign + digits + exp
    return sign + digits[0] + "." + digits[1:] + exp


def _shortest_digits(value: float) -> tuple[str, int]:
    """Return (digits, n) with value = 0.digits × 10^n, using the shortest round-tripping digits."""
    mantissa, _, exp_text = repr(value).partition("e")
    exponent = int(exp_text) if exp_text else 0
    whole, _, frac = mantissa.partition(".")
    if frac == "0":
        frac = ""
    digits = (whole + frac).lstrip("0")
    lead_zeros = len(whole + frac) - len((whole + frac).lstrip("0"))
    n = len(whole) + exponent - lead_zeros
    digits = digits.rstrip("0") or "0"
    return digits, n


_ARRAY_INDEX = re.compile(r"^(?:0|[1-9][0-9]{0,9})$")


def is_array_index(key: str) -> bool:
    """Return whether JavaScript orders ``key`` first in an object, as an integer index."""
    return bool(_ARRAY_INDEX.match(key)) and int(key) < 2**32 - 1


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _string(text: str) -> str:
    out = json.dumps(text, ensure_ascii=False)
    if _LONE_SURROGATE.search(out):
        # Well-formed JSON.stringify escapes lone surrogates instead of emitting invalid UTF-16.
        out = _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", out)
    return out


_FLOAT_SAME_LOW, _FLOAT_SAME_HIGH = 1e-4, 1e16


def _same_in_python(value: Any, depth: int = 0) -> bool:
    """Whether Python's own encoder spells ``value`` as JSON.stringify does: no integer-like keys (which
    JavaScript orders first), no integers past 2**53, no floats Python spells otherwise (whole floats
    such as ``1.0``, NaN, exponents), no undefined fields."""
    if depth > 200:
        return False  # deep nesting takes the explicit stack below, never Python's recursion limit
    kind = type(value)
    if kind is str or value is None or kind is bool:
        return True
    if kind is int:
        return -_MAX_SAFE <= value <= _MAX_SAFE
    if kind is float:
        # Both print the shortest round-tripping digits; only the layout differs outside this range.
        return _FLOAT_SAME_LOW <= abs(value) < _FLOAT_SAME_HIGH and not value.is_integer()
    if kind is dict:
        for key, child in value.items():
            if type(key) is not str or (key[:1].isdigit() and is_array_index(key)):
                return False
            if not _same_in_python(child, depth + 1):
                return False
        return True
    if kind is list or kind is tuple:
        return all(_same_in_python(child, depth + 1) for child in value)
    return False


def js_stringify(value: Any) -> str:
    """Serialize like ``JSON.stringify(value)`` (compact; integer-like keys first)."""
    if _same_in_python(value):
        # The common case, in C: a payload's plain strings, integers and ordinary floats.
        out = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        if not _LONE_SURROGATE.search(out):
            return out
    return stringify_walk(value)


def stringify_walk(value: Any) -> str:
    """Serialize like ``JSON.stringify(value)`` one value at a time (any shape ``js_stringify`` takes)."""
    parts: list[str] = []
    # An explicit stack instead of recursion: payloads may nest deeper than Python's recursion limit.
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, _Token):
            parts.append(item.text)
            continue
        if item is None:
            parts.append("null")
        elif item is True:
            parts.append("true")
        elif item is False:
            parts.append("false")
        elif isinstance(item, str):
            parts.append(_string(item))
        elif isinstance(item, int | float):
            parts.append(js_number(item))
        elif isinstance(item, dict):
            keys = list(item.keys())
            if any(is_array_index(k) for k in keys):
                index_keys = sorted((k for k in keys if is_array_index(k)), key=int)
                keys = index_keys + [k for k in keys if not is_array_index(k)]
            parts.append("{")
            pending: list[Any] = []
            first = True
            for key in keys:
                child = item[key]
                if child is _UNDEFINED:
                    continue
                pending.append(_Token(("" if first else ",") + _string(key) + ":"))
                pending.append(child)
                first = False
            pending.append(_Token("}"))
            stack.extend(reversed(pending))
        elif isinstance(item, list | tuple):
            parts.append("[")
            pending = []
            for i, child in enumerate(item):
                if i:
                    pending.append(_Token(","))
                pending.append(None if child is _UNDEFINED else child)
            pending.append(_Token("]"))
            stack.extend(reversed(pending))
        else:
            raise TypeError(f"cannot serialize {type(item).__name__}")
    return "".join(parts)


class _Token:
    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text


class _Undefined:
    __slots__ = ()

    def __repr__(self) -> str:
        return "undefined"


_UNDEFINED: Any = _Undefined()
UNDEFINED = _UNDEFINED
