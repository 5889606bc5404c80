"""Use cases of runners: register and revoke them, dispatch a run to one, steer it, and what it reports.

A dispatch is refused at once when the runner is offline, revoked, not the actor's to use, or has no such
workspace; it is never queued for a runner that may not come back. What the runner then says (the run
started, the lines Pi wrote, the run ended) comes through ``consumers.RunnerConsumer`` into the functions
at the end of this module.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from django.conf import settings
from django.db import IntegrityError, models, transaction
from django.db.models import Q
from django.utils import timezone

from actionlog.facade import record_action
from agent.facade import AgentRun, close_run
from core import realtime
from core.actors import Actor, user_of
from discussion.facade import post_comment
from pitree.storable import check_text
from provenance.facade import GitState, RunCommits, record_run_commits
from runners.models import Runner, RunnerRun, digest
from runners.verbs import Action
from sessions_app.facade import ChatSession, NotSignedIn, access, still_writable
from sessions_app.facade import services as session_services
from sync.facade import Cursor, sync_lines
from teams.facade import Team, TeamMembership, team_role

__all__ = [
    "DispatchRefused",
    "create_runner",
    "dispatch_run",
    "group_of",
    "revoke_runner",
    "runner_by_token",
    "runners_for",
    "send_to_run",
]

log = logging.getLogger(__name__)

THINKING_LEVELS = ("off", "minimal", "low", "medium", "high", "xhigh")
WRITERS = (TeamMembership.Role.OWNER, TeamMembership.Role.EDITOR)


class DispatchRefused(Exception):
    """The run cannot go to that runner now; the message says why, for the person who asked."""


def group_of(runner_id: int) -> str:
    return f"runner-{runner_id}"


def create_runner(*, actor: Actor, name: str, team: Team | None = None) -> tuple[Runner, str]:
    """Register a runner for the actor (or for a team the actor owns); return it and its token, shown once."""
    owner = user_of(actor)
    if owner is None:
        raise NotSignedIn()
    name = name.strip()
    check_text(name, "the runner's name")
    if not name or len(name) > 100:
        raise ValueError("A runner needs a name of 1 to 100 characters")
    if team is not None and team_role(owner, team) != TeamMembership.Role.OWNER:
        raise PermissionError("Only the team's owners may register a runner for it")
    token = Runner.new_token()
    with transaction.atomic():
        runner = Runner.objects.create(
            name=name, owner=owner, team=team, token_digest=digest(token), token_id=token[4:12]
        )
        record_action(actor=actor, action=Action.RUNNER_CREATE, session=None, team=team, runner=runner.pk)
    return runner, token


def _may_manage(user: Any, runner: Runner) -> bool:
    if runner.owner_id == user.pk or user.is_staff:
        return True
    return runner.team is not None and team_role(user, runner.team) == TeamMembership.Role.OWNER


def revoke_runner(*, actor: Actor, runner: Runner) -> Runner:
    """Revoke a runner: its socket closes, its runs in progress are stopped, no dispatch reaches it again."""
    user = user_of(actor)
    if user is None:
        raise NotSignedIn()
    if not _may_manage(user, runner):
        raise PermissionError("Only the runner's owner (or its team's owners) may revoke it")
    with transaction.atomic():
        locked = Runner.objects.select_for_update().get(pk=runner.pk)
        if locked.revoked_at is None:
            locked.revoked_at = timezone.now()
            locked.save(update_fields=["revoked_at"])
            record_action(
                actor=actor, action=Action.RUNNER_REVOKE, session=None, team=locked.team, runner=locked.pk
            )
            transaction.on_commit(
                partial(realtime.send_to_group, group_of(locked.pk), {"type": "runner.revoked"})
            )
            for placed in RunnerRun.objects.filter(runner=locked).select_related("run"):
                if not placed.run.is_finished:
                    run_ended(placed.run, status=AgentRun.Status.ABORTED, error="The runner was revoked")
    return locked


def runner_by_token(token: str) -> Runner | None:
    """The active runner this token belongs to, or None."""
    if not token.startswith("pwr_"):
        return None
    return Runner.objects.active().select_related("owner", "team").filter(token_digest=digest(token)).first()


def runners_for(user: Any) -> list[Runner]:
    """Runners the user may run sessions on: their own, and their teams' where they may edit."""
    teams = TeamMembership.objects.filter(user=user, role__in=WRITERS).values("team_id")
    return list(
        Runner.objects.active()
        .filter(Q(owner=user, team__isnull=True) | Q(team_id__in=teams))
        .select_related("team")
    )


def _usable(user: Any, runner: Runner) -> bool:
    if runner.revoked_at is not None:
        return False
    if runner.team_id is None:
        return bool(runner.owner_id == user.pk)
    return runner.team is not None and team_role(user, runner.team) in WRITERS


