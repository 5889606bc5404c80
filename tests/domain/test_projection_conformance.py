"""Every recorded `project` run reproduces Pi's answer through the in-memory domain code."""

from __future__ import annotations

import pytest

from compaction_app.sessiontool import project
from tests.conformance.compare import ConformanceRun, assert_conforms, run_params


@pytest.mark.parametrize("run", run_params("project"))
def test_project_matches_pi(run: ConformanceRun) -> None:
    assert_conforms(run, project.run)
