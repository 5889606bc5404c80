"""Compare sessiontool answers with Pi's recorded conformance outputs, using run.py's own rules.

The shared folder sits beside the repository (``../shared``) unless ``PIWEB_SHARED_DIR`` says otherwise.
When it is absent, tests that need it skip instead of failing.
"""

from __future__ import annotations

import importlib.util
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import ModuleType

import pytest

from compaction_app.sessiontool import dump

REPO_ROOT = Path(__file__).resolve().parents[2]


def shared_dir() -> Path | None:
    """Return the shared reference folder, or None when it is not available."""
    candidates = [Path(os.environ["PIWEB_SHARED_DIR"])] if os.environ.get("PIWEB_SHARED_DIR") else []
    candidates += [REPO_ROOT.parent / "shared", Path("/work/shared")]
    return next((c for c in candidates if (c / "conformance" / "run.py").is_file()), None)


def conformance_dir() -> Path | None:
    """Return the conformance case folder, or None when it is not available."""
    shared = shared_dir()
    return shared / "conformance" if shared else None


@cache
def _runner() -> ModuleType | None:
    cases = conformance_dir()
    if cases is None:
        return None
    spec = importlib.util.spec_from_file_location("pi_conformance_run", cases / "run.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def runner() -> ModuleType:
    """Return the shared conformance runner module (its ``compare`` is the one rule for differences)."""
    module = _runner()
    if module is None:
        raise RuntimeError("the shared conformance runner (../shared/conformance/run.py) was not found")
    return module


@dataclass(frozen=True, slots=True)
class ConformanceRun:
    """One recorded run: its case, the argv with file arguments made absolute, and Pi's output."""

    name: str
    argv: tuple[str, ...]
    expected: object


def load_runs(command: str) -> list[ConformanceRun]:
    """Return every recorded run of ``command``; empty when the cases are not available."""
    cases = conformance_dir()
    if cases is None:
        return []
    runs: list[ConformanceRun] = []
    for expected_file in sorted(cases.glob("*/*.expected.json")):
        case = json.loads(expected_file.read_text(encoding="utf-8"))
        for index, run in enumerate(case["runs"]):
            if run["argv"][0] != command:
                continue
            argv = tuple(str(cases / a) if (cases / a).is_file() else a for a in run["argv"])
            runs.append(ConformanceRun(name=f"{case['case']}#{index}", argv=argv, expected=run["output"]))
    return runs


def run_params(command: str) -> list[object]:
    """Return pytest params for ``command``'s runs, or one skipped param when the cases are missing."""
    runs = load_runs(command)
    if not runs:
        return [pytest.param(None, marks=pytest.mark.skip(reason="shared conformance cases not found"))]
    return [pytest.param(run, id=run.name) for run in runs]


def differences(expected: object, actual: object) -> list[str]:
    """Return run.py's differences between Pi's output and ours (placeholders and ignored keys apply)."""
    runner = _runner()
    if runner is None:
        pytest.skip("shared conformance runner not found")
    # Round-trip through the command's own writer so numbers and keys look as they would on stdout.
    actual = json.loads(dump(actual))
    diffs: list[str] = []
    runner.compare(expected, actual, "output", {}, diffs)
    return diffs


def assert_conforms(run: ConformanceRun, answer: Callable[[list[str]], object]) -> None:
    """Assert that ``answer(argv[1:])`` reproduces Pi's recorded output for ``run``."""
    diffs = differences(run.expected, answer(list(run.argv[1:])))
    assert not diffs, f"{run.name}: " + "; ".join(diffs[:10])
