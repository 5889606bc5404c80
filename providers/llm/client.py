"""Entry points: stream one completion, collect one, retry transient failures."""

from __future__ import annotations

import math
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from providers.llm import anthropic, openai
from providers.llm.errors import is_transient_error
from providers.llm.stream import AssistantBuilder, run_stream
from providers.llm.types import EventSink, Message, ProviderConfig, ToolSpec

DEFAULT_TIMEOUT = 120.0

# Room Pi leaves between the estimated input and the window (pi-ai simple-options).
CONTEXT_SAFETY_TOKENS = 4096
CONTEXT_SAFETY_RATIO = 0.15
MIN_OUTPUT_WITH_RATIO_MARGIN = 32768


def fit_max_tokens(context_window: int, input_tokens: int, max_tokens: int) -> int:
    """The output cap Pi sends: ``max_tokens`` fitted into the window after the estimated input.

    The margin is 15% of the input (at least 4,096 tokens) while that leaves 32,768 tokens of output;
    otherwise only the fixed margin, with output capped at 32,768. Never below 1.
    """
    if context_window <= 0:
        return max(1, max_tokens)
    margin = max(CONTEXT_SAFETY_TOKENS, math.ceil(input_tokens * CONTEXT_SAFETY_RATIO))
    room = context_window - input_tokens - margin
    if room < MIN_OUTPUT_WITH_RATIO_MARGIN:
        room = min(MIN_OUTPUT_WITH_RATIO_MARGIN, context_window - input_tokens - CONTEXT_SAFETY_TOKENS)
    return min(max_tokens, max(1, room))


# Pi's default thinking budgets per level (the top level thinks as much as "high"), and the answer
# room always left beside a budget.
THINKING_BUDGETS = {"minimal": 1024, "low": 2048, "medium": 8192, "high": 16384, "xhigh": 16384}
MIN_ANSWER_TOKENS = 1024


def fit_thinking(
    context_window: int, input_tokens: int, base_max_tokens: int, model_max_tokens: int, level: str
) -> tuple[int, int]:
    """Return (max_tokens, budget_tokens) for a budget-thinking request, sized as Pi sizes it.

    The budget is added on top of the answer's cap (up to the model's limit), then the whole is fitted
    into the window, and the budget always leaves 1,024 tokens for the answer.
    """
    budget = THINKING_BUDGETS.get(level, THINKING_BUDGETS["high"])
    wanted = min(base_max_tokens + budget, model_max_tokens)
    if wanted <= budget:
        budget = min(budget, max(0, wanted - MIN_ANSWER_TOKENS))
    max_tokens = fit_max_tokens(context_window, input_tokens, wanted)
    return max_tokens, min(budget, max(0, max_tokens - MIN_ANSWER_TOKENS))


def output_limits(
    config: ProviderConfig, input_tokens: int, max_tokens: int, thinking_level: str | None = None
) -> tuple[int, int | None]:
    """The output cap and thinking budget Pi sends for ``input_tokens`` of estimated input: ``max_tokens``
    fitted into the window; an Anthropic reasoning model thinking at a level gets its budget on top."""
    cap = fit_max_tokens(config.context_window, input_tokens, max_tokens)
    if config.api != "anthropic-messages" or not config.reasoning or thinking_level in (None, "", "off"):
        return cap, None
    return fit_thinking(
        config.context_window, input_tokens, cap, config.max_output_tokens, str(thinking_level)
    )


def stream_completion(
    config: ProviderConfig,
    *,
    system: str | None,
    messages: Sequence[Mapping[str, Any]],
    on_event: EventSink | None = None,
    tools: Sequence[ToolSpec] | None = None,
    max_tokens: int | None = None,
    session_id: str | None = None,
    cache: bool = True,
    timeout: float = DEFAULT_TIMEOUT,
    abort: threading.Event | None = None,
    thinking_level: str | None = None,
    thinking_budget: int | None = None,
) -> Message:
    """Stream one assistant turn and return it as a Pi assistant message.

    Never raises for provider or network failures: they come back with stopReason "error" and the
    provider's text in errorMessage. ``timeout`` bounds connecting and each wait for data. A missing
    ``session_id`` gets a fresh random one so consecutive calls are not pinned to one backend. ``cache``
    (on by default, as in Pi) adds Anthropic cache breakpoints; OpenAI-compatible servers cache on their
    own. ``thinking_level`` is the run's level: it is recorded on the message as Pi records it, and sent
    to a reasoning model where the server takes one (``thinking_budget`` sizes Anthropic's thinking).
    """
    session_id = session_id or uuid.uuid4().hex
    builder = AssistantBuilder(config, on_event, thinking_level=thinking_level)
    if config.api == "openai-completions":
        url, headers, body = openai.build_request(
            config,
            system=system,
            messages=messages,
            tools=tools,
            max_tokens=max_tokens,
            session_id=session_id,
            thinking_level=thinking_level,
        )
        decoder: openai.Decoder | anthropic.Decoder = openai.Decoder(builder)
        label = openai.LABEL
    elif config.api == "anthropic-messages":
        url, headers, body = anthropic.build_request(
            config,
            system=system,
            messages=messages,
            tools=tools,
            max_tokens=max_tokens,
            session_id=session_id,
            cache=cache,
            thinking_level=thinking_level,
            thinking_budget=thinking_budget,
        )
        decoder, label = anthropic.Decoder(builder), anthropic.LABEL
    else:
        return builder.finish("error", f"Unsupported api: {config.api}")
    return run_stream(
        label=label,
        url=url,
        headers=headers,
        body=body,
        decoder=decoder,
        builder=builder,
        timeout=timeout,
        abort=abort,
    )


def complete(
    config: ProviderConfig,
    *,
    system: str | None,
    messages: Sequence[Mapping[str, Any]],
    tools: Sequence[ToolSpec] | None = None,
    max_tokens: int | None = None,
    session_id: str | None = None,
    cache: bool = False,
    timeout: float = DEFAULT_TIMEOUT,
    abort: threading.Event | None = None,
    thinking_level: str | None = None,
    thinking_budget: int | None = None,
) -> Message:
    """Return the finished assistant message without watching the stream."""
    return stream_completion(
        config,
        system=system,
        messages=messages,
        tools=tools,
        max_tokens=max_tokens,
        session_id=session_id,
        cache=cache,
        timeout=timeout,
        abort=abort,
        thinking_level=thinking_level,
        thinking_budget=thinking_budget,
    )


def retry_transient(
    call: Callable[[], Message],
    *,
    attempts: int = 3,
    base_delay: float = 2.0,
    sleep: Callable[[float], object] | None = None,
    abort: threading.Event | None = None,
    on_retry: Callable[[int, float, Message], None] | None = None,
    retryable: Callable[[Message], bool] = is_transient_error,
) -> Message:
    """Call up to ``attempts`` times while the result is a transient error; return the last result.

    Waits ``base_delay * 2**n`` between calls. Overflow errors are never retried: the same request
    would fail the same way. ``on_retry(attempt, delay, failed_message)`` runs before each wait;
    ``retryable`` lets callers substitute their own classification.
    """
    wait = sleep or (abort.wait if abort is not None else time.sleep)
    message = call()
    for attempt in range(1, attempts):
        if not retryable(message) or (abort is not None and abort.is_set()):
            break
        delay = base_delay * 2 ** (attempt - 1)
        if on_retry is not None:
            on_retry(attempt, delay, message)
        wait(delay)
        if abort is not None and abort.is_set():
            break
        message = call()
    return message
