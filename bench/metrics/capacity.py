"""Capacity as a number: the largest team day this machine serves with page and API p95 ≤ 200 ms.

One stack (two web processes and the workers on a private PostgreSQL and Redis, as ``team_day``) is
seeded once for the largest step; then team days of growing size run one after another, readers and
sockets scaled together (two sockets per person), with syncers and run slots in the day's proportions.
The first step that misses the goal, or has any error, ends the climb. Beside the answer, the minimal
DRF view's req/s on the same machine says how fast the machine is.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from bench import generate
from bench.metrics import Context, Result, metric
from bench.metrics.serve import serve_and_load
from bench.metrics.teamday import GOAL_P95_MS, Plan, Tally, Team, percentiles, seed, stack, wait_for_backlog

GOAL_PEOPLE = 200  # twice today's team day


def _steps() -> list[int]:
    raw = os.environ.get("PIWEB_BENCH_CAPACITY_STEPS", "") or "100,150,200,250,300"
    return sorted({int(part) for part in raw.split(",") if part.strip()})


def plan_of(people: int, seconds: float) -> Plan:
    """Today's day has 100 readers, 200 sockets, 10 syncers and 20 run slots: scale all of them."""
    return Plan(
        readers=people,
        sockets=2 * people,
        syncers=max(1, people // 10),
        runs=max(1, people // 5),
        seconds=seconds,
    )


@dataclasses.dataclass(frozen=True, slots=True)
class Step:
    people: int
    p95: float
    worst_minute: float
    accept_p95: float
    requests: int
    errors: int
    missed: int

    @property
    def held(self) -> bool:
        return (
            self.p95 <= GOAL_P95_MS
            and self.worst_minute <= GOAL_P95_MS
            and not self.errors
            and not self.missed
        )

    def describe(self) -> str:
        return (
            f"{self.people} people: p95 {self.p95:.0f} ms (worst minute {self.worst_minute:.0f}), accept "
            f"p95 {self.accept_p95:.0f} ms, {self.requests} requests, {self.errors} errors, "
            f"{self.missed} missed events{'' if self.held else ' ✗'}"
        )


def _step(people: int, tally: Tally) -> Step:
    http = [
        ms for kind, values in tally.latencies.items() if kind.startswith(("page", "api")) for ms in values
    ]
    by_minute = tally.p95_by_minute()
    return Step(
        people=people,
        p95=percentiles(http)[1] if http else 0.0,
        worst_minute=max(by_minute) if by_minute else 0.0,
        accept_p95=percentiles(tally.latencies.get("socket: accept", []))[1],
        requests=len(http),
        errors=tally.error_count,
        missed=tally.missed_events,
    )


def climb(steps: list[int], seconds: float, files: list[Path], folder: Path) -> list[Step]:
    """Run the team days of ``steps`` on one stack until one misses the goal; return what each did."""
    from providers.llm.testserver import ProviderServer

    done: list[Step] = []
    biggest = plan_of(max(steps), seconds)
    with (
        stack(folder, web=biggest.web_processes) as (postgres, app, database, redis),
        ProviderServer() as provider,
    ):
        started = time.monotonic()
        seeded = seed(app, biggest, files, provider.url)
        app.start()
        drained = wait_for_backlog(postgres.url(database), redis.url)
        print(
            f"bench: capacity stack seeded in {time.monotonic() - started:.0f} s "
            f"(the workers' backlog took {drained:.0f} s)",
            file=sys.stderr,
        )
        assert postgres.proc is not None
        for people in steps:
            plan = plan_of(people, seconds)
            tmp = folder / f"step-{people}"
            tmp.mkdir()
            team = Team(plan, app.bases, seeded, provider, tmp)
            tally = asyncio.run(team.drive(postgres.url("postgres"), database))
            team.count_missed(postgres.url(database))
            step = _step(people, tally)
            print(f"bench: capacity {step.describe()}", file=sys.stderr)
            done.append(step)
            if not step.held:
                break
    return done


@metric("team_capacity")
def team_capacity(ctx: Context) -> list[Result]:
    """The largest team day (readers and sockets together) that holds p95 ≤ 200 ms on this machine."""
    seconds = float(os.environ.get("PIWEB_BENCH_CAPACITY_SECONDS", "") or ("20" if ctx.quick else "60"))
    steps = _steps()
    files = [
        ctx.session(generate.SessionSpec(entries=1000, seed=generate.DEFAULT_SEED + 700 + i)).path
        for i in range(30)
    ]
    minimal, _, _ = serve_and_load(
        b"GET /minimal/ HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/json\r\n\r\n",
        workers=2,
        settings="bench.minimal_settings",
    )
    folder = Path(tempfile.mkdtemp(prefix="piweb-capacity-"))
    try:
        done = climb(steps, seconds, files, folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    held = [step.people for step in done if step.held]
    capacity = float(max(held)) if held else 0.0
    topped = bool(done) and done[-1].held and done[-1].people == max(steps)
    return [
        Result(
            metric="team capacity: the largest team day with page and API p95 ≤ 200 ms (people)",
            value=capacity,
            unit="people",
            goal=f"≥ {GOAL_PEOPLE} people",
            met=capacity >= GOAL_PEOPLE,
            note=(
                f"{'; '.join(step.describe() for step in done)}; {seconds:.0f} s per step, 2 daphne "
                f"processes and the workers on this machine's {os.cpu_count()} cores; a person is 1 reader "
                f"and 2 sockets, with syncers and run slots in the team day's proportions"
                + ("; the largest step held, so the capacity may be higher" if topped else "")
                + f"; the minimal DRF view answers {minimal:.0f} req/s here (gunicorn, 2 processes)"
            ),
        )
    ]
