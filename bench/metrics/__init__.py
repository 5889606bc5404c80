"""Registry of benchmark metrics: each is a function of the run context returning result rows.

Metrics run in registration order (module order in ``METRIC_MODULES``, then definition order), so a metric
can read baselines stored earlier in the same run from ``ctx.baselines``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from bench import generate

# Modules whose import registers metrics; add new ones here (baselines first).
METRIC_MODULES = (
    "bench.metrics.pi",
    "bench.metrics.inmemory",
    "bench.metrics.db",
    "bench.metrics.serve",
    "bench.metrics.request_profile",
    "bench.metrics.live",
    "bench.metrics.team",
    "bench.metrics.bulk",
    "bench.metrics.delete",
    "bench.metrics.context_page",
    "bench.metrics.files_panel",
    "bench.metrics.browser",
    "bench.metrics.runs",
    "bench.metrics.sync",
    "bench.metrics.pi_package",
    "bench.metrics.runners",
    "bench.metrics.teamday",
    "bench.metrics.capacity",
    "bench.metrics.costs",
    "bench.metrics.comments",
    "bench.metrics.activity",
    "bench.metrics.session_filters",
    "bench.metrics.hooks",
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Result:
    """One row of the table and of results/latest.json."""

    metric: str
    value: float | None
    unit: str
    goal: str = "baseline"
    baseline: float | None = None
    ratio: float | None = None
    met: bool | None = None
    note: str = ""


@dataclass(slots=True, kw_only=True)
class Context:
    """What a metric may use: the run mode, generated sessions and baselines measured so far."""

    quick: bool
    bench_dir: Path
    data_dir: Path
    node: str | None  # path of a Node binary able to run Pi, or None when unavailable
    node_problem: str = ""
    # None until the database is set up; "" when ready, else why the database metrics cannot run.
    db_problem: str | None = None
    baselines: dict[str, float] = field(default_factory=dict)
    # Objects metrics share within a run, such as the primary keys of imported sessions.
    state: dict[str, object] = field(default_factory=dict)
    _sessions: dict[generate.SessionSpec, generate.SessionFile] = field(default_factory=dict)

    @property
    def sizes(self) -> tuple[str, ...]:
        """Return the standard sizes this run covers."""
        return ("1k", "10k") if self.quick else ("1k", "10k", "100k")

    def session(self, spec: generate.SessionSpec | str) -> generate.SessionFile:
        """Return a generated session (cached on disk) for a spec or a standard size name."""
        if isinstance(spec, str):
            spec = generate.standard_spec(spec)
        if spec not in self._sessions:
            self._sessions[spec] = generate.ensure_session(spec, self.data_dir)
        return self._sessions[spec]


MetricFn = Callable[[Context], list[Result]]
REGISTRY: dict[str, MetricFn] = {}


def metric(name: str) -> Callable[[MetricFn], MetricFn]:
    """Register a metric function under name."""

    def register(fn: MetricFn) -> MetricFn:
        if name in REGISTRY:
            raise ValueError(f"metric {name!r} registered twice")
        REGISTRY[name] = fn
        return fn

    return register


def load_metrics() -> dict[str, MetricFn]:
    """Import every metric module and return the registry."""
    for module in METRIC_MODULES:
        importlib.import_module(module)
    return REGISTRY


def at_most(metric: str, value: float, unit: str, limit: float, *, note: str = "") -> Result:
    """Return a row whose goal is value <= limit (in the same unit)."""
    return Result(
        metric=metric, value=value, unit=unit, goal=f"≤ {limit:g} {unit}", met=value <= limit, note=note
    )


def ratio_at_most(
    metric: str,
    value: float,
    unit: str,
    *,
    baseline: float | None,
    limit: float,
    against: str,
    note: str = "",
) -> Result:
    """Return a row whose goal is value / baseline <= limit; unmet-unknown when the baseline is missing."""
    ratio = value / baseline if baseline else None
    return Result(
        metric=metric,
        value=value,
        unit=unit,
        goal=f"≤ {limit:g}× {against}",
        baseline=baseline,
        ratio=ratio,
        met=None if ratio is None else ratio <= limit,
        note=note,
    )


def speedup_at_least(
    metric: str,
    value: float,
    unit: str,
    *,
    baseline: float | None,
    limit: float,
    against: str,
    note: str = "",
) -> Result:
    """Return a row whose goal is baseline / value >= limit (at least limit times faster than baseline)."""
    ratio = value / baseline if baseline else None
    return Result(
        metric=metric,
        value=value,
        unit=unit,
        goal=f"≥ {limit:g}× faster than {against}",
        baseline=baseline,
        ratio=ratio,
        met=None if ratio is None else ratio <= 1 / limit,
        note=note,
    )
