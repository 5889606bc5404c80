"""Runners hear the agent (a Stop on a run that went to a runner is Pi's abort there) and changes of access
(a requester who may no longer change the session has their run stopped; a team's runner whose owner
left the team is revoked)."""

from __future__ import annotations

from functools import partial
from typing import Any

from django.db import transaction
from django.db.models.signals import post_delete, post_save

from agent.facade import AgentRun, signals
from core import realtime
from runners.models import RunnerRun
from runners.services import group_of, stop_what_is_out_of_reach
from sessions_app.facade import SessionShare
from teams.facade import TeamMembership


def forward_abort(sender: Any, *, run: AgentRun, **kwargs: Any) -> None:
    placed = RunnerRun.objects.filter(run=run).only("runner_id").first()
    if placed is not None:
        command = {"type": "runner.command", "command": "abort", "run": str(run.public_id), "message": ""}
        realtime.send_to_group(group_of(placed.runner_id), command)


signals.abort_requested.connect(forward_abort, dispatch_uid="runners-abort")


def access_may_have_narrowed(sender: Any, **kwargs: Any) -> None:
    transaction.on_commit(partial(stop_what_is_out_of_reach))


for model in (TeamMembership, SessionShare):
    post_delete.connect(
        access_may_have_narrowed, sender=model, dispatch_uid=f"runners-reach-{model.__name__}"
    )
post_save.connect(access_may_have_narrowed, sender=TeamMembership, dispatch_uid="runners-reach-role")
