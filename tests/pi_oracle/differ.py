"""Ask Pi and piweb the same sessiontool requests about one file and list where the answers differ."""

from __future__ import annotations

import json
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from compaction_app.sessiontool import dump, resolve
from pitree.session import load_session
from pitree.tree_listing import tree_listing
from tests.conformance.compare import runner

from .oracle import TIMED_OUT, PiOracle

__all__ = ["Outcome", "compare_answers", "ours", "run_requests"]


def ours(argv: list[str]) -> Any:
    """Return piweb's answer to ``argv`` exactly as `manage.py sessiontool` prints it, parsed back."""
    try:
        value = resolve(argv[0])(argv[1:])
    except Exception as exc:  # a crash is a difference to report, not a reason to stop the campaign
        return {"crash": f"{type(exc).__name__}: {exc}", "trace": traceback.format_exc(limit=-3)}
    return json.loads(dump(value))


def compare_answers(theirs: Any, mine: Any) -> list[str]:
    """Return the conformance runner's differences (Pi's answer is the expected one)."""
    diffs: list[str] = []
    runner().compare(theirs, mine, "output", {}, diffs)
    return diffs


@dataclass(slots=True)
class Outcome:
    """What comparing one file found: per request, Pi's answer, ours and the differences."""

    compared: int = 0
    pi_crashed: int = 0  # requests where Pi's own code threw (a TypeError on content it cannot read)
    timed_out: bool = False
    failures: list[dict[str, Any]] = field(default_factory=list)
    answers: list[tuple[list[str], Any]] = field(default_factory=list)


# Pi answers any generated file within milliseconds; only a parent cycle makes it loop for good.
CYCLE_SECONDS = 0.5
SLOW_SECONDS = 180.0


def has_parent_cycle(data: bytes) -> bool:
    """Return whether the file has a parent cycle (duplicate ids): in the path index or in Pi's listing."""
    tree = load_session(data.decode("utf-8", errors="replace")).tree
    return bool(tree.broken_cycles) or tree_listing(tree.entries).cycle


def run_requests(pi: PiOracle, path: Path, requests: list[list[str]]) -> Outcome:
    """Ask both sides every request about ``path``; stop at the first time-out (a parent cycle).

    A time-out counts as Pi hanging only in a file with a parent cycle; anywhere else it is a failure.
    """
    outcome = Outcome()
    cycle = has_parent_cycle(path.read_bytes())
    for request in requests:
        argv = [request[0], str(path), *request[1:]]
        theirs = pi.ask(argv, CYCLE_SECONDS if cycle else None)
        if theirs is TIMED_OUT and not cycle:
            # A 2,000-entry file on a busy machine can take longer than the usual deadline: ask once more.
            theirs = pi.ask(argv, SLOW_SECONDS)
        if theirs is TIMED_OUT:
            if not cycle:
                outcome.failures.append({"argv": argv, "differences": ["Pi gave no answer in time"]})
                return outcome
            outcome.timed_out = True
            return outcome
        if isinstance(theirs, dict) and ("piCrashed" in theirs or "<THROWS " in json.dumps(theirs)):
            outcome.pi_crashed += 1
            continue
        mine = ours(argv)
        outcome.compared += 1
        outcome.answers.append((argv, theirs))
        diffs = compare_answers(theirs, mine)
        if diffs:
            outcome.failures.append({"argv": argv, "differences": diffs[:20], "pi": theirs, "piweb": mine})
    return outcome
