"""Session list filters on what sessions used and cost: model, provider and a cost range.

They answer from ``SessionUsage`` (one row per session and model, all branches, kept as entries are
stored and repaired by ``manage.py reconcile``), never from the messages themselves.
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from functools import reduce
from operator import or_
from typing import Any

from django.db.models import Exists, OuterRef, Q, QuerySet, Sum

from audit.models import SessionUsage
from sessions_app.facade import ChatSession, FilterError, SessionFilter, register_session_filter

Sessions = QuerySet[ChatSession]


_MEMO = "_piweb_readable_models"


def _readable_models(viewer: Any) -> list[str]:
    # Offered models come from sessions the viewer may read, never from anyone else's. The model and
    # provider fields both ask for them while one page is drawn: read once, on that request's viewer.
    known = getattr(viewer, _MEMO, None)
    if isinstance(known, list):
        return known
    readable = ChatSession.objects.visible_to(viewer).values("pk")
    models = sorted(set(SessionUsage.objects.filter(session__in=readable).values_list("model", flat=True)))
    setattr(viewer, _MEMO, models)
    return models


def _model_choices(viewer: Any) -> list[tuple[str, str]]:
    return [(m, m) for m in _readable_models(viewer)]


def _provider_choices(viewer: Any) -> list[tuple[str, str]]:
    providers = sorted({m.split("/", 1)[0] for m in _readable_models(viewer) if "/" in m})
    return [(p, p) for p in providers]


def _narrow(query: Sessions, name: str, values: list[str], wanted: Q, viewer: Any) -> Sessions:
    # A value no readable session used is an error, never a hint about anyone else's sessions.
    readable = ChatSession.objects.visible_to(viewer).values("pk")
    for value, one in zip(values, _each(name, values), strict=True):
        if not SessionUsage.objects.filter(one, session__in=readable, messages__gt=0).exists():
            raise FilterError(f"{name}: {value!r} is not used in any session you can read")
    return query.filter(Exists(SessionUsage.objects.filter(wanted, session=OuterRef("pk"), messages__gt=0)))


def _each(name: str, values: list[str]) -> list[Q]:
    if name == "provider":
        return [Q(model__startswith=f"{value}/") for value in values]
    # "provider/model", or the model's name under any provider.
    return [Q(model=value) | Q(model__endswith=f"/{value}") for value in values]


def _model(query: Sessions, values: list[str], viewer: Any) -> Sessions:
    # Any of the models.
    return _narrow(query, "model", values, reduce(or_, _each("model", values)), viewer)


def _provider(query: Sessions, values: list[str], viewer: Any) -> Sessions:
    # Any of the providers.
    return _narrow(query, "provider", values, reduce(or_, _each("provider", values)), viewer)


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


def _costing(**bound: Decimal) -> Any:
    # One grouped pass over the usage rows (a few per session), joined as a set: cheaper than a sum
    # per listed session. Sessions without usage cost $0: only a lower bound of 0 includes them.
    return (
        SessionUsage.objects.values("session").annotate(total=Sum("cost")).filter(**bound).values("session")
    )


def _cost_min(query: Sessions, values: list[str], viewer: Any) -> Sessions:
    least = _dollars("cost_min", values)
    if least == 0:
        return query
    return query.filter(pk__in=_costing(total__gte=least))


def _cost_max(query: Sessions, values: list[str], viewer: Any) -> Sessions:
    # Sessions with no usage rows cost nothing, so they are under any maximum.
    return query.exclude(pk__in=_costing(total__gt=_dollars("cost_max", values)))


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
