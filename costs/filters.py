"""The session list's filters by what a session's answers cost and which models wrote them, answered
from the day totals kept as answers are stored (``UsageDay``, all branches, copies included)."""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import Any

from django.db.models import Exists, OuterRef, Q, QuerySet, Sum

from costs.models import UsageDay
from sessions_app.facade import ChatSession, FilterError, SessionFilter, register_session_filter

__all__ = ["register"]


def _models(query: QuerySet[ChatSession], values: list[str], _viewer: Any) -> QuerySet[ChatSession]:
    """Some answer came from any of these models (``provider/id``, or the id alone)."""
    cond = Q()
    for value in values:
        cond |= Q(model=value) if "/" in value else Q(model=value) | Q(model__endswith=f"/{value}")
    return query.filter(Exists(UsageDay.objects.filter(cond, session=OuterRef("pk"))))


def _providers(query: QuerySet[ChatSession], values: list[str], _viewer: Any) -> QuerySet[ChatSession]:
    cond = Q()
    for value in values:
        cond |= Q(model__startswith=f"{value}/")
    return query.filter(Exists(UsageDay.objects.filter(cond, session=OuterRef("pk"))))


def _dollars(name: str, values: list[str]) -> float:
    try:
        amount = Decimal(values[-1])
    except InvalidOperation:
        raise FilterError(f"{name}: {values[-1]!r} is not an amount in dollars") from None
    if not amount.is_finite() or amount < 0:
        raise FilterError(f"{name}: give an amount of zero or more")
    return float(amount)


def _totals() -> Any:
    # One row per session: its answers' cost summed over days and models.
    return UsageDay.objects.values("session_id").annotate(total=Sum("cost"))


def _cost_min(query: QuerySet[ChatSession], values: list[str], _viewer: Any) -> QuerySet[ChatSession]:
    floor = _dollars("cost_min", values)
    if floor <= 0:
        return query
    return query.filter(pk__in=_totals().filter(total__gte=floor).values("session_id"))


def _cost_max(query: QuerySet[ChatSession], values: list[str], _viewer: Any) -> QuerySet[ChatSession]:
    # A session with no priced answer costs nothing, so it is under any ceiling.
    ceiling = _dollars("cost_max", values)
    return query.exclude(pk__in=_totals().filter(total__gt=ceiling).values("session_id"))


def register() -> None:
    for spec in (
        SessionFilter("model", "Model", _models, order=30, help="provider/model, or the model alone"),
        SessionFilter("provider", "Provider", _providers, order=31),
        SessionFilter("cost_min", "Cost from $", _cost_min, kind="number", order=50),
        SessionFilter("cost_max", "Cost up to $", _cost_max, kind="number", order=51),
    ):
        register_session_filter(spec)
