"""REST adapters for costs: a session's branch, total and abandoned cost; a user's and a team's usage."""

from __future__ import annotations

import hashlib
from datetime import timedelta
from typing import Any

from django.utils import timezone
from drf_spectacular.utils import OpenApiResponse, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from core.api.fields import Text, parse
from costs import queries
from costs.queries import Report, Totals
from sessions_app.facade import (
    ChatSession,
    Entry,
    LinkReadableView,
    access,
    cached,
    conditional,
    link_scope,
    state_key,
)

ERROR = OpenApiResponse(description='{"error": <message>}')
ERRORS = {400: ERROR, 403: ERROR, 404: ERROR}
MAX_ENTRIES = 500  # entry ids one request may ask the cost of (a page of cards)
MAX_SESSIONS = 200
MAX_DAYS = 3660

_TOTALS = inline_serializer(
    "CostTotals",
    {
        "cost": serializers.FloatField(),
        "tokens": serializers.IntegerField(),
        "messages": serializers.IntegerField(),
        "input": serializers.IntegerField(),
        "output": serializers.IntegerField(),
        "cacheRead": serializers.IntegerField(),
        "cacheWrite": serializers.IntegerField(),
        "unpriced": serializers.IntegerField(),
    },
)


class SessionCostQuery(serializers.Serializer[Any]):
    at = Text(required=False, max_length=255, help_text="The branch's last entry (default: the leaf)")
    entries = Text(
        required=False,
        max_length=MAX_ENTRIES * 256,
        help_text=f"Comma-separated entry ids whose own cost to return (at most {MAX_ENTRIES})",
    )


class SessionCostView(LinkReadableView):
    @extend_schema(
        parameters=[SessionCostQuery],
        responses={
            200: inline_serializer(
                "SessionCost",
                {
                    "at": serializers.CharField(allow_null=True),
                    "branch": _TOTALS,
                    "session": _TOTALS,
                    "abandoned": _TOTALS,
                    "messages": serializers.DictField(),
                },
            ),
            **ERRORS,
        },
    )
    def get(self, request: Request, pk: int) -> Response:
        """Return the cost of the branch to ``at``, of the whole session, and of its abandoned branches.

        Abandoned: every message not on the path to the session's leaf. A path or frozen link sees the
        cost of what it shows only: its branch and its messages, never the session's totals.
        """
        grant = self.access(pk)
        query = self.valid(SessionCostQuery, request.query_params)
        ids = [i for i in (query.get("entries") or "").split(",") if i]
        if len(ids) > MAX_ENTRIES:
            raise serializers.ValidationError({"entries": [f"At most {MAX_ENTRIES} entry ids per request."]})
        if any(len(i) > 255 for i in ids):
            raise serializers.ValidationError({"entries": ["An entry id is longer than 255 characters."]})
        session = grant.session
        at_id = query.get("at") or grant.leaf_id()
        link_scope.require_visible(grant, at_id)
        # The leaf is part of the state: the abandoned cost is measured against it.
        etag = conditional.etag_for("cost", request, grant)
        unchanged = conditional.not_modified(request, etag)
        if unchanged is not None:
            return unchanged  # type: ignore[return-value]  # an HttpResponse, as DRF allows
        if grant.restricted:
            return conditional.tagged(Response(_cost_body(grant, at_id, ids)), etag)
        # Costs are recorded with the entries (a recount bumps the revision): one answer per state and query.
        asked = hashlib.sha256(f"{at_id}\n{','.join(ids)}".encode("utf-8", "surrogatepass")).hexdigest()
        key = state_key(f"cost:{COST_VERSION}", session, session.leaf_seq, asked)
        body = cached(key, lambda: _cost_body(grant, at_id, ids), COST_TTL)
        return conditional.tagged(Response(body), etag)


COST_VERSION = 1
COST_TTL = 600  # seconds


def _cost_body(grant: access.Access, at_id: str | None, ids: list[str]) -> dict[str, Any]:
    session = grant.session
    at_totals = queries.branch_totals(session, _entry(session, at_id))
    body: dict[str, Any] = {
        "at": at_id,
        "branch": at_totals.as_json(),
        "session": None,
        "abandoned": None,
        "messages": _messages(grant, session, ids),
    }
    if not grant.restricted:
        total = queries.session_totals([session.pk]).get(session.pk, Totals())
        leaf = session.leaf_entry_id
        on_leaf = at_totals if leaf == at_id else queries.branch_totals(session, _entry(session, leaf))
        body["session"] = total.as_json()
        body["abandoned"] = total.minus(on_leaf).as_json()
    return body


