"""Compacting a stored session: what is written, what is refused, and what the runs record."""

from __future__ import annotations

from typing import Any

import pytest
from cryptography.fernet import Fernet

from compaction_app.domain.summary import SummaryRequest, SummaryResponse
from compaction_app.models import CompactionRun
from compaction_app.services import CompactionRefused, compact_session, request_compaction, summarizer_for
from compaction_app.summarizers import LLMSummarizer, OfflineSummarizer
from pitree.timestamps import js_date_ms
from pitree.tokens import estimate_tokens
from providers.llm import ProviderConfig
from providers.llm.testserver import ProviderServer, dropped, error, reply, tool_call
from providers.models import LLMProvider
from sessions_app import services as session_services
from sessions_app.queries import context_for_leaf
from tests.factories import SYSTEM_PROMPT, conversation, payloads, store

pytestmark = pytest.mark.django_db


def _llm(server: ProviderServer, **kwargs: Any) -> LLMSummarizer:
    config = ProviderConfig(
        api="openai-completions",
        provider="test",
        base_url=server.url + "/v1",
        model_id="summary-model",
        api_key="sk-test",
        context_window=64000,
        max_output_tokens=2000,
    )
    return LLMSummarizer(config=config, base_delay=0.01, **kwargs)


def test_manual_compaction_writes_one_entry_with_the_system_prompt_snapshot(compactable: Any) -> None:
    outcome = compact_session(
        session=compactable, actor=compactable.owner, reason="manual", summarizer=OfflineSummarizer()
    )

    assert outcome.status == "succeeded"
    [entry] = payloads(compactable, "compaction")
    compactable.refresh_from_db()
    assert compactable.leaf_entry_id == entry["id"] == outcome.entry_id
    assert entry["parentId"] == "a8"
    assert entry["firstKeptEntryId"] == outcome.first_kept_entry_id
    assert entry["summary"].startswith("## Goal")
    assert entry["fromHook"] is False
    # No model ran: the summary says it is offline and spent nothing (Pi adds entry usage to its totals).
    assert set(entry["details"]) == {"readFiles", "modifiedFiles", "offline"}
    assert entry["details"]["offline"] is True
    assert entry["usage"]["totalTokens"] == 0 and entry["usage"]["cost"]["total"] == 0
    assert entry["systemMessage"]["content"] == SYSTEM_PROMPT
    assert entry["systemMessage"]["timestamp"] == js_date_ms(entry["timestamp"])
    context = context_for_leaf(compactable).projection.messages
    assert context[0]["role"] == "system" and context[1]["role"] == "compactionSummary"
    assert outcome.estimated_tokens_after == sum(estimate_tokens(m) for m in context)
    assert outcome.estimated_tokens_after < outcome.tokens_before


def test_the_run_records_the_compaction_and_the_range_it_replaced(compactable: Any, owner: Any) -> None:
    outcome = compact_session(
        session=compactable,
        actor=compactable.owner,
        reason="threshold",
        requested_by=owner,
        summarizer=OfflineSummarizer(),
    )

    run = CompactionRun.objects.get(operation_id=outcome.operation_id)
    assert (run.kind, run.reason, run.status, run.requested_by) == (
        "compaction",
        "threshold",
        "succeeded",
        owner,
    )
    assert run.planned_leaf == "a8"
    assert run.result_entry_id == outcome.entry_id
    assert (run.summarizer, run.model) == ("OfflineSummarizer", "offline-structured")
    assert run.tokens_before == round(outcome.tokens_before or 0)
    assert run.tokens_after == outcome.estimated_tokens_after
    assert run.usage is not None and run.duration_ms is not None
    kept_seq = next(i for i, p in enumerate(payloads(compactable)) if p["id"] == run.first_kept_entry_id)
    assert run.replaced_first_seq == 1  # the system message stays out of the summary
    assert run.replaced_last_seq == kept_seq - 1


def test_compacting_again_is_refused_as_already_compacted(compactable: Any) -> None:
    compact_session(
        session=compactable, actor=compactable.owner, reason="manual", summarizer=OfflineSummarizer()
    )
    compactable.refresh_from_db()

    with pytest.raises(CompactionRefused, match=r"^Already compacted$"):
        request_compaction(session=compactable, actor=compactable.owner)
    outcome = compact_session(
        session=compactable, actor=compactable.owner, reason="manual", summarizer=OfflineSummarizer()
    )

    assert (outcome.status, outcome.error) == ("failed", "Already compacted")
    assert outcome.error_message == "Compaction failed: Already compacted"
    assert len(payloads(compactable, "compaction")) == 1


