"""The run loop: prompt, stream, persist, then let the policy decide on compaction, recovery or retry.

Every provider call happens outside a transaction: read the context → call → short append. Entries are
only ever written whole, at message end, so a worker that dies mid-stream leaves nothing half-written.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from django.conf import settings as django_settings
from django.db import connection, transaction
from django.utils import timezone

from agent import compaction, policy, signals
from agent.abort_watch import AbortWatch
from agent.models import AgentRun
from agent.policy import Action, Decision, ModelSpec, RetrySettings
from compaction_app.facade import CompactionSettings
from core import metrics, realtime
from core.actors import RUN_WORKER
from pitree.messages import convert_to_llm
from providers.facade import (
    ProviderConfig,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    ToolCallDelta,
    Transcript,
    estimate_request_tokens,
    output_limits,
    resolve_compat,
    stream_completion,
    zero_usage,
)
from providers.facade import requests as model_request
from sessions_app.facade import (
    ContextView,
    Entry,
    QuotaExceeded,
    append_entries,
    context_for_leaf,
    run_author,
)

log = logging.getLogger(__name__)

__all__ = ["INTERRUPTED", "RunLoop", "interrupted_message", "model_spec", "request_transcript"]

INTERRUPTED = (
    "The run was interrupted: the worker stopped while the reply was streaming, "
    "so the partial reply was discarded. Send the prompt again to continue."
)


def model_spec(config: ProviderConfig) -> ModelSpec:
    return ModelSpec(
        provider=config.provider,
        model_id=config.model_id,
        context_window=config.context_window,
        max_output_tokens=config.max_output_tokens,
    )


def _now_ms() -> int:
    return int(time.time() * 1000)


@dataclass
class RunLoop:
    """One run in a worker. ``sleep`` waits between retries and returns early when the run is aborted."""

    run: AgentRun
    config: ProviderConfig
    settings: CompactionSettings
    retry: RetrySettings
    abort: threading.Event = field(default_factory=threading.Event)
    sleep: Callable[[float], object] | None = None
    leaf: str | None = None
    fuse: bool = False
    retry_attempt: int = 0
    last_message: dict[str, Any] | None = None
    error: str = ""
    # Once the prompt is stored the turn is finished whatever the quotas say: refusing the provider's
    # answer would lose what was already paid for. The quotas are checked up to the prompt.
    within_turn: bool = False

    @property
    def session(self) -> Any:
        return self.run.session

    @property
    def model(self) -> ModelSpec:
        return model_spec(self.config)

    # -- events and writes ---------------------------------------------------------------------------

    def emit(self, event: str, **fields: Any) -> None:
        """Publish an event after the current transaction (at once outside one)."""
        transaction.on_commit(
            partial(realtime.broadcast, self.session.pk, event, run=str(self.run.public_id), **fields)
        )

    def append(self, entries: list[dict[str, Any]]) -> list[str]:
        """Append entries under the run's own last entry and return their ids."""
        first = {**entries[0], "parentId": self.leaf}
        rows = append_entries(
            session=self.session,
            entries=[first, *entries[1:]],
            actor=RUN_WORKER,
            log=None,
            quota=not self.within_turn,
            author=run_author(self.run),
        )
        self.leaf = rows[-1].entry_id
        return [row.entry_id or "" for row in rows]

    def context(self) -> ContextView:
        # The run's own position: None before a new root (an edited first message), not the session's leaf.
        return context_for_leaf(self.session, self.leaf, use_session_leaf=False)

    def thinking_level(self, view: ContextView | None = None) -> str:
        """The level the run thinks at: the one it was started with, else the session's."""
        level = (view or self.context()).projection.thinking_level
        return self.run.thinking_level or (level if isinstance(level, str) and level else "off")

    def save_run(self, *fields: str) -> None:
        self.run.save(update_fields=list(fields))

    # -- the run ---------------------------------------------------------------------------------------

    def execute(self) -> None:
        """Run the prompt to its end; the run row records the outcome."""
        self.session.refresh_from_db()
        self.leaf = self.session.leaf_entry_id
        self.emit(
            "run_started", prompt=self.run.prompt, provider=self.config.provider, model=self.config.model_id
        )
        with AbortWatch(self.run.pk, self.abort):
            try:
                regenerating = self._regenerate_start()
                self._edit_start()
                self._record_settings()
                if not regenerating:
                    self._pre_prompt_check()
                    self._append_user_message()
                self._turns()
            except QuotaExceeded as exc:
                # Only the prompt or the settings before it can meet a quota; nothing was sent yet.
                self.error = f"The run did not start: {exc}"
            except Exception as exc:
                log.exception("agent run %s failed", self.run.public_id)
                self.error = self.error or f"The run failed: {type(exc).__name__}: {exc}"
        self._finish()

    def _regenerate_start(self) -> bool:
        """For a regenerate, start at the parent of the answer given again: the new answer is its sibling."""
        if not self.run.regenerate_from:
            return False
        row = (
            Entry.objects.filter(session=self.session, entry_id=self.run.regenerate_from)
            .values_list("parent_id", flat=True)
            .first()
        )
        if row is None:
            raise ValueError(f"The entry to answer again is gone: {self.run.regenerate_from}")
        self.leaf = row
        self.fuse = False  # a new attempt at the turn opens a new recovery window, as a prompt does
        return True

    def _edit_start(self) -> None:
        """For an edited prompt, start at the parent of the message it replaces: the new one is a sibling."""
        if not self.run.edit_of:
            return
        rows = list(
            Entry.objects.filter(session=self.session, entry_id=self.run.edit_of).values_list(
                "parent_id", flat=True
            )[:1]
        )
        if not rows:
            raise ValueError(f"The message to edit is gone: {self.run.edit_of}")
        self.leaf = rows[0]

    def _record_settings(self) -> None:
        """Write model and thinking-level changes when the run uses other ones than the session."""
        current = self.context().projection
        wanted = {"provider": self.config.provider, "modelId": self.config.model_id}
        entries: list[dict[str, Any]] = []
        if current.model != wanted:
            entries.append({"type": "model_change", **wanted})
        level = self.run.thinking_level
        if level and level != current.thinking_level:
            entries.append({"type": "thinking_level_change", "thinkingLevel": level})
        if entries:
            self.append(entries)

    def _pre_prompt_check(self) -> None:
        """Compact for what the last answer left behind before the new prompt goes in; never continue here."""
        view = self.context()
        messages = view.projection.messages
        sources = view.projection.sources()
        index = next(
            (i for i in range(len(messages) - 1, -1, -1) if messages[i].get("role") == "assistant"), -1
        )
        if index < 0:
            return
        decision = self._decide(messages[index], sources[index], view, skip_aborted_check=False)
        self._act(decision, sources[index], messages[index], before_prompt=True)

    def _append_user_message(self) -> None:
        message = {
            "role": "user",
            # Attached pictures follow the text, as Pi stores them.
            "content": [{"type": "text", "text": self.run.prompt}, *(self.run.images or [])],
            "timestamp": _now_ms(),
        }
        (entry_id,) = self.append([{"type": "message", "message": message}])
        self.within_turn = True
        self.fuse = False  # a user message opens a new recovery window
        self.run.user_entry_id = entry_id
        self.run.recovery_attempted = False
        self.save_run("user_entry_id", "recovery_attempted")

    def _turns(self) -> None:
        continuing = False
        while not self.abort.is_set():
            if continuing and policy.exceeds_threshold(
                (view := self.context()).projection, view.path, self.model, self.settings
            ):
                compaction.compact(self, reason="threshold", will_retry=False)
            message, entry_id = self._turn()
            if self.abort.is_set():
                return
            if self._maybe_retry(message, entry_id):
                continuing = True
                continue
            self._close_retry(message)
            decision = self._decide(message, entry_id, self.context(), skip_aborted_check=True)
            if not self._act(decision, entry_id, message):
                return
            continuing = True

    def _turn(self) -> tuple[dict[str, Any], str]:
        """Send the context, stream the answer to viewers and append it whole at message end."""
        view = self.context()
        transcript = request_transcript(self.config, view.projection.messages)
        thinking_level = self.thinking_level(view)
        max_tokens, budget = output_cap(self.config, view.projection.messages, thinking_level)
        if not connection.in_atomic_block:
            # The reply takes seconds and needs no database until it ends: a runs worker with dozens of
            # runs in flight holds a connection only for the moments it writes.
            connection.close()
        message = stream_completion(
            self.config,
            system=transcript.system,
            messages=transcript.messages,
            tools=transcript.tools,
            on_event=self._on_stream_event,
            max_tokens=max_tokens,
            thinking_level=thinking_level,
            thinking_budget=budget,
            session_id=str(self.session.pi_id),
            abort=self.abort,
            # A provider that stalls ends the turn as a (retryable) timeout error after this many seconds.
            timeout=float(django_settings.PIWEB_LLM_TIMEOUT),
        )
        (entry_id,) = self.append([{"type": "message", "message": message}])
        self.last_message = message
        self.fuse = policy.fuse_after_message_end(self.fuse, message)
        self._settle_recovery(message)
        self.run.final_entry_id = entry_id
        self.run.stop_reason = str(message.get("stopReason") or "")
        self.run.recovery_attempted = self.fuse
        self.save_run("final_entry_id", "stop_reason", "recovery_attempted", "recovery_events")
        return message, entry_id

    def _on_stream_event(self, event: StreamEvent) -> None:
        if isinstance(event, TextDelta | ThinkingDelta):
            kind = "text" if isinstance(event, TextDelta) else "thinking"
            realtime.broadcast(
                self.session.pk,
                "run_delta",
                run=str(self.run.public_id),
                delta=event.delta,
                index=event.index,
                kind=kind,
            )
        elif isinstance(event, ToolCallDelta):
            realtime.broadcast(
                self.session.pk,
                "run_delta",
                run=str(self.run.public_id),
                delta=event.arguments_delta,
                index=event.index,
                kind="toolCall",
            )

    # -- transient retry -------------------------------------------------------------------------------

    def _maybe_retry(self, message: Mapping[str, Any], entry_id: str) -> bool:
        """Retry a transient failure after a backoff, omitting the failed attempt from the context."""
        if not self.retry.enabled or not policy.is_retryable_error(message, self.model.context_window):
            return False
        attempt = self.retry_attempt + 1
        if attempt > self.retry.max_retries:
            return False
        self.retry_attempt = attempt
        delay = self.retry.delay_ms(attempt)
        error = str(message.get("errorMessage") or "Unknown error")
        self.emit(
            "auto_retry_start",
            attempt=attempt,
            maxAttempts=self.retry.max_retries,
            delayMs=delay,
            errorMessage=error,
        )
        omitted = self._omit(entry_id, "transient")
        self._record(
            {"kind": "transient", "entryId": entry_id, "omitted": omitted, "error": error, "attempt": attempt}
        )
        self.run.retry_attempts += 1
        self.save_run("retry_attempts", "recovery_events")
        (self.sleep or self.abort.wait)(delay / 1000)
        return not self.abort.is_set()

    def _close_retry(self, message: Mapping[str, Any]) -> None:
        if self.retry_attempt == 0:
            return
        if message.get("stopReason") == "error":
            self.emit(
                "auto_retry_end",
                success=False,
                attempt=self.retry_attempt,
                finalError=message.get("errorMessage"),
            )
        else:
            self.emit("auto_retry_end", success=True, attempt=self.retry_attempt)
        self.retry_attempt = 0

    # -- compaction and overflow recovery --------------------------------------------------------------

    def _decide(
        self, message: Mapping[str, Any], entry_id: str | None, view: ContextView, *, skip_aborted_check: bool
    ) -> Decision:
        return policy.check_compaction(
            message,
            current_model=self.model,
            settings=self.settings,
            path=view.path,
            projection=view.projection,
            message_entry_id=entry_id,
            recovery_attempted=self.fuse,
            skip_aborted_check=skip_aborted_check,
        )

    def _act(
        self,
        decision: Decision,
        entry_id: str | None,
        message: Mapping[str, Any],
        *,
        before_prompt: bool = False,
    ) -> bool:
        """Carry out a decision; return True when the run should continue with another turn.

        Before a prompt the outcome only shapes the context: the new prompt runs whatever happened.
        """
        if decision.action is Action.COMPACT:
            compaction.compact(self, reason=decision.reason or "threshold", will_retry=False)
            return False
        if decision.action is Action.FUSE_BLOWN:
            error = decision.error_message or policy.OVERFLOW_RECOVERY_FAILED
            fields = {"reason": "overflow", "aborted": False, "willRetry": False, "errorMessage": error}
            self.emit("compaction_end", result=None, **fields)
            self.emit("session_compact_failed", fromExtension=False, **fields)
            if not before_prompt:
                self.error = error
            return False
        if decision.action is Action.RECOVER:
            self.fuse = True
            self.run.recovery_attempted = True
            omitted = self._omit(entry_id, decision.kind or "overflow") if entry_id is not None else []
            outcome = compaction.compact(self, reason="overflow", will_retry=True)
            self._record(
                {
                    "kind": decision.kind or "overflow",
                    "entryId": entry_id,
                    "omitted": omitted,
                    "compaction": outcome.reference,
                    "compacted": outcome.success,
                    "error": str(message.get("errorMessage") or "") or None,
                    "retrySucceeded": None,
                }
            )
            self.save_run("recovery_attempted", "recovery_events")
            if not outcome.success:
                if not before_prompt:
                    self.error = (
                        outcome.error_message or "Context overflow recovery failed: nothing to compact"
                    )
                return False
            return True
        return False

    def _omit(self, entry_id: str, why: str) -> list[str]:
        """Append a ``context_edit`` omitting the failed attempt and each tool result answering it.

        The audit rows of the edits say why and which run, in the transaction that appends them.
        """
        targets = policy.recovery_targets(self.context().path, entry_id)
        edits = [{"type": "context_edit", "targetId": t, "replacement": None} for t in targets]
        with transaction.atomic():
            ids = self.append(edits)
            signals.attempts_omitted.send(AgentRun, edit_ids=ids, run=self.run, why=why)
        for edit_id, edit in zip(ids, edits, strict=True):
            self.emit("entry_appended", entry={**edit, "id": edit_id})
        return ids

    def _record(self, event: dict[str, Any]) -> None:
        self.run.recovery_events = [*self.run.recovery_events, event]

    def _settle_recovery(self, message: Mapping[str, Any]) -> None:
        """Mark whether the turn after a compact-and-retry came back whole."""
        events = self.run.recovery_events
        pending = [
            e for e in events if e.get("kind") in ("overflow", "length") and e.get("retrySucceeded") is None
        ]
        if not pending or not pending[-1].get("compacted"):
            return
        pending[-1]["retrySucceeded"] = message.get("stopReason") not in ("error", "length", "aborted")
        self.run.recovery_events = list(events)

    # -- end -------------------------------------------------------------------------------------------

    def _finish(self) -> None:
        run = self.run
        last = self.last_message or {}
        if self.abort.is_set():
            run.status = AgentRun.Status.ABORTED
        elif self.error or last.get("stopReason") == "error":
            run.status = AgentRun.Status.FAILED
            run.error = self.error or str(last.get("errorMessage") or "The provider reported an error")
        else:
            run.status = AgentRun.Status.SUCCEEDED
        run.error = run.error if run.status == AgentRun.Status.FAILED else ""
        run.finished_at = timezone.now()
        with transaction.atomic():
            run.save(
                update_fields=["status", "error", "finished_at", "recovery_events", "recovery_attempted"]
            )
            signals.run_closed.send(AgentRun, run=run)
        metrics.run_finished(str(run.status))
        self.emit(
            "run_ended",
            status=run.status,
            error=run.error or None,
            stopReason=run.stop_reason or None,
            toolUse=last.get("stopReason") == "toolUse",
        )


