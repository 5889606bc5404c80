"""``GET /api/activity/``: the signed-in caller's own activity (see ``activity``), one page at a time."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from actionlog.facade import declared_verbs
from audit import activity
from core.api.fields import parse
from sessions_app.facade import ChatSession, ErrorSerializer

ERRORS = {code: OpenApiResponse(ErrorSerializer) for code in (400, 403, 404)}


class ActivityQuerySerializer(serializers.Serializer[Any]):
    # Any app's declared verb: the list is read per request, since apps declare theirs at start.
    action = serializers.CharField(required=False, help_text="Only this action")
    session = serializers.IntegerField(min_value=1, required=False, help_text="Only rows about this session")
    before = serializers.IntegerField(
        min_value=1, required=False, help_text="A row id from the previous page: rows older than it"
    )
    limit = serializers.IntegerField(
        min_value=1, max_value=activity.MAX_PAGE, required=False, help_text="Rows per page (default 50)"
    )

    def validate_action(self, value: str) -> str:
        if value not in declared_verbs():
            raise serializers.ValidationError(f'"{value}" is not a valid choice.')
        return value


class ActivityItemSerializer(serializers.Serializer[Any]):
    id = serializers.IntegerField()
    action = serializers.CharField()
    at = serializers.DateTimeField()
    actor = serializers.CharField(
        help_text="Who acted: a username, a share link or one of the server's workers"
    )
    actorKind = serializers.ChoiceField(choices=["user", "link", "system", "anonymous"])
    mine = serializers.BooleanField(help_text="The caller did it")
    sessionId = serializers.IntegerField(
        allow_null=True, help_text="Null once the session is deleted, or none"
    )
    sessionName = serializers.CharField(allow_blank=True)
    sessionOwned = serializers.BooleanField(help_text="The session is the caller's own")
    team = serializers.CharField(allow_blank=True)
    detail = serializers.DictField(help_text="What the row records, less anything secret-shaped")


class ActivityPageSerializer(serializers.Serializer[Any]):
    items = ActivityItemSerializer(many=True)
    nextBefore = serializers.IntegerField(allow_null=True, help_text="Pass as ``before`` for the next page")


def read_page(user: Any, query: Any) -> activity.ActivityPage:
    """Parse the query (shared with the page) and return one page; a bad query raises a 400 or 404."""
    data = parse(ActivityQuerySerializer, query)
    session = data.get("session")
    if session is not None and not _may_see(user, session):
        # One answer for a session that does not exist and one the caller may not read.
        raise NotFound(f"No session {session} that you can read.")
    return activity.page_of(
        user,
        action=data.get("action"),
        session=session,
        before=data.get("before"),
        limit=data.get("limit", activity.DEFAULT_PAGE),
    )


def _may_see(user: Any, session: int) -> bool:
    return (
        ChatSession.objects.visible_to(user).filter(pk=session).exists()
        or ChatSession._base_manager.filter(pk=session, owner=user).exists()
    )


class ActivityView(APIView):
    @extend_schema(
        parameters=[ActivityQuerySerializer],
        responses={200: ActivityPageSerializer, **ERRORS},
        operation_id="activity_list",
    )
    def get(self, request: Request) -> Response:
        """List my activity, newest first: what I did, and what others did to sessions I own."""
        page = read_page(request.user, request.query_params)
        return Response({"items": page.items, "nextBefore": page.next_before})
