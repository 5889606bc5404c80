"""REST adapters of team activity: a team's numbers by person and week, and a member's digest choice."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiResponse, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from activity import queries, services
from activity.params import BadRange, date_range
from core.api.fields import parse
from teams.facade import team_of

ERROR = OpenApiResponse(description='{"error": <message>}')
ERRORS = {400: ERROR, 403: ERROR, 404: ERROR}


class ActivityQuery(serializers.Serializer[Any]):
    # ``from`` is a keyword in Python: the field is declared under its name below.
    to = serializers.DateField(required=False, help_text="The last day (default: the end of this week)")
    rows = serializers.BooleanField(
        required=False, default=False, help_text="Also each person's weeks (the CSV's rows, in its order)"
    )


ActivityQuery._declared_fields["from"] = serializers.DateField(
    required=False, help_text="The first day (default: the Monday eleven weeks before this week's)"
)

_NUMBERS: dict[str, serializers.Field[Any, Any, Any, Any]] = {
    "sessions": serializers.IntegerField(),
    "answers": serializers.IntegerField(),
    "runs": serializers.IntegerField(),
    "failedRuns": serializers.IntegerField(),
    "reviews": serializers.IntegerField(),
    "cost": serializers.FloatField(),
    "toolCalls": serializers.IntegerField(),
    "filesChanged": serializers.IntegerField(),
    "tools": serializers.DictField(child=serializers.IntegerField()),
}
_REPORT = inline_serializer(
    "TeamActivity",
    {
        "team": serializers.DictField(),
        "from": serializers.DateField(),
        "to": serializers.DateField(),
        "tools": serializers.ListField(child=serializers.CharField()),
        "totals": inline_serializer("ActivityNumbers", _NUMBERS),
        "weeks": serializers.ListField(child=serializers.DictField()),
        "people": serializers.ListField(child=serializers.DictField()),
        "rows": serializers.ListField(child=serializers.DictField(), required=False),
    },
)


class TeamActivityView(APIView):
    @extend_schema(parameters=[ActivityQuery], responses={200: _REPORT, **ERRORS})
    def get(self, request: Request, team_id: int) -> Response:
        """Return a team's activity per week and per person, as its activity page shows it: the sessions
        shared with it only."""
        team = team_of(request.user, team_id, owner=False)
        options = parse(ActivityQuery, request.query_params)
        try:
            start, end = date_range(request.query_params)
        except BadRange as e:
            raise ValidationError({"range": [str(e)]}) from None
        report = queries.team_report(team, start, end, cells=options["rows"])
        return Response(report.as_json(rows=options["rows"]))


class DigestChoiceSerializer(serializers.Serializer[Any]):
    digest = serializers.BooleanField(help_text="Whether I get the team's weekly digest by email")


class DigestChoiceView(APIView):
    @extend_schema(responses={200: DigestChoiceSerializer, **ERRORS})
    def get(self, request: Request, team_id: int) -> Response:
        """Return whether I get this team's weekly digest."""
        team = team_of(request.user, team_id, owner=False)
        return Response({"digest": services.digest_wanted(request.user, team)})

    @extend_schema(request=DigestChoiceSerializer, responses={200: DigestChoiceSerializer, **ERRORS})
    def put(self, request: Request, team_id: int) -> Response:
        """Choose whether I get this team's weekly digest."""
        wanted = parse(DigestChoiceSerializer, request.data)["digest"]
        return Response(
            {"digest": services.set_digest_choice(actor=request.user, team_id=team_id, wanted=wanted)}
        )