@dataclass(frozen=True, slots=True)
class Dispatch:
    run: AgentRun
    runner: Runner


def dispatch_run(
    *,
    actor: Actor,
    session: ChatSession,
    runner: Runner,
    workspace: str,
    prompt: str,
    thinking_level: str = "",
    model: str = "",
) -> AgentRun:
    """Send a prompt to Pi on a runner, in one of its workspaces; the session's pages follow the run live.

    ``model`` (``provider/id``) is one the runner said Pi offers there; empty keeps Pi's own choice."""
    user = user_of(actor)
    if user is None:
        raise NotSignedIn()
    access.authorize(actor, session, access.WRITE)
    check_text(prompt, "the prompt")
    if not prompt.strip():
        raise ValueError("The prompt is empty")
    if thinking_level and thinking_level not in THINKING_LEVELS:
        raise ValueError(f"Unknown thinking level: {thinking_level}")
    if not _usable(user, runner):
        raise DispatchRefused("You may not run sessions on this runner")
    if not runner.online:
        raise DispatchRefused(f"The runner {runner.name} is offline: start it, or choose another")
    if workspace not in runner.workspaces():
        raise DispatchRefused(f"The runner {runner.name} has no workspace {workspace!r}")
    if model and model not in runner.models():
        raise DispatchRefused(f"Pi on the runner {runner.name} does not offer the model {model!r}")
    lines = _session_lines(session)
    try:
        with transaction.atomic():
            locked = ChatSession.objects.select_for_update().get(pk=session.pk)
            if AgentRun.objects.filter(session=locked).active().exists():
                raise DispatchRefused("A run of this session is in progress: stop it first")
            run = AgentRun.objects.create(
                session=locked, requested_by=user, prompt=prompt, thinking_level=thinking_level
            )
            RunnerRun.objects.create(run=run, runner=runner, workspace=workspace)
            record_action(
                actor=actor,
                action=Action.DISPATCH,
                session=locked,
                run=str(run.public_id),
                runner=runner.pk,
                workspace=workspace,
            )
            message = {
                "type": "runner.dispatch",
                "run": str(run.public_id),
                "session": locked.pk,
                "piId": locked.pi_id,
                "header": locked.header_raw,
                "lines": lines,
                "workspace": workspace,
                "prompt": prompt,
                "thinkingLevel": thinking_level or None,
                "model": model or None,
            }
            transaction.on_commit(partial(realtime.send_to_group, group_of(runner.pk), message))
            transaction.on_commit(
                partial(
                    realtime.broadcast,
                    locked.pk,
                    "run_queued",
                    run=str(run.public_id),
                    runner=runner.name,
                    by=user.get_username(),
                )
            )
    except IntegrityError as exc:
        raise DispatchRefused("A run of this session is in progress: stop it first") from exc
    return run


def _session_lines(session: ChatSession) -> list[str]:
    """The session file's lines after its header, as the runner's Pi will continue it."""
    chunks = session_services.export_jsonl(session)
    text = b"".join(chunks).decode("utf-8", errors="surrogatepass")
    if len(text) > int(settings.PIWEB_RUNNER_MAX_SESSION_BYTES):
        raise DispatchRefused("This session is too big to send to a runner")
    return text.splitlines()[1:]


def active_runner_run(session: ChatSession) -> RunnerRun | None:
    """The session's queued or running run on a runner, if there is one (at most one run is active)."""
    return (
        RunnerRun.objects.filter(run__session=session, run__status__in=AgentRun.ACTIVE)
        .select_related("run", "runner")
        .first()
    )


def send_to_run(*, actor: Actor, run: AgentRun, kind: str, message: str) -> None:
    """Steer (delivered after the current tool calls) or follow up (after the run) a run on a runner."""
    access.authorize(actor, run.session, access.WRITE)
    check_text(message, "the message")
    if not message.strip():
        raise ValueError("The message is empty")
    placed = RunnerRun.objects.filter(run=run).first()
    if placed is None:
        raise DispatchRefused("Only a run on a runner can be steered")
    if run.is_finished:
        raise DispatchRefused("The run has ended")
    action = Action.STEER if kind == "steer" else Action.FOLLOW_UP
    with transaction.atomic():
        record_action(actor=actor, action=action, session=run.session, run=str(run.public_id))
        command = {"type": "runner.command", "command": kind, "run": str(run.public_id), "message": message}
        transaction.on_commit(partial(realtime.send_to_group, group_of(placed.runner_id), command))


# -- what a runner reports ---------------------------------------------------------------------------


def runner_connected(runner: Runner, *, connected: bool) -> None:
    """Record a runner's socket opening or closing (one action-log row each)."""
    now = timezone.now()
    with transaction.atomic():
        field = "connected_at" if connected else "disconnected_at"
        Runner.objects.filter(pk=runner.pk).update(**{field: now})
        action = Action.RUNNER_CONNECT if connected else Action.RUNNER_DISCONNECT
        record_action(
            actor=runner.owner, action=action, session=None, team=runner.team, runner=runner.pk, via="runner"
        )


