"""A session's costs and usage are the same whether its messages were imported or appended.

An import records costs from the stored rows (on PostgreSQL the database hands over only what a charge
reads), an append from the entries in hand; the usage rollup of the audit pages adds both up in SQL. Odd
messages are where those readings could part: no usage, a null or numeric model, a cost of 0 with a
configured price, an epoch timestamp, an escaped NUL (which jsonb cannot hold), extra keys.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from audit.models import SessionUsage
from costs import recording
from costs.models import MessageCost, UsageDay
from providers.models import LLMProvider
from sessions_app import services
from tests.factories import session_file, user_message

NUMBERS = st.one_of(
    st.integers(min_value=0, max_value=10**7),
    st.floats(min_value=0, max_value=1e6, allow_nan=False),
    st.just(-3),
    st.just("12"),
    st.none(),
)
USAGE = st.one_of(
    st.none(),
    st.just("lots"),
    st.fixed_dictionaries(
        {"input": NUMBERS, "output": NUMBERS},
        optional={
            "cacheRead": NUMBERS,
            "cacheWrite": NUMBERS,
            "cost": st.one_of(st.just({}), st.fixed_dictionaries({"total": NUMBERS})),
        },
    ),
)
MESSAGE = st.fixed_dictionaries(
    {},
    optional={
        "usage": USAGE,
        "model": st.sampled_from(["m", "priced", "", None, 7]),
        "provider": st.sampled_from(["p", "", None]),
        "timestamp": st.sampled_from([1767323045000, "2026-03-04T05:06:07Z", "soon", None]),
        "api": st.just("anthropic-messages"),
    },
)
TEXT = st.sampled_from(["ok", "a\u0000b", "ü and \\u0000 as text", ""])


def _entries(messages: list[tuple[dict[str, Any], str]]) -> list[dict[str, Any]]:
    entries, parent = [], None
    for n, (message, text) in enumerate(messages):
        entries.append(user_message(f"u{n}", parent, f"turn {n}"))
        entries.append(
            {
                "type": "message",
                "id": f"a{n}",
                "parentId": f"u{n}",
                "timestamp": "2026-01-02T03:04:07.000Z" if n % 3 else f"2026-02-0{n % 9 + 1}T00:00:00Z",
                "message": {"role": "assistant", "content": [{"type": "text", "text": text}], **message},
            }
        )
        parent = f"a{n}"
    return entries


def _costs(session: Any) -> list[tuple[Any, ...]]:
    fields = ("seq", "model", "day", "input", "output", "cache_read", "cache_write", "source")
    rows = MessageCost.objects.filter(session=session).order_by("seq")
    return [(*r[:-3], round(r[-3], 9), round(r[-2], 9), r[-1]) for r in rows.values_list(
        *fields, "cost", "path_cost", "path_messages"
    )]  # fmt: skip


def _days(session: Any) -> list[tuple[Any, ...]]:
    fields = (
        "day",
        "model",
        "copied",
        "input",
        "output",
        "cache_read",
        "cache_write",
        "messages",
        "unpriced",
    )
    rows = UsageDay.objects.filter(session=session).order_by("day", "model")
    return [(*r[:-1], round(r[-1], 9)) for r in rows.values_list(*fields, "cost")]


def _usage(session: Any) -> list[tuple[Any, ...]]:
    fields = ("model", "input", "output", "cache_read", "cache_write", "messages")
    rows = SessionUsage.objects.filter(session=session).order_by("model")
    return [(*r[:-1], round(float(r[-1]), 9)) for r in rows.values_list(*fields, "cost")]


@pytest.mark.django_db
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(messages=st.lists(st.tuples(MESSAGE, TEXT), min_size=1, max_size=12))
def test_an_import_and_appends_record_the_same_costs(
    user: Any, messages: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(recording, "COST_BATCH", 2)  # an import's rows written a few at a time
    LLMProvider.objects.get_or_create(
        name="priced",
        defaults={"model_id": "priced", "provider": "p", "cost_input": 3.0, "cost_output": 15.0},
    )
    owner = user()
    entries = _entries(messages)
    imported = services.import_jsonl(actor=owner, data=session_file(entries)).session
    appended = services.create_session(actor=owner, cwd="/")
    for entry in entries:
        services.append_entries(session=appended, entries=[entry], actor=owner)

    assert _costs(imported) == _costs(appended)
    assert _days(imported) == _days(appended)
    assert _usage(imported) == _usage(appended)
    assert MessageCost.objects.filter(session=imported).count() == len(messages)


@pytest.mark.django_db
def test_an_import_writes_its_costs_in_batches_between_reads(
    user: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Batches big enough to be copied in, while the stored messages are still being read."""
    monkeypatch.setattr(recording, "COST_BATCH", 60)
    usage = {"input": 10, "output": 5, "cost": {"total": 0.5}}
    entries = _entries([({"usage": usage, "model": "m"}, "ok")] * 130)
    session = services.import_jsonl(actor=user(), data=session_file(entries)).session
    costs = _costs(session)
    assert len(costs) == 130
    assert [row[-1] for row in costs] == list(range(1, 131))  # each message's path count, none skipped
    assert costs[-1][-2] == pytest.approx(65.0)  # the path's cost runs across the batches
    assert sum(day[-3] for day in _days(session)) == 130  # the days' messages, all of them
