"""Start, execute and abort agent runs. Each function owns its transaction; events go out after commit."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from actionlog.facade import record_action
from agent import compaction, signals
from agent.loop import RunLoop, interrupted_message
from agent.models import AgentRun
from agent.policy import RetrySettings
from agent.verbs import Action
from core import realtime
from core.actors import RUN_WORKER, Actor, user_of
from core.tasks import enqueue
from pitree.images import InvalidImage, image_blocks
from pitree.messages import content_text
from pitree.storable import check_text
from providers.facade import LLMProvider
from sessions_app.facade import (
    ChatSession,
    Entry,
    access,
    append_entries,
    check_quotas,
    context_for_leaf,
    run_author,
)

log = logging.getLogger(__name__)

__all__ = [
    "InvalidImage",
    "NoActiveRun",
    "NoProvider",
    "RunConflict",
    "abort_active_run",
    "abort_run",
    "execute_run",
    "regenerate_run",
    "resend_edited",
    "resolve_provider",
    "start_run",
]

THINKING_LEVELS = ("off", "minimal", "low", "medium", "high", "xhigh")


class RunConflict(Exception):
    """The session already has a queued or running run."""

    def __init__(self, active: AgentRun | None) -> None:
        super().__init__("A run is already active for this session")
        self.active = active


class NoProvider(ValueError):
    """No model is configured to answer the prompt."""


def resolve_provider(session: ChatSession, provider_id: int | None) -> LLMProvider:
    """Return the requested provider, else the session's current model if configured, else the first one."""
    if provider_id is not None:
        found = LLMProvider.objects.filter(pk=provider_id).first()
        if found is None:
            raise NoProvider(f"LLM provider not found: {provider_id}")
        return found
    model = context_for_leaf(session).projection.model or {}
    current = LLMProvider.objects.filter(
        provider=model.get("provider"), model_id=model.get("modelId")
    ).first()
    fallback = current or LLMProvider.objects.order_by("-is_summarizer_default", "pk").first()
    if fallback is None:
        raise NoProvider("No LLM provider is configured; add one in the admin")
    return fallback


def start_run(
    *,
    session: ChatSession,
    user: Actor,
    prompt: str,
    provider: LLMProvider | None = None,
    thinking_level: str = "",
    provider_id: int | None = None,
    grant: access.Access | None = None,
    images: Sequence[Mapping[str, Any]] = (),
) -> AgentRun:
    """Queue a run for ``prompt`` (logged with it); raise RunConflict when the session has an active run.

    ``images`` (``{"data": <base64>, "mimeType"}`` each) go into the user message after the text, as
    Pi stores attached pictures; a bad one raises InvalidImage naming it. ``user`` must be allowed to
    change the session.
    """
    check_text(prompt, "the prompt")
    access.authorize(user, session, access.WRITE, grant=grant)
    if not prompt.strip():
        raise ValueError("The prompt is empty")
    blocks = image_blocks(
        images, max_bytes=settings.PIWEB_MAX_IMAGE_BYTES, max_count=settings.PIWEB_MAX_IMAGES
    )
    if thinking_level and thinking_level not in THINKING_LEVELS:
        raise ValueError(f"Unknown thinking level: {thinking_level}")
    chosen = provider or resolve_provider(session, provider_id)
    try:
        with transaction.atomic():
            # The partial unique index is the guard; the lock makes the common case a clean 409.
            locked = ChatSession.objects.select_for_update().get(pk=session.pk)
            active = AgentRun.objects.filter(session=locked).active().first()
            if active is not None:
                raise RunConflict(active)
            # A run whose prompt could not be stored is refused now (413), not queued to fail.
            size = len(prompt.encode("utf-8", "surrogatepass")) + sum(len(b["data"]) for b in blocks)
            check_quotas(locked, entries=1, size=size)
            run = AgentRun.objects.create(
                session=locked,
                requested_by=user_of(user),
                provider=chosen,
                prompt=prompt,
                images=blocks,
                thinking_level=thinking_level,
            )
            detail: dict[str, Any] = {"images": len(blocks)} if blocks else {}
            record_action(actor=user, action=Action.RUN, session=locked, run=str(run.public_id), **detail)
            # Every open page disables Send at once, before a worker picks the run up.
            transaction.on_commit(
                partial(realtime.broadcast, locked.pk, "run_queued", run=str(run.public_id))
            )
            transaction.on_commit(partial(_enqueue, run.pk))
    except IntegrityError as exc:
        raise RunConflict(AgentRun.objects.filter(session=session).active().first()) from exc
    return run