def announce_runner_state(runner: Runner, *, online: bool) -> None:
    """Tell the pages of sessions with a run on this runner that it lost (or regained) its connection:
    Pi works on meanwhile, and what it writes arrives once the runner is back."""
    for placed in RunnerRun.objects.filter(runner=runner, run__status__in=AgentRun.ACTIVE).select_related(
        "run"
    ):
        realtime.broadcast(
            placed.run.session_id,
            "runner_state",
            run=str(placed.run.public_id),
            runner=runner.name,
            online=online,
        )


def runner_said_hello(runner: Runner, info: dict[str, Any]) -> None:
    Runner.objects.filter(pk=runner.pk).update(info=info)


def run_of(runner: Runner, run_id: str) -> AgentRun | None:
    """The run with this id if it went to this runner (a runner speaks only of its own runs)."""
    placed = (
        RunnerRun.objects.select_related("run", "run__requested_by", "run__session")
        .filter(runner=runner, run__public_id=run_id)
        .first()
    )
    return placed.run if placed is not None else None


def run_started(run: AgentRun) -> None:
    updated = AgentRun.objects.filter(pk=run.pk, status=AgentRun.Status.QUEUED).update(
        status=AgentRun.Status.RUNNING, started_at=timezone.now()
    )
    if updated:
        placed = RunnerRun.objects.filter(run=run).select_related("runner").first()
        name = placed.runner.name if placed is not None else ""
        by = run.requested_by.get_username() if run.requested_by is not None else ""
        realtime.broadcast(run.session_id, "run_started", run=str(run.public_id), runner=name, by=by)


def run_lines(
    run: AgentRun, *, header: str, start: Cursor, end_lines: int, end_bytes: int | None, lines: Sequence[str]
) -> Cursor:
    """Store the lines the runner's Pi wrote, into the run's session only, as its requester wrote them."""
    if run.requested_by is None:
        raise PermissionError("The run's requester is gone")
    access.authorize(run.requested_by, run.session, access.WRITE)
    check_runner_lines(lines, first=start.lines + 1)
    result = sync_lines(
        actor=run.requested_by,
        header_line=header,
        start=start,
        end_lines=end_lines,
        end_bytes=end_bytes,
        lines=lines,
        session_id=run.session_id,
    )
    return result.cursor


def run_commits_of(git: Any) -> RunCommits | None:
    """The runner's report of the workspace, read defensively (a runner sends JSON, of any shape)."""
    if not isinstance(git, dict):
        return None

    def text(key: str, limit: int) -> str:
        value = git.get(key)
        return value[:limit] if isinstance(value, str) else ""

    listed = git.get("commits")
    commits = [
        (str(c.get("sha") or ""), str(c.get("subject") or ""))
        for c in (listed if isinstance(listed, list) else [])[-500:]
        if isinstance(c, dict)
    ]
    state = GitState(repository=text("repository", 2000), branch=text("branch", 255), head=text("after", 40))
    return RunCommits(state=state, before=text("before", 40), commits=commits)


class InvalidLines(ValueError):
    """A runner sent something that is not a line Pi writes: nothing of the batch is stored."""


def check_runner_lines(lines: Sequence[str], *, first: int) -> None:
    """Refuse the whole batch unless every line is a Pi entry (a JSON object with a type and an id) of
    at most ``PIWEB_RUNNER_MAX_LINE_BYTES``: a runner writes Pi's file, nothing else."""
    limit = int(settings.PIWEB_RUNNER_MAX_LINE_BYTES)
    for number, line in enumerate(lines, start=first):
        size = len(line.encode("utf-8", "surrogatepass"))
        if size > limit:
            raise InvalidLines(f"line {number} is {size} bytes, over the {limit} a runner may send")
        try:
            value = json.loads(line)
        except ValueError:
            raise InvalidLines(f"line {number} is not JSON") from None
        entry = isinstance(value, dict) and isinstance(value.get("type"), str)
        if not (entry and isinstance(value.get("id"), str)):
            raise InvalidLines(f"line {number} is not a Pi entry (an object with a type and an id)")


