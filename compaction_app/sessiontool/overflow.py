"""``overflow FILE [CONTEXT_WINDOW]``: Pi's overflow verdict for one assistant message.

FILE holds a bare assistant message or ``{message, contextWindow?, desiredMaxOutput?}``. A window given
on the command line takes precedence over the file's. The length-recovery verdict is printed only when
the file names ``desiredMaxOutput``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path

from compaction_app.domain.overflow import is_context_overflow, is_recoverable_length

USAGE = "usage: overflow FILE [CONTEXT_WINDOW]"


def _parse_number(text: str) -> float | None:
    if text in ("null", "undefined", ""):
        return None
    try:
        return int(text)
    except ValueError:
        return float(text)  # JavaScript's Number(): "1e5", "NaN", "Infinity" all parse


def _printable(value: object) -> object:
    # The conformance format writes NaN as a string; JSON has no spelling for it.
    return "NaN" if isinstance(value, float) and math.isnan(value) else value


def run(args: list[str]) -> object:
    """Return the overflow verdict of the message in ``args[0]`` as the conformance JSON object."""
    if not 1 <= len(args) <= 2:
        return {"error": USAGE}
    try:
        data = json.loads(Path(args[0]).read_text(encoding="utf-8"))
        window_arg = _parse_number(args[1]) if len(args) == 2 else None
    except (OSError, ValueError) as exc:
        return {"error": f"{type(exc).__name__}: {exc}"}
    if not isinstance(data, Mapping):
        return {"error": "the file must hold a JSON object"}
    wrapped = isinstance(data.get("message"), Mapping)
    message = data["message"] if wrapped else data
    options: Mapping[str, object] = data if wrapped else {}
    context_window = window_arg if len(args) == 2 else options.get("contextWindow")
    result: dict[str, object] = {
        "contextWindow": _printable(context_window),
        "isContextOverflow": is_context_overflow(message, context_window),  # type: ignore[arg-type]
    }
    if "desiredMaxOutput" in options:
        desired = options["desiredMaxOutput"]
        result["desiredMaxOutput"] = _printable(desired)
        result["isRecoverableLength"] = is_recoverable_length(message, desired)  # type: ignore[arg-type]
    return result
