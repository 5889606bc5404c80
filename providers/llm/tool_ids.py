"""Tool call ids made acceptable to another provider, as Pi rewrites them when a turn changes model.

Ids are measured and cut in UTF-16 units and every unit outside ``[A-Za-z0-9_-]`` counts once, as in
JavaScript, so a long or exotic id is rewritten to exactly the text Pi sends.
"""

from __future__ import annotations

from pitree.jsjson import utf16_len

__all__ = ["for_anthropic", "for_openai_completions", "short_hash"]

_SAFE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")
_OPENAI_LIMIT = 40  # OpenAI's longest tool call id
_ANTHROPIC_LIMIT = 64
_MASK = 0xFFFFFFFF


def _units(text: str) -> list[int]:
    """The UTF-16 code units of ``text``."""
    data = text.encode("utf-16-le", "surrogatepass")
    return [int.from_bytes(data[i : i + 2], "little") for i in range(0, len(data), 2)]


def _sanitized(text: str) -> str:
    """Each UTF-16 unit outside the safe set becomes ``_`` (a character beyond the BMP is two)."""
    return "".join(c if c in _SAFE else "_" * (2 if ord(c) > 0xFFFF else 1) for c in text)


def _head(text: str, units: int) -> str:
    """``text.slice(0, units)`` for JavaScript strings (a cut pair leaves its lone first half)."""
    if utf16_len(text) <= units:
        return text
    return text.encode("utf-16-le", "surrogatepass")[: units * 2].decode("utf-16-le", "surrogatepass")


def _imul(a: int, b: int) -> int:
    return (a * b) & _MASK


def _base36(value: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while True:
        value, rest = divmod(value, 36)
        out = digits[rest] + out
        if not value:
            return out


def short_hash(text: str) -> str:
    """Pi's short non-cryptographic hash of a string (two 32-bit lanes over its UTF-16 units, each
    written in base 36)."""
    h1, h2 = 0xDEADBEEF, 0x41C6CE57
    for unit in _units(text):
        h1 = _imul(h1 ^ unit, 2654435761)
        h2 = _imul(h2 ^ unit, 1597334677)
    h1 = _imul(h1 ^ (h1 >> 16), 2246822507) ^ _imul(h2 ^ (h2 >> 13), 3266489909)
    h2 = _imul(h2 ^ (h2 >> 16), 2246822507) ^ _imul(h1 ^ (h1 >> 13), 3266489909)
    return _base36(h2 & _MASK) + _base36(h1 & _MASK)


def for_anthropic(call_id: str) -> str:
    """Anthropic takes ``[A-Za-z0-9_-]{1,64}``."""
    return _head(_sanitized(call_id), _ANTHROPIC_LIMIT)


def for_openai_completions(call_id: str, provider: str) -> str:
    """Chat completions take ids of up to 40 characters.

    An id of the Responses API (``call_id|item_id``) keeps both parts, sanitized, so calls of one turn
    stay distinct; when that is too long, the call part is shortened and a hash of the whole id added.
    OpenAI itself also gets any other id cut to 40; other servers get it as it is.
    """
    if "|" in call_id:
        call, _, item = call_id.partition("|")
        call, item = _sanitized(call), _sanitized(item)
        combined = f"{call}_{item}" if item else call
        if utf16_len(combined) <= _OPENAI_LIMIT:
            return combined
        digest = short_hash(call_id)[:8]
        return f"{_head(call, max(1, _OPENAI_LIMIT - len(digest) - 1))}_{digest}"
    if provider == "openai":
        return _head(call_id, _OPENAI_LIMIT)
    return call_id
