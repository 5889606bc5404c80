"""The chart library the usage page loads is the lockfile's version, copied into static/ (make vendor-js)."""

from __future__ import annotations

import json
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_the_vendored_uplot_is_the_lockfiles() -> None:
    lock = json.loads((REPO / "package-lock.json").read_text())
    version = lock["packages"]["node_modules/uplot"]["version"]
    assert "uplot" in json.loads((REPO / "package.json").read_text())["dependencies"]
    head = (REPO / "static/vendor/uplot/uPlot.esm.js").read_text()[:600]
    assert f"(v{version})" in head, "run `make vendor-js` after changing uplot's version"
    assert (REPO / "static/vendor/uplot/uPlot.min.css").stat().st_size > 0
