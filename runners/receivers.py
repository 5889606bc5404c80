"""Runners hear the agent: a Stop on a run that went to a runner is Pi's abort there."""

from __future__ import annotations

from typing import Any

from agent.facade import AgentRun, signals
from core import realtime
from runners.models import RunnerRun
from runners.services import group_of


def forward_abort(sender: Any, *, run: AgentRun, **kwargs: Any) -> None:
    placed = RunnerRun.objects.filter(run=run).only("runner_id").first()
    if placed is not None:
        command = {"type": "runner.command", "command": "abort", "run": str(run.public_id), "message": ""}
        realtime.send_to_group(group_of(placed.runner_id), command)


signals.abort_requested.connect(forward_abort, dispatch_uid="runners-abort")
