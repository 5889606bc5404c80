"""Session list filters on what sessions used and cost: model, provider and a cost range.

They answer from ``SessionUsage`` (one row per session and model, all branches, kept as entries are
stored and repaired by ``manage.py reconcile``), never from the messages themselves.
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import Any

from django.db.models import DecimalField, Exists, OuterRef, QuerySet, Subquery, Sum, Value
from django.db.models.functions import Coalesce

from audit.models import SessionUsage
from sessions_app.facade import ChatSession, FilterError, SessionFilter, register_session_filter

Sessions = QuerySet[ChatSession]


def _readable_models(viewer: Any) -> list[str]:
    # Offered models come from sessions the viewer may read, never from anyone else's.
    readable = ChatSession.objects.visible_to(viewer).values("pk")
    return sorted(set(SessionUsage.objects.filter(session__in=readable).values_list("model", flat=True)))


def _model_choices(viewer: Any) -> list[tuple[str, str]]:
    return [(m, m) for m in _readable_models(viewer)]


def _provider_choices(viewer: Any) -> list[tuple[str, str]]:
    providers = sorted({m.split("/", 1)[0] for m in _readable_models(viewer) if "/" in m})
    return [(p, p) for p in providers]


def _model(query: Sessions, values: list[str], viewer: Any) -> Sessions:
    # Any of the models ("provider/model", or the model's name alone under any provider).
    known = set(_readable_models(viewer))
    names = {m.split("/", 1)[-1] for m in known}
    for value in values:
        if value not in known and value not in names:
            raise FilterError(f"model: {value!r} is not used in any session you can read")
    wanted = SessionUsage.objects.filter(session=OuterRef("pk"), messages__gt=0)
    matches = [m for m in known if m in values or m.split("/", 1)[-1] in values]
    return query.filter(Exists(wanted.filter(model__in=matches)))


def _provider(query: Sessions, values: list[str], viewer: Any) -> Sessions:
    known = {p for p, _ in _provider_choices(viewer)}
    for value in values:
        if value not in known:
            raise FilterError(f"provider: {value!r} is not used in any session you can read")
    matches = [m for m in _readable_models(viewer) if m.split("/", 1)[0] in values]
    wanted = SessionUsage.objects.filter(session=OuterRef("pk"), messages__gt=0, model__in=matches)
    return query.filter(Exists(wanted))


def _dollars(name: str, values: list[str]) -> Decimal:
    if len(values) > 1:
        raise FilterError(f"{name}: one amount only")
    try:
        amount = Decimal(values[0].lstrip("$"))
    except InvalidOperation:
        raise FilterError(f"{name}: {values[0]!r} is not an amount in dollars") from None
    if not amount.is_finite() or amount < 0:
        raise FilterError(f"{name}: {values[0]!r} is not an amount in dollars")
    return amount


def _with_cost(query: Sessions) -> Sessions:
    total = (
        SessionUsage.objects.filter(session=OuterRef("pk"))
        .values("session")
        .annotate(total=Sum("cost"))
        .values("total")
    )
    money = DecimalField(max_digits=60, decimal_places=20)
    if "filter_cost" in query.query.annotations:
        return query
    return query.annotate(
        filter_cost=Coalesce(Subquery(total, output_field=money), Value(Decimal(0)), output_field=money)
    )


def _cost_min(query: Sessions, values: list[str], viewer: Any) -> Sessions:
    return _with_cost(query).filter(**{"filter_cost__gte": _dollars("cost_min", values)})


def _cost_max(query: Sessions, values: list[str], viewer: Any) -> Sessions:
    return _with_cost(query).filter(**{"filter_cost__lte": _dollars("cost_max", values)})


def register() -> None:
    register_session_filter(
        SessionFilter(
            name="model", label="Model", apply=_model, choices=_model_choices, kind="choice", order=30,
            help="Used in the session, any branch",
        )
    )  # fmt: skip
    register_session_filter(
        SessionFilter(
            name="provider", label="Provider", apply=_provider, choices=_provider_choices, kind="choice",
            order=31, help="Used in the session, any branch",
        )
    )  # fmt: skip
    register_session_filter(
        SessionFilter(
            name="cost_min", label="Cost from $", apply=_cost_min, kind="number", order=40,
            help="Dollars, all branches",
        )
    )  # fmt: skip
    register_session_filter(
        SessionFilter(
            name="cost_max", label="Cost up to $", apply=_cost_max, kind="number", order=41,
            help="Dollars, all branches",
        )
    )  # fmt: skip
