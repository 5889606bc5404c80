"""One differential campaign: random sessions asked of Pi and of piweb (in memory and from the database)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .differ import Outcome, compare_answers, run_requests
from .generator import ALL_CORNERS, GeneratedSession, generate
from .oracle import PiOracle

__all__ = ["Campaign", "Report"]

REPO = Path(__file__).resolve().parents[2]
FAILURES_DIR = REPO / ".data" / "fuzz-pi"
PROGRESS_EVERY = 500


@dataclass(slots=True)
class Report:
    """What a campaign did: counts, time, and where failing files were written for replay."""

    seed: int
    sessions: int = 0
    requests: int = 0
    database_checked: int = 0
    skipped_cycles: int = 0
    pi_crashed: int = 0
    seconds: float = 0.0
    failing: list[str] = field(default_factory=list)

    def summary(self) -> str:
        return (
            f"fuzz-pi seed={self.seed}: {self.sessions} sessions, {self.requests} requests compared with Pi "
            f"({self.database_checked} also from the database), {self.skipped_cycles} skipped "
            f"(parent cycles: Pi loops forever), {self.pi_crashed} requests where Pi itself throws, "
            f"{len(self.failing)} failing, {self.seconds:.1f} s"
        )


@dataclass(slots=True)
class Campaign:
    """Generate sessions ``seed:0 … seed:N-1``, compare each, keep the failing files."""

    seed: int
    count: int
    start: int = 0  # first index, so one campaign can be split over processes
    corners: frozenset[str] = ALL_CORNERS
    max_entries: int = 60
    database_every: int = 0  # 0: never; 1: every session; k: every k-th session
    database_check: Callable[[GeneratedSession, Path, Outcome], list[dict[str, Any]]] | None = None
    out_dir: Path = FAILURES_DIR

    def run(self, pi: PiOracle, work: Path) -> Report:
        report = Report(self.seed)
        started = time.monotonic()
        for index in range(self.start, self.start + self.count):
            session = generate(self.seed, index, max_entries=self.max_entries, corners=self.corners)
            path = work / f"{self.seed}-{index}.jsonl"
            path.write_bytes(session.data)
            outcome = run_requests(pi, path, session.requests)
            report.sessions += 1
            report.requests += outcome.compared
            report.pi_crashed += outcome.pi_crashed
            if outcome.timed_out:
                report.skipped_cycles += 1
            failures = list(outcome.failures)
            if (
                self.database_check
                and self.database_every
                and index % self.database_every == 0
                and not outcome.timed_out
            ):
                failures += self.database_check(session, path, outcome)
                report.database_checked += 1
            if failures:
                report.failing.append(self._keep(session, failures))
            path.unlink()
            if report.sessions % PROGRESS_EVERY == 0:
                # A long campaign shows where it is (and what it found) while it runs.
                self.out_dir.mkdir(parents=True, exist_ok=True)
                progress = self.out_dir / f"progress-{self.seed}-{self.start}.log"
                with progress.open("a", encoding="utf-8") as log:
                    log.write(f"{report.summary()} [at index {index}]\n")
        report.seconds = time.monotonic() - started
        return report

    def _keep(self, session: GeneratedSession, failures: list[dict[str, Any]]) -> str:
        """Write the file and what differed, so `make fuzz-pi REPLAY=…` can run it again."""
        self.out_dir.mkdir(parents=True, exist_ok=True)
        stem = self.out_dir / f"{session.seed}-{session.index}"
        stem.with_suffix(".jsonl").write_bytes(session.data)
        stem.with_suffix(".json").write_text(
            json.dumps(
                {
                    "seed": session.seed,
                    "index": session.index,
                    "requests": session.requests,
                    "failures": failures,
                },
                indent=1,
                ensure_ascii=False,
            ),
            encoding="utf-8",
        )
        return str(stem.with_suffix(".jsonl"))


def replay(pi: PiOracle, report_file: Path) -> list[dict[str, Any]]:
    """Run a kept failure again: its file and requests, against today's code."""
    kept = json.loads(report_file.read_text(encoding="utf-8"))
    outcome = run_requests(pi, report_file.with_suffix(".jsonl"), kept["requests"])
    return outcome.failures


__all__ += ["compare_answers", "replay"]
