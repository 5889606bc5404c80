"""In-memory references: a dict walk of a path, and piweb's own domain projection without a database."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from pathlib import Path

import orjson

from bench.metrics import Context, Result, metric

_parents_cache: dict[Path, dict[str, str | None]] = {}


def load_parents(path: Path) -> dict[str, str | None]:
    """Return id → parentId for every entry of a session file."""
    if path not in _parents_cache:
        parents: dict[str, str | None] = {}
        with path.open("rb") as fh:
            next(fh)  # header
            for line in fh:
                entry = orjson.loads(line)
                parents[entry["id"]] = entry["parentId"]
        _parents_cache[path] = parents
    return _parents_cache[path]


def walk_path_ids(parents: dict[str, str | None], leaf_id: str) -> list[str]:
    """Return the ids from leaf_id up to the root."""
    out: list[str] = []
    current: str | None = leaf_id
    while current is not None:
        out.append(current)
        current = parents.get(current)
    return out


def median_ms(fn: Callable[[], object], *, repeat: int, min_total_s: float = 0.2) -> float:
    """Return the median wall time of fn in ms over at least `repeat` runs (more for very fast fns)."""
    fn()  # warm up
    samples: list[float] = []
    started = time.perf_counter()
    while len(samples) < repeat or (time.perf_counter() - started < min_total_s and len(samples) < 1_000):
        t0 = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t0) * 1000)
    return statistics.median(samples)


@metric("dict_walk")
def dict_walk(ctx: Context) -> list[Result]:
    """Time walking path ids leaf → root through an in-memory id → parent dict."""
    # (label, session size, probe depth or None for the leaf); quick runs have no 100k session
    quick = [("10k", "10k", None)]
    targets = quick if ctx.quick else [("10k", "100k", "10000"), ("100k", "100k", None)]
    rows: list[Result] = []
    for label, size, probe in targets:
        session = ctx.session(size)
        parents = load_parents(session.path)
        start = (
            str(session.meta["leaf_id"]) if probe is None else str(session.meta["probe_ids_by_depth"][probe])
        )
        depth = len(walk_path_ids(parents, start)) - 1
        value = median_ms(lambda p=parents, s=start: walk_path_ids(p, s), repeat=20)
        ctx.baselines[f"dict_walk.{label}"] = value
        rows.append(
            Result(
                metric=f"path ids, in-memory dict walk, depth {label}",
                value=value,
                unit="ms",
                note=f"depth {depth} in the {size} session",
            )
        )
    return rows


@metric("domain_projection")
def domain_projection(ctx: Context) -> list[Result]:
    """Time piweb's pure load + path + projection next to Pi's buildSessionContext on the same files."""
    try:
        from pitree.projection import Projection, project
        from pitree.session import load_session
        from pitree.tree import SessionTree
    except ImportError:
        return []
    rows: list[Result] = []
    for size in ctx.sizes:
        session = ctx.session(size)
        text = session.path.read_text(encoding="utf-8")
        t0 = time.perf_counter()
        loaded = load_session(text)
        load_ms = (time.perf_counter() - t0) * 1000
        tree = loaded.tree
        leaf = tree.resolve_leaf(None)

        def build(tree: SessionTree = tree, leaf: str | None = leaf) -> Projection:
            return project(tree.path(leaf))

        value = median_ms(build, repeat=5 if size == "100k" else 10, min_total_s=0.0)
        messages = len(build().messages)
        pi_messages = ctx.baselines.get(f"pi.messages.{size}")
        agree = "" if pi_messages is None else f" (Pi {int(pi_messages)})"
        baseline = ctx.baselines.get(f"pi.context.{size}")
        rows.append(
            Result(
                metric=f"domain path+projection in memory {size}",
                value=value,
                unit="ms",
                goal="reference",
                baseline=baseline,
                ratio=value / baseline if baseline else None,
                note=f"{messages} messages{agree}; load {load_ms:.0f} ms",
            )
        )
        del text, loaded, tree
    return rows
