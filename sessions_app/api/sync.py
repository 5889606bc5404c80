"""The live-sync endpoint used by ``manage.py pi_sync``: append a local file's new lines verbatim."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from ..models import ChatSession
from ..sync import SyncConflict, last_entry_id, sync_lines
from .errors import api_exception_handler, error_response
from .parsers import LimitedJSONParser


class SyncRequestSerializer(serializers.Serializer[Any]):
    header = serializers.CharField(trim_whitespace=False, help_text="The file's header line, verbatim")
    after = serializers.CharField(
        allow_null=True,
        required=False,
        default=None,
        help_text="Id of the last entry the server acknowledged (null at the start)",
    )
    lines = serializers.ListField(
        child=serializers.CharField(allow_blank=True, trim_whitespace=False),
        max_length=5000,
        help_text="Complete lines after that entry, verbatim",
    )


class SyncView(APIView):
    """Append new lines of a local Pi session file; the cursor guarantees nothing is stored twice."""

    parser_classes = [LimitedJSONParser]

    def get_exception_handler(self) -> Any:
        return api_exception_handler

    @extend_schema(
        request=SyncRequestSerializer,
        responses={
            200: inline_serializer(
                "SyncResult",
                {
                    "sessionId": serializers.IntegerField(),
                    "created": serializers.BooleanField(),
                    "appended": serializers.IntegerField(),
                    "lastEntryId": serializers.CharField(allow_null=True),
                    "skippedLines": serializers.ListField(child=serializers.DictField()),
                },
            )
        },
    )
    def post(self, request: Request) -> Response:
        data = SyncRequestSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            result = sync_lines(
                owner=request.user,
                header_line=data.validated_data["header"],
                after=data.validated_data["after"],
                lines=data.validated_data["lines"],
            )
        except SyncConflict as exc:
            return error_response(str(exc), status.HTTP_409_CONFLICT, lastEntryId=exc.actual)
        return Response(
            {
                "sessionId": result.session.pk,
                "created": result.created,
                "appended": result.appended,
                "lastEntryId": result.last_entry_id,
                "skippedLines": [{"line": s.line_no, "reason": s.reason} for s in result.skipped],
            }
        )

    @extend_schema(
        responses={
            200: inline_serializer(
                "SyncCursor",
                {
                    "sessionId": serializers.IntegerField(allow_null=True),
                    "lastEntryId": serializers.CharField(allow_null=True),
                },
            )
        }
    )
    def get(self, request: Request) -> Response:
        """Return the server's cursor for a Pi session id (``?piId=``)."""
        pi_id = request.query_params.get("piId")
        if not pi_id:
            return error_response("the piId query parameter is required", status.HTTP_400_BAD_REQUEST)
        session = ChatSession.objects.editable_by(request.user).filter(pi_id=pi_id).first()
        return Response(
            {
                "sessionId": session.pk if session else None,
                "lastEntryId": last_entry_id(session) if session else None,
            }
        )
