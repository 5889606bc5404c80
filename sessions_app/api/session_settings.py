"""``/api/sessions/<pk>/settings/``: a session's own compaction settings over the server's defaults."""

from __future__ import annotations

from typing import Any, cast

from django.conf import settings
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from core.api.fields import Flag
from sessions_app import services
from sessions_app.api.views import ERRORS, SessionAPIView


class CompactionOverrideSerializer(serializers.Serializer[Any]):
    enabled = Flag(required=False, allow_null=True)
    reserveTokens = serializers.IntegerField(required=False, allow_null=True, min_value=0)
    keepRecentTokens = serializers.IntegerField(required=False, allow_null=True, min_value=0)


class SessionSettingsSerializer(serializers.Serializer[Any]):
    compaction = CompactionOverrideSerializer(
        allow_null=True, help_text="This session's own values; null clears them"
    )


_ANSWER = inline_serializer(
    "SessionSettings",
    {
        "compaction": serializers.DictField(allow_null=True),
        "defaults": serializers.DictField(help_text="The server's values (PIWEB_COMPACTION_*)"),
    },
)


def _answer(session: Any) -> dict[str, Any]:
    return {
        "compaction": session.compaction_settings,
        "defaults": {
            "reserveTokens": settings.PIWEB_COMPACTION_RESERVE_TOKENS,
            "keepRecentTokens": settings.PIWEB_COMPACTION_KEEP_RECENT_TOKENS,
        },
    }


class SessionSettingsView(SessionAPIView):
    @extend_schema(responses={200: _ANSWER, **ERRORS})
    def get(self, request: Request, pk: int) -> Response:
        """This session's own compaction settings and the server's defaults they override."""
        return Response(_answer(self.readable(pk)))

    @extend_schema(request=SessionSettingsSerializer, responses={200: _ANSWER, **ERRORS})
    def put(self, request: Request, pk: int) -> Response:
        """Set (or clear, with null) this session's compaction settings."""
        grant = self.access(pk)
        self.valid(SessionSettingsSerializer, request.data)
        # The use case checks the keys itself: unknown ones are refused, not silently dropped.
        values = cast("dict[str, Any]", request.data)["compaction"]  # validated as an object above
        session = services.set_compaction_settings(
            session=grant.session,
            values=values,
            actor=request.user,
            grant=grant,
        )
        return Response(_answer(session))
