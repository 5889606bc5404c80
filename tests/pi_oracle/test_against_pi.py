"""Random sessions answered by Pi 1.6.0's own code and by piweb, in memory and from the database.

`make test` runs a few hundred sessions (``PIWEB_FUZZ_PI_N``, ``PIWEB_FUZZ_PI_SEED``); `make fuzz-pi`
runs a long campaign through the same test and keeps failing files in `.data/fuzz-pi/` for replay.
With ``CI`` set, a missing Pi fails the run instead of skipping it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from compaction_app.sessiontool import dump
from compaction_app.sessiontool.common import estimate_view
from sessions_app import context_reads, services
from sessions_app.tree_overview import build_tree_overview
from tests.sessions.test_store_conformance import _db_projection

from .campaign import FAILURES_DIR, Campaign, replay
from .differ import Outcome, compare_answers
from .generator import DEFAULT_CORNERS, GeneratedSession
from .oracle import PiOracle, pi_installed

SESSIONS = int(os.environ.get("PIWEB_FUZZ_PI_N", "300"))
SEED = int(os.environ.get("PIWEB_FUZZ_PI_SEED", "20261130"))
START = int(os.environ.get("PIWEB_FUZZ_PI_START", "0"))
DATABASE_EVERY = int(os.environ.get("PIWEB_FUZZ_PI_DB_EVERY", "1"))
CORNERS = (
    frozenset(os.environ["PIWEB_FUZZ_PI_CORNERS"].split(","))
    if os.environ.get("PIWEB_FUZZ_PI_CORNERS")
    else DEFAULT_CORNERS
)
REPLAY = os.environ.get("PIWEB_FUZZ_PI_REPLAY", "")


@pytest.fixture(scope="module")
def pi() -> Iterator[PiOracle]:
    if not pi_installed():
        message = "Pi 1.6.0 is not installed in bench/node_modules (`make pi` installs it)"
        if os.environ.get("CI"):
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    oracle = PiOracle()
    yield oracle
    oracle.close()


def _database_check(
    make_user: Callable[..., Any],
) -> tuple[Callable[[GeneratedSession, Path, Outcome], list[dict[str, Any]]], list[str]]:
    """Return the database check and the list it fills with files the database cannot store."""
    owner = make_user()
    unstorable: list[str] = []

    def check(session: GeneratedSession, path: Path, outcome: Outcome) -> list[dict[str, Any]]:
        failures: list[dict[str, Any]] = []
        projects = [(argv, theirs) for argv, theirs in outcome.answers if argv[0] == "project"]
        if not projects:
            return failures
        if "error" in projects[0][1] or not session.data:
            try:
                services.import_jsonl(actor=owner, data=session.data, filename=path.name)
            except services.InvalidSessionFile:
                return failures
            return [{"argv": ["import", str(path)], "differences": ["imported a file Pi refuses"]}]
        try:
            stored = services.import_jsonl(actor=owner, data=session.data, filename=path.name).session
        except services.InvalidSessionFile as exc:
            if "NUL character or a lone surrogate" not in str(exc):
                raise
            unstorable.append(path.name)  # PostgreSQL text cannot hold these; Pi keeps them (README)
            return failures
        order = _overview_order_difference(stored, projects[0][1]["load"]["tree"])
        if order:
            failures.append({"argv": ["tree-overview", str(path)], "differences": order})
        for argv, theirs in projects:
            leaf = argv[2] if len(argv) > 2 else None
            mine = json.loads(dump(_db_projection(stored, None if leaf == "null" else leaf, leaf == "null")))
            diffs = compare_answers({key: theirs[key] for key in mine}, mine)
            if diffs:
                failures.append({"argv": ["database", *argv], "differences": diffs[:20]})
            failures += _sums_check(stored, mine["effectiveLeafId"], theirs, argv)
        return failures

    return check, unstorable


def _sums_check(
    stored: Any, leaf_id: str | None, theirs: dict[str, Any], argv: list[str]
) -> list[dict[str, Any]]:
    """Compare the context panel's estimate, read from running sums, with Pi's projected estimate."""
    if leaf_id is None:
        return []
    page = context_reads.context_page(stored, leaf_id, head=0, tail=0)
    if page is None:
        return []  # a shape the sums decline: the panel projects in full, as compared above
    # Through the tool's own output, numbers written as JavaScript writes them, as for the projection.
    mine = json.loads(
        dump(
            {
                "estimateProjectedContextTokens": estimate_view(page.totals.estimate),
                "messageCount": page.totals.message_count,
            }
        )
    )
    expected = {
        "estimateProjectedContextTokens": theirs["estimateProjectedContextTokens"],
        "messageCount": len(theirs["messages"]),
    }
    diffs = compare_answers(expected, mine)
    return [{"argv": ["running sums", *argv], "differences": diffs[:20]}] if diffs else []


def _overview_order_difference(stored: Any, tree: dict[str, Any]) -> list[str]:
    """Compare the browser tree's drawing order with Pi's depth-first listing (unique string ids only)."""
    children = dict((parent, kids) for parent, kids in tree["children"])
    listed = [*tree["roots"], *(kid for _, kids in tree["children"] for kid in kids)]
    if any(not isinstance(i, str) or i.startswith("@") for i in listed) or len(set(listed)) != len(listed):
        return []  # lines without ids, duplicates and made-up v1 ids are outside the stored tree
    walk: list[str] = []
    stack = list(reversed(tree["roots"]))
    while stack:
        node = stack.pop()
        walk.append(node)
        stack.extend(reversed(children.get(node, [])))
    drawn: list[str] = []
    for item in build_tree_overview(stored)["items"]:
        drawn += [item["id"]] if item["kind"] == "node" else [item["firstId"], item["lastId"]]
    shown = set(drawn)
    expected = [i for i in walk if i in shown]
    drawn = [i for n, i in enumerate(drawn) if n == 0 or drawn[n - 1] != i]  # a one-entry run names it twice
    return [] if drawn == expected else [f"tree overview order {drawn[:12]} != Pi's {expected[:12]}"]


@pytest.mark.django_db
def test_random_sessions_answer_as_pi_does(
    pi: PiOracle, user: Callable[..., Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    check, unstorable = _database_check(user)
    campaign = Campaign(
        SEED,
        SESSIONS,
        start=START,
        corners=CORNERS,
        database_every=DATABASE_EVERY,
        database_check=check,
    )
    report = campaign.run(pi, tmp_path)
    with capsys.disabled():
        print(f"\n{report.summary()}; {len(unstorable)} not storable in PostgreSQL (NUL or lone surrogate)")
    assert report.sessions == SESSIONS
    assert not report.failing, (
        f"{len(report.failing)} sessions differ from Pi; kept in {FAILURES_DIR}: {report.failing[:5]}"
    )


@pytest.mark.skipif(
    not REPLAY, reason="set PIWEB_FUZZ_PI_REPLAY (make fuzz-pi REPLAY=…) to replay kept failures"
)
def test_replay_kept_failures(pi: PiOracle) -> None:
    target = Path(REPLAY)
    reports = sorted(target.glob("*.json")) if target.is_dir() else [target.with_suffix(".json")]
    failing = {str(r): replay(pi, r) for r in reports}
    assert not any(failing.values()), {k: [f["differences"][:3] for f in v] for k, v in failing.items() if v}