def regenerate_run(
    *,
    session: ChatSession,
    user: Actor,
    entry_id: str,
    provider: LLMProvider | None = None,
    thinking_level: str = "",
    provider_id: int | None = None,
    grant: access.Access | None = None,
) -> AgentRun:
    """Answer an assistant message again: a run from its parent, whose answer becomes a sibling branch.

    The run records the user message it answers as its prompt; nothing new is appended for the user.
    Raise ValueError when ``entry_id`` is not an assistant message of the session.
    """
    access.authorize(user, session, access.WRITE, grant=grant)  # before anything about the entries
    target = Entry.objects.filter(session=session, entry_id=entry_id).first()
    if target is None:
        raise ValueError(f"entryId: entry not found: {entry_id}")
    if target.type != "message" or target.role != "assistant":
        raise ValueError(f"entryId: {entry_id} is not an assistant message")
    if target.parent_id is None:
        raise ValueError(f"entryId: {entry_id} has no parent to answer again")
    path = context_for_leaf(session, target.parent_id).path
    asked = next((e.message for e in reversed(path) if e.type == "message" and e.role == "user"), None)
    prompt = content_text(asked.get("content"), " ") if isinstance(asked, dict) else ""
    with transaction.atomic():
        run = start_run(
            session=session,
            user=user,
            prompt=prompt if prompt.strip() else "(answer again)",
            provider=provider,
            thinking_level=thinking_level,
            provider_id=provider_id,
            grant=grant,
        )
        # Still inside the transaction: the task is queued on commit and sees where to start.
        run.regenerate_from = entry_id
        run.save(update_fields=["regenerate_from"])
    return run


def resend_edited(
    *,
    session: ChatSession,
    user: Actor,
    entry_id: str,
    prompt: str,
    provider: LLMProvider | None = None,
    thinking_level: str = "",
    provider_id: int | None = None,
    grant: access.Access | None = None,
) -> AgentRun:
    """Send an edited user message: a run whose prompt goes in beside ``entry_id``, as a sibling branch.

    The run starts at the edited message's parent (a root message's edit is a new root); the original
    message and everything after it stay as they were. Raise ValueError when ``entry_id`` is not a user
    message of the session.
    """
    access.authorize(user, session, access.WRITE, grant=grant)  # before anything about the entries
    target = Entry.objects.filter(session=session, entry_id=entry_id).first()
    if target is None:
        raise ValueError(f"entryId: entry not found: {entry_id}")
    if target.type != "message" or target.role != "user":
        raise ValueError(f"entryId: {entry_id} is not a user message")
    with transaction.atomic():
        run = start_run(
            session=session,
            user=user,
            prompt=prompt,
            provider=provider,
            thinking_level=thinking_level,
            provider_id=provider_id,
            grant=grant,
        )
        # Still inside the transaction: the task is queued on commit and sees where to start.
        run.edit_of = entry_id
        run.save(update_fields=["edit_of"])
    return run


def _enqueue(run_pk: int) -> None:
    try:
        enqueue("agent.run_agent", run_pk)
    except Exception:
        log.exception("could not queue agent run %s", run_pk)
        AgentRun.objects.filter(pk=run_pk, status=AgentRun.Status.QUEUED).update(
            status=AgentRun.Status.FAILED, error="The run could not be queued", finished_at=timezone.now()
        )


def abort_run(*, run: AgentRun, actor: Actor) -> AgentRun:
    """Abort a run: a queued one ends at once, a running one stops at its next read of the stream."""
    access.authorize(actor, run.session, access.WRITE)
    with transaction.atomic():
        locked = AgentRun.objects.select_for_update().get(pk=run.pk)
        if locked.is_finished:
            return locked
        locked.abort_requested = True
        record_action(actor=actor, action=Action.ABORT, session=run.session, run=str(locked.public_id))
        if locked.status == AgentRun.Status.QUEUED:
            locked.status = AgentRun.Status.ABORTED
            locked.finished_at = timezone.now()
            transaction.on_commit(
                partial(
                    realtime.broadcast,
                    locked.session_id,
                    "run_ended",
                    run=str(locked.public_id),
                    status=locked.status,
                    error=None,
                )
            )
        locked.save(update_fields=["abort_requested", "status", "finished_at"])
        transaction.on_commit(partial(signals.abort_requested.send, sender=AgentRun, run=locked))
    return locked