def test_a_small_session_has_nothing_to_compact(owner: Any) -> None:
    session = store(owner, conversation(1))

    with pytest.raises(CompactionRefused, match=r"^Nothing to compact \(session too small\)$"):
        request_compaction(session=session, actor=session.owner)
    # Nothing queued: the refusal is kept in the history only.
    assert list(CompactionRun.objects.values_list("status", "error")) == [
        ("refused", "Nothing to compact (session too small)")
    ]


def test_automatic_compaction_with_nothing_to_do_is_skipped_silently(owner: Any, events: Any) -> None:
    session = store(owner, conversation(1))
    drain = events(session)

    outcome = compact_session(session=session, actor=session.owner, reason="overflow", will_retry=True)

    assert outcome.status == "skipped"
    assert not CompactionRun.objects.exists()
    assert drain() == []


def test_events_follow_pi_after_commit(
    compactable: Any, events: Any, django_capture_on_commit_callbacks: Any
) -> None:
    drain = events(compactable)

    with django_capture_on_commit_callbacks(execute=True):
        outcome = compact_session(
            session=compactable,
            actor=compactable.owner,
            reason="overflow",
            will_retry=True,
            summarizer=OfflineSummarizer(),
        )

    got = [e for e in drain() if e["event"].startswith("compaction")]
    assert [e["event"] for e in got] == ["compaction_start", "compaction_end"]
    assert got[0]["reason"] == "overflow"
    end = got[1]
    assert (end["reason"], end["aborted"], end["willRetry"]) == ("overflow", False, True)
    assert end["result"]["firstKeptEntryId"] == outcome.first_kept_entry_id
    assert end["result"]["estimatedTokensAfter"] == outcome.estimated_tokens_after
    assert end["result"]["tokensBefore"] == round(outcome.tokens_before or 0)
    assert "errorMessage" not in end


@pytest.mark.parametrize(
    ("reason", "prefix"),
    [
        ("manual", "Compaction failed: "),
        ("threshold", "Auto-compaction failed: "),
        ("overflow", "Context overflow recovery failed: "),
    ],
)
def test_a_provider_error_fails_with_pis_message_and_saves_nothing(
    compactable: Any,
    provider_server: ProviderServer,
    events: Any,
    reason: str,
    prefix: str,
    django_capture_on_commit_callbacks: Any,
) -> None:
    provider_server.enqueue(error(400, "bad request body"))
    drain = events(compactable)

    with django_capture_on_commit_callbacks(execute=True):
        outcome = compact_session(
            session=compactable, actor=compactable.owner, reason=reason, summarizer=_llm(provider_server)
        )

    assert outcome.status == "failed"
    assert outcome.error_message is not None and outcome.error_message.startswith(
        prefix + "Summarization failed: "
    )
    assert "bad request body" in outcome.error_message
    assert payloads(compactable, "compaction") == []
    compactable.refresh_from_db()
    assert compactable.leaf_entry_id == "a8"
    end = next(e for e in drain() if e["event"] == "compaction_end")
    assert (end["errorMessage"], end["aborted"], end["willRetry"]) == (outcome.error_message, False, False)
    assert CompactionRun.objects.get().error == outcome.error_message


@pytest.mark.parametrize(
    ("response", "message"),
    [
        (reply("half a summ", stop="length"), "Summarization failed: generation hit the token cap"),
        (tool_call("read", {"path": "a.py"}), "Summarization attempted to call a tool"),
    ],
)
def test_cut_off_or_tool_calling_summaries_are_rejected(
    compactable: Any, provider_server: ProviderServer, response: Any, message: str
) -> None:
    provider_server.enqueue(response)

    outcome = compact_session(
        session=compactable, actor=compactable.owner, reason="manual", summarizer=_llm(provider_server)
    )

    assert outcome.status == "failed"
    assert outcome.error is not None and outcome.error.startswith(message)
    assert payloads(compactable, "compaction") == []


def test_the_default_provider_writes_the_models_summary(
    compactable: Any, provider_server: ProviderServer
) -> None:
    LLMProvider.objects.create(
        name="local",
        api="openai-completions",
        base_url=provider_server.url + "/v1",
        model_id="summary-model",
        provider="test",
        api_key="sk-secret",
        is_summarizer_default=True,
    )
    provider_server.enqueue(reply("## Goal\n- Keep the parser intact.", usage={"input": 900, "output": 40}))

    outcome = compact_session(session=compactable, actor=compactable.owner, reason="manual")

    assert outcome.status == "succeeded"
    [entry] = payloads(compactable, "compaction")
    assert entry["summary"].startswith("## Goal\n- Keep the parser intact.")
    assert entry["usage"]["input"] == 900
    run = CompactionRun.objects.get()
    assert (run.summarizer, run.model) == ("LLMSummarizer", "summary-model")
    [request] = provider_server.requests
    assert request.headers.get("authorization") == "Bearer sk-secret"