def run_ended(run: AgentRun, *, status: str, error: str = "", git: Any = None) -> None:
    """Close the run as the runner reports it (succeeded, failed or aborted), and tell the pages.

    ``git`` is what the runner saw of the workspace (repository, branch, HEAD before and after, the
    commits between): the commits are linked to the run's entries, as its requester's."""
    if status not in (AgentRun.Status.SUCCEEDED, AgentRun.Status.FAILED, AgentRun.Status.ABORTED):
        raise ValueError(f"Unknown run status: {status}")
    report = run_commits_of(git)
    if report is not None and run.requested_by is not None:
        try:
            record_run_commits(
                actor=run.requested_by, session=run.session, run=str(run.public_id), report=report
            )
        except (PermissionError, ValueError) as exc:
            # The requester lost access meanwhile, or the report is not git's: the run still ends.
            log.warning("run %s: its commits were not linked: %s", run.public_id, exc)
    with transaction.atomic():
        locked = AgentRun.objects.select_for_update().get(pk=run.pk)
        if not locked.is_finished:
            close_run(locked, status=status, error=error[:2000])


def fail_orphaned_runs(runner_id: int) -> int:
    """End the runs of a runner that went away and did not come back within the grace period.

    Everything Pi wrote before it went is already stored; the next dispatch continues from the stored leaf.
    """
    runner = Runner.objects.filter(pk=runner_id).first()
    if runner is None or runner.online:
        return 0
    ended = 0
    for placed in RunnerRun.objects.filter(runner=runner).select_related("run"):
        if not placed.run.is_finished:
            run_ended(
                placed.run,
                status=AgentRun.Status.FAILED,
                error=f"The runner {runner.name} went offline during the run",
            )
            ended += 1
    return ended


# -- handing a session over ------------------------------------------------------------------------------


def handoff_candidates(*, actor: Actor, session: ChatSession) -> list[Any]:
    """The people the actor may hand the session to: everyone else who may change it."""
    access.authorize(actor, session, access.WRITE)
    user = user_of(actor)
    if user is None:
        raise NotSignedIn()
    from django.contrib.auth import get_user_model

    # Teammates of the actor and the session's owner: the people it can go to without a new share.
    teams = TeamMembership.objects.filter(user=user).values("team_id")
    people = get_user_model().objects.filter(
        Q(pk=session.owner_id) | Q(pk__in=TeamMembership.objects.filter(team_id__in=teams).values("user_id"))
    )
    return [
        u
        for u in people.filter(is_active=True).exclude(pk=user.pk).order_by("username")
        if ChatSession.objects.editable_by(u).filter(pk=session.pk).exists()
    ]


def hand_off(*, actor: Actor, session: ChatSession, to: Any, note: str) -> Any:
    """Hand the session to a teammate who may change it, with a note: they hear of it (inbox and mail,
    as a mention on the session's current entry, so the team sees it too) and continue it on their runner."""
    access.authorize(actor, session, access.WRITE)
    check_text(note, "the note")
    if to is None or not to.is_active or to.pk == getattr(user_of(actor), "pk", None):
        raise ValueError("Hand the session to someone else who is active here")
    if not ChatSession.objects.editable_by(to).filter(pk=session.pk).exists():
        raise ValueError(
            f"{to.get_username()} may not change this session: share it with them for editing first"
        )
    if not session.leaf_entry_id:
        raise ValueError("The session has no entries to hand over yet")
    text = f"@{to.get_username()} this session is yours now."
    if note.strip():
        text += f"\n\n{note.strip()}"
    with transaction.atomic():
        comment = post_comment(actor=actor, session=session, entry_id=session.leaf_entry_id, body=text)
        record_action(
            actor=actor,
            action=Action.HANDOFF,
            session=session,
            to=to.pk,
            to_name=to.get_username(),
            comment=comment.pk,
        )
    return comment


def stop_what_is_out_of_reach() -> int:
    """After access narrowed: abort the runner runs whose requester may no longer change their session,
    and revoke the team runners whose owner is no longer in the team. Returns how many runs stopped."""
    stopped = 0
    for placed in RunnerRun.objects.filter(run__status__in=AgentRun.ACTIVE).select_related(
        "run", "run__requested_by", "runner"
    ):
        run = placed.run
        if run.requested_by is None or not still_writable(run.requested_by, run.session_id):
            run_ended(
                run, status=AgentRun.Status.ABORTED, error="The requester may no longer change this session"
            )
            command = {"type": "runner.command", "command": "abort", "run": str(run.public_id), "message": ""}
            realtime.send_to_group(group_of(placed.runner_id), command)
            stopped += 1
    members = TeamMembership.objects.filter(
        team_id=models.OuterRef("team_id"), user_id=models.OuterRef("owner_id")
    )
    orphaned = Runner.objects.active().filter(team__isnull=False).exclude(models.Exists(members))
    for runner in orphaned:
        with transaction.atomic():
            Runner.objects.filter(pk=runner.pk).update(revoked_at=timezone.now())
            record_action(
                actor=runner.owner,
                action=Action.RUNNER_REVOKE,
                session=None,
                team=runner.team,
                runner=runner.pk,
                why="its owner left the team",
            )
            transaction.on_commit(
                partial(realtime.send_to_group, group_of(runner.pk), {"type": "runner.revoked"})
            )
    return stopped