class NoActiveRun(Exception):
    """Stop was asked for a session that has no queued or running run."""


def abort_active_run(*, session: ChatSession, actor: Actor) -> AgentRun:
    """Stop the session's active run (what the Stop button does): see ``abort_run``."""
    access.authorize(actor, session, access.WRITE)  # before saying whether a run is active
    active = AgentRun.objects.filter(session=session).active().first()
    if active is None:
        raise NoActiveRun("No run is active for this session")
    return abort_run(run=active, actor=actor)


def _claim(run_pk: int) -> tuple[AgentRun | None, bool]:
    """Mark a queued run running. Return (run, interrupted); run is None when there is nothing to do."""
    with transaction.atomic():
        run = (
            AgentRun.objects.select_for_update(of=("self",))
            .select_related("session", "provider")
            .filter(pk=run_pk, session__deleted_at__isnull=True)  # a deleted session's run has no work
            .first()
        )
        if run is None or run.is_finished:
            return None, False
        if run.status == AgentRun.Status.RUNNING:
            return run, True  # redelivered after the worker that held it died
        run.status = AgentRun.Status.RUNNING
        run.started_at = timezone.now()
        run.save(update_fields=["status", "started_at"])
        return run, False


def execute_run(run_pk: int, *, sleep: Callable[[float], object] | None = None) -> AgentRun | None:
    """Run a queued run to its end; skip a finished one and close an interrupted one with an error."""
    run, interrupted = _claim(run_pk)
    if run is None:
        return None
    if interrupted:
        return _close_interrupted(run)
    if run.provider is None:
        return _fail(run, "The run's LLM provider was deleted")
    try:
        config = run.provider.config()
    except ValueError as error:  # its key cannot be decrypted (a database restored without its key)
        return _fail(run, str(error))
    loop = RunLoop(
        run=run,
        config=config,
        settings=compaction.settings_for(config.provider, config.model_id, run.session),
        retry=RetrySettings.from_mapping(settings.PIWEB_AGENT_RETRY),
        sleep=sleep,
        fuse=_inherited_fuse(run),
    )
    loop.execute()
    return run


def _inherited_fuse(run: AgentRun) -> bool:
    """Return the session's recovery fuse as the previous run left it (Pi keeps it until a user message)."""
    previous = (
        AgentRun.objects.filter(session_id=run.session_id, created_at__lte=run.created_at)
        .exclude(pk=run.pk)
        .order_by("-created_at")
        .values_list("recovery_attempted", flat=True)
        .first()
    )
    return bool(previous)


def _close_interrupted(run: AgentRun) -> AgentRun:
    """End a run whose worker died: one error entry if the prompt was recorded, nothing half-written."""
    if run.user_entry_id is not None:
        config = run.provider.config() if run.provider is not None else None
        # The end of a turn whose prompt is stored: closed whatever the quotas say (see ``RunLoop``).
        rows = append_entries(
            session=run.session,
            entries=[{"type": "message", "message": interrupted_message(config)}],
            actor=RUN_WORKER,
            log=None,  # a step of the run, which was logged when it was started
            quota=False,
            author=run_author(run),
        )
        run.final_entry_id = rows[-1].entry_id
        run.stop_reason = "error"
        run.save(update_fields=["final_entry_id", "stop_reason"])
    return _fail(run, interrupted_message(None)["errorMessage"])


def _fail(run: AgentRun, error: str) -> AgentRun:
    return close_run(run, status=AgentRun.Status.FAILED, error=error)


def close_run(run: AgentRun, *, status: str, error: str = "") -> AgentRun:
    """End a run with ``status`` (and why), and tell its session's pages once it commits."""
    run.status = status
    run.error = error
    run.finished_at = timezone.now()
    run.save(update_fields=["status", "error", "finished_at"])
    transaction.on_commit(
        partial(
            realtime.broadcast,
            run.session_id,
            "run_ended",
            run=str(run.public_id),
            status=run.status,
            error=error or None,
        )
    )
    return run