def request_transcript(config: ProviderConfig, messages: list[dict[str, Any]]) -> Transcript:
    """What a provider receives for a projected context: Pi's prompt (content and sections), the
    conversation, and the tools in force. piweb runs no tools: a ``toolUse`` stop ends the run."""
    in_place = config.api == "openai-completions" and (
        config.mid_conversation_system
        or resolve_compat(config.provider, config.base_url, config.compat).supports_mid_convo_system_messages
    )
    return model_request.request_transcript(messages, in_place=in_place)


def output_cap(
    config: ProviderConfig, messages: list[dict[str, Any]], thinking_level: str = "off"
) -> tuple[int, int | None]:
    """The output cap and thinking budget Pi sends: the model's limit fitted into the window after Pi's
    estimate of the context; an Anthropic reasoning model thinking at a level gets its budget on top."""
    tokens = estimate_request_tokens(convert_to_llm(messages))
    return output_limits(config, tokens, config.max_output_tokens, thinking_level)


def interrupted_message(config: ProviderConfig | None) -> dict[str, Any]:
    """Return the error assistant message that closes a run whose worker died mid-stream."""
    return {
        "role": "assistant",
        "content": [],
        "api": config.api if config else "",
        "provider": config.provider if config else "",
        "model": config.model_id if config else "",
        "usage": zero_usage(),
        "stopReason": "error",
        "errorMessage": INTERRUPTED,
        "timestamp": _now_ms(),
    }