def test_a_summarizer_whose_key_cannot_be_decrypted_fails_the_compaction_saying_so(
    compactable: Any, provider_server: ProviderServer
) -> None:
    provider = LLMProvider.objects.create(
        name="local",
        base_url=provider_server.url + "/v1",
        model_id="summary-model",
        provider="test",
        is_summarizer_default=True,
    )
    # Stored under another PIWEB_SECRETS_KEY, as in a database restored without its key.
    sealed = "fernet:" + Fernet(Fernet.generate_key()).encrypt(b"sk-lost").decode()
    LLMProvider.objects.filter(pk=provider.pk).update(api_key=sealed)

    outcome = compact_session(session=compactable, actor=compactable.owner, reason="manual")

    assert outcome.status == "failed"
    assert outcome.error is not None
    assert outcome.error.startswith("The API key of provider 'local' cannot be decrypted")
    assert provider_server.requests == [] and payloads(compactable, "compaction") == []


def test_a_dropped_connection_is_retried(compactable: Any, provider_server: ProviderServer) -> None:
    provider_server.enqueue(dropped(after=2), reply("## Goal\n- Second try worked."))

    outcome = compact_session(
        session=compactable, actor=compactable.owner, reason="manual", summarizer=_llm(provider_server)
    )

    assert outcome.status == "succeeded"
    assert len(provider_server.requests) == 2
    assert payloads(compactable, "compaction")[0]["summary"].startswith("## Goal\n- Second try worked.")


class _AppendsWhileSummarizing:
    """A summarizer during whose call the user keeps chatting."""

    def __init__(self, session: Any) -> None:
        self.session = session

    def summarize(self, request: SummaryRequest) -> SummaryResponse:
        session_services.append_entries(
            session=self.session,
            actor=self.session.owner,
            entries=[{"type": "message", "message": {"role": "user", "content": "one more", "timestamp": 5}}],
        )
        return OfflineSummarizer().summarize(request)


def test_a_session_that_moves_during_the_summary_is_left_alone(compactable: Any) -> None:
    outcome = compact_session(
        session=compactable,
        actor=compactable.owner,
        reason="manual",
        summarizer=_AppendsWhileSummarizing(compactable),
    )

    assert outcome.status == "failed"
    assert outcome.error_message == "Compaction failed: Session changed while compacting"
    assert payloads(compactable, "compaction") == []
    assert payloads(compactable)[-1]["message"]["content"] == "one more"


def offline_for_tests(session: Any) -> OfflineSummarizer:
    return OfflineSummarizer(max_output_tokens=64)


def test_the_summarizer_setting_wins(compactable: Any, settings: Any) -> None:
    LLMProvider.objects.create(
        name="x", base_url="http://127.0.0.1:9/v1", model_id="m", provider="p", is_summarizer_default=True
    )
    settings.PIWEB_SUMMARIZER = f"{__name__}.offline_for_tests"

    assert summarizer_for(compactable) == OfflineSummarizer(max_output_tokens=64)
    settings.PIWEB_SUMMARIZER = None
    assert isinstance(summarizer_for(compactable), LLMSummarizer)


def test_the_sessions_model_writes_the_summary_when_a_record_serves_it(
    compactable: Any, provider_server: ProviderServer
) -> None:
    # As in Pi, the session's model (here provider "p", model "m") summarizes, not the default.
    LLMProvider.objects.create(
        name="default",
        base_url="http://127.0.0.1:9/v1",
        model_id="summary-model",
        provider="test",
        is_summarizer_default=True,
    )
    LLMProvider.objects.create(
        name="session's", base_url=provider_server.url + "/v1", model_id="m", provider="p", api_key="k"
    )
    provider_server.enqueue(reply("## Goal\n- Keep the parser intact."))

    outcome = compact_session(session=compactable, actor=compactable.owner, reason="manual")

    assert outcome.status == "succeeded"
    [request] = provider_server.requests
    assert request.body["model"] == "m"


def test_a_session_model_no_record_serves_falls_back_to_the_default_summarizer(compactable: Any) -> None:
    default = LLMProvider.objects.create(
        name="default",
        base_url="http://127.0.0.1:9/v1",
        model_id="summary-model",
        provider="test",
        is_summarizer_default=True,
    )
    unserved = {"provider": "p", "modelId": "gone"}

    summarizer = summarizer_for(compactable, model=unserved)
    assert isinstance(summarizer, LLMSummarizer) and summarizer.config.model_id == "summary-model"
    default.delete()
    assert isinstance(summarizer_for(compactable, model=unserved), OfflineSummarizer)
