"""JavaScript regular expressions in Python.

Pi classifies provider errors with case-insensitive JavaScript regexes. Kept in their JavaScript
spelling and translated once, ``\\s``, ``.``, ``$`` and case folding behave as they do in JavaScript.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["compile_js", "translate_js_regex"]

# JavaScript's \s without the u flag; neither of Python's modes has exactly this set.
_JS_SPACE_CHARS: Final = (
    "\\t\\n\\x0b\\x0c\\r \\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000\\ufeff"
)
# JavaScript's '.' also stops at \r and the two Unicode line separators.
_JS_DOT: Final = "[^\\n\\r\\u2028\\u2029]"


def translate_js_regex(source: str) -> str:
    """Return a Python pattern that matches like the JavaScript pattern ``source`` (no u, s, m flags)."""
    out: list[str] = []
    in_class = False
    i = 0
    while i < len(source):
        char = source[i]
        if char == "\\":
            escaped = source[i + 1]
            if escaped == "s":
                out.append(_JS_SPACE_CHARS if in_class else f"[{_JS_SPACE_CHARS}]")
            elif escaped == "S":
                if in_class:
                    raise ValueError(f"\\S inside a class has no Python spelling: {source}")
                out.append(f"[^{_JS_SPACE_CHARS}]")
            else:
                out.append(char + escaped)
            i += 2
            continue
        if in_class:
            in_class = char != "]"
            out.append(char)
        elif char == "[":
            in_class = True
            out.append(char)
        elif char == ".":
            out.append(_JS_DOT)
        elif char == "$":
            # Without the m flag JavaScript's $ is the end of input; Python's $ also accepts a final \n.
            out.append("\\Z")
        else:
            out.append(char)
        i += 1
    return "".join(out)


def compile_js(source: str) -> re.Pattern[str]:
    # re.ASCII keeps \d, \w and case folding ASCII-only: JavaScript without the u flag does not fold
    # U+017F to 's' or U+212A to 'k'.
    return re.compile(translate_js_regex(source), re.IGNORECASE | re.ASCII)
