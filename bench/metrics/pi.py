"""Pi 1.6.0's own timings, measured in this run: the baselines the goals are stated against."""

from __future__ import annotations

import json
import subprocess

from bench import generate
from bench.metrics import Context, Result, metric

# Fewer runs for bigger files keeps the whole bench inside its time budget; medians stay stable.
ITERATIONS = {"1k": 30, "10k": 10, "100k": 5}
QUICK_ITERATIONS = {"1k": 10, "10k": 5, "100k": 3}
TIMEOUT_S = 300


def run_pi_baseline(ctx: Context, spec: generate.SessionSpec | str, iterations: int) -> dict[str, object]:
    """Run pi_baseline.mjs on a session and return its JSON result."""
    if ctx.node is None:
        raise RuntimeError(ctx.node_problem or "node unavailable")
    session = ctx.session(spec)
    completed = subprocess.run(
        [ctx.node, "--expose-gc", str(ctx.bench_dir / "pi_baseline.mjs"), str(session.path), str(iterations)],
        cwd=ctx.bench_dir,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )
    if completed.returncode != 0:
        raise RuntimeError(
            completed.stderr.strip().splitlines()[-1] if completed.stderr.strip() else "failed"
        )
    return json.loads(completed.stdout.strip().splitlines()[-1])


def _unavailable(name: str, problem: str) -> Result:
    return Result(metric=name, value=None, unit="ms", note=f"unavailable: {problem}")


@metric("pi_open_context")
def pi_open_context(ctx: Context) -> list[Result]:
    """Time Pi's SessionManager.open + buildSessionContext on the standard sizes."""
    rows: list[Result] = []
    counts = QUICK_ITERATIONS if ctx.quick else ITERATIONS
    for size in ctx.sizes:
        name = f"pi open+context {size}"
        try:
            out = run_pi_baseline(ctx, size, counts[size])
        except (RuntimeError, OSError, subprocess.TimeoutExpired, ValueError) as exc:
            rows.append(_unavailable(name, str(exc)))
            continue
        total, open_ms, context_ms = float(out["total_ms"]), float(out["open_ms"]), float(out["context_ms"])
        ctx.baselines[f"pi.open_context.{size}"] = total
        ctx.baselines[f"pi.open.{size}"] = open_ms
        ctx.baselines[f"pi.context.{size}"] = context_ms
        ctx.baselines[f"pi.messages.{size}"] = float(out["messages"])
        meta = ctx.session(size).meta
        rows.append(
            Result(
                metric=name,
                value=total,
                unit="ms",
                note=(
                    f"open {open_ms:.1f} + context {context_ms:.1f} ms; {out['messages']} messages; "
                    f"{int(meta['entries'])} entries, {int(meta['bytes']) / 1e6:.0f} MB"
                ),
            )
        )
    return rows


@metric("pi_context_equal_size")
def pi_context_equal_size(ctx: Context) -> list[Result]:
    """Time Pi's buildSessionContext for a short and a long history whose leaf contexts are equal."""
    rows: list[Result] = []
    short, long = generate.equal_context_specs()
    pairs = [("1k", short)] if ctx.quick else [("1k", short), ("100k", long)]
    counts = QUICK_ITERATIONS if ctx.quick else ITERATIONS
    for size, spec in pairs:
        name = f"pi context, equal context, {size} history"
        try:
            out = run_pi_baseline(ctx, spec, counts[size])
        except (RuntimeError, OSError, subprocess.TimeoutExpired, ValueError) as exc:
            rows.append(_unavailable(name, str(exc)))
            continue
        context_ms = float(out["context_ms"])
        ctx.baselines[f"pi.context.equal.{size}"] = context_ms
        rows.append(
            Result(metric=name, value=context_ms, unit="ms", note=f"{out['messages']} messages in context")
        )
    return rows
