"""Render result rows as one aligned table and as results/latest.json."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path

import orjson

from bench.metrics import Result

COLUMNS = ("metric", "value", "goal", "baseline", "ratio", "met")


def _number(value: float | None, unit: str = "") -> str:
    if value is None:
        return "-"
    if abs(value) >= 100:
        text = f"{value:,.0f}"
    elif abs(value) >= 1:
        text = f"{value:.2f}"
    else:
        text = f"{value:.3f}"
    return f"{text} {unit}".rstrip()


def _met(met: bool | None) -> str:
    return {True: "yes", False: "NO", None: "-"}[met]


def format_table(rows: Sequence[Result]) -> str:
    """Return the rows as an aligned text table; notes follow on indented lines."""
    cells = [COLUMNS] + [
        (
            row.metric,
            _number(row.value, row.unit),
            row.goal,
            _number(row.baseline, row.unit),
            "-" if row.ratio is None else f"{row.ratio:.2f}×",
            _met(row.met),
        )
        for row in rows
    ]
    widths = [max(len(line[i]) for line in cells) for i in range(len(COLUMNS))]
    right = {1, 3, 4}

    def render(line: Sequence[str]) -> str:
        pairs = enumerate(zip(line, widths, strict=True))
        parts = [cell.rjust(w) if i in right else cell.ljust(w) for i, (cell, w) in pairs]
        return " | ".join(parts).rstrip()

    out = [render(cells[0]), "-+-".join("-" * w for w in widths)]
    for row, line in zip(rows, cells[1:], strict=True):
        out.append(render(line))
        if row.note:
            out.append(f"    {row.note}")
    return "\n".join(out)


def write_json(rows: Sequence[Result], path: Path) -> None:
    """Write rows as a JSON list of {metric, value, unit, goal, baseline, ratio, met, note}."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(orjson.dumps([asdict(row) for row in rows], option=orjson.OPT_INDENT_2) + b"\n")