class SessionsCostQuery(serializers.Serializer[Any]):
    ids = Text(
        max_length=MAX_SESSIONS * 21, help_text=f"Comma-separated session ids (at most {MAX_SESSIONS})"
    )


class SessionsCostView(APIView):
    @extend_schema(
        parameters=[SessionsCostQuery],
        responses={200: inline_serializer("SessionsCost", {"results": serializers.DictField()}), **ERRORS},
    )
    def get(self, request: Request) -> Response:
        """Return the total cost of each listed session the caller may read (others are left out)."""
        query = parse(SessionsCostQuery, request.query_params)
        parts = [p.strip() for p in query["ids"].split(",") if p.strip()]
        if len(parts) > MAX_SESSIONS or not all(p.isdigit() and len(p) < 19 for p in parts):
            raise serializers.ValidationError(
                {"ids": [f"Give up to {MAX_SESSIONS} session ids (whole numbers), separated by commas."]}
            )
        visible = ChatSession.objects.visible_to(request.user).filter(pk__in=[int(p) for p in parts])
        pks = list(visible.values_list("pk", flat=True))
        totals = queries.session_totals(pks)
        return Response({"results": {str(pk): totals.get(pk, Totals()).as_json() for pk in pks}})


class UsageQuery(serializers.Serializer[Any]):
    days = serializers.IntegerField(
        required=False, min_value=1, max_value=MAX_DAYS, help_text="How many days back (default: all)"
    )


_REPORT = inline_serializer(
    "UsageReport",
    {
        "totals": _TOTALS,
        "sessions": serializers.IntegerField(),
        "byModel": serializers.ListField(child=serializers.DictField()),
        "days": serializers.ListField(child=serializers.DictField()),
    },
)


class MyUsageView(APIView):
    @extend_schema(parameters=[UsageQuery], responses={200: _REPORT, **ERRORS})
    def get(self, request: Request) -> Response:
        """Return my own usage: the assistant messages of the sessions I own, per model and per day."""
        since = _since(request)
        report = queries.usage_report(queries.own_sessions(request.user), since=since)
        return Response({"user": request.user.get_username(), **report_json(report)})


class TeamUsageView(APIView):
    @extend_schema(parameters=[UsageQuery], responses={200: _REPORT, **ERRORS})
    def get(self, request: Request, team_id: int) -> Response:
        """Return a team's usage, over the sessions shared with it only (the team's owners only)."""
        team = access.team_of(request.user, team_id, owner=False)
        if access.team_role(request.user, team) != "owner":
            raise access.Forbidden("Only the team's owners may see its usage.")
        since = _since(request)
        report = queries.usage_report(queries.team_sessions(team.pk), since=since)
        return Response({"team": {"id": team.pk, "name": team.name}, **report_json(report)})


def report_json(report: Report) -> dict[str, Any]:
    return {
        "totals": report.totals.as_json(),
        "sessions": report.sessions,
        "byModel": [{"model": m, **t.as_json()} for m, t in report.by_model],
        "days": [{"day": d.isoformat(), "model": m, **t.as_json()} for d, m, t in report.days],
    }


def _since(request: Request) -> Any:
    days = parse(UsageQuery, request.query_params).get("days")
    return None if days is None else timezone.now().date() - timedelta(days=days - 1)


def _entry(session: ChatSession, entry_id: str | None) -> Entry | None:
    if entry_id is None:
        return None
    return (
        Entry.objects.filter(session=session, entry_id=entry_id)
        .only("seq", "segment", "depth")
        .order_by("-seq")
        .first()
    )


def _messages(grant: access.Access, session: ChatSession, ids: list[str]) -> dict[str, Any]:
    """Return the own cost of each listed entry that is an assistant message this viewer may see."""
    if not ids:
        return {}
    rows = list(
        Entry.objects.filter(session=session, entry_id__in=ids, type="message", role="assistant").only(
            "seq", "entry_id", "segment", "depth"
        )
    )
    if grant.restricted:
        rows = link_scope.visible_rows(grant, rows)
    costs = queries.message_costs(session, [r.seq for r in rows])
    found: dict[str, Any] = {}
    for row in rows:
        cost = costs.get(row.seq)
        if cost is None or row.entry_id is None:
            continue
        found[row.entry_id] = {
            "cost": round(cost.cost, 10),
            "source": cost.source,
            "model": cost.model,
            "tokens": cost.input + cost.output + cost.cache_read + cost.cache_write,
        }
    return found
