"""``GET /api/search/``: message text across the sessions I can read, each hit located in its tree."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from .. import search
from ..models import ChatSession
from .views import ERRORS, SessionAPIView

MAX_SESSIONS = 50  # sessions listed per search, most recently updated first


class SearchQuerySerializer(serializers.Serializer[Any]):
    q = serializers.CharField(
        max_length=200,
        help_text='Words (all must match), "a quoted phrase", `or`, `-word`; matched against message text',
    )
    session = serializers.IntegerField(required=False, help_text="Search one session only")


class SearchHitSerializer(serializers.Serializer[Any]):
    entryId = serializers.CharField(allow_null=True, help_text="Open the tree here: tree?around=<entryId>")
    seq = serializers.IntegerField()
    type = serializers.CharField()
    role = serializers.CharField()
    snippet = serializers.CharField()


class SearchSessionSerializer(serializers.Serializer[Any]):
    id = serializers.IntegerField()
    name = serializers.CharField()
    cwd = serializers.CharField()
    updatedAt = serializers.DateTimeField()
    hits = SearchHitSerializer(many=True, help_text="Newest first")
    moreHits = serializers.BooleanField(help_text="More entries match than are listed")


class SearchResultSerializer(serializers.Serializer[Any]):
    query = serializers.CharField()
    sessions = SearchSessionSerializer(many=True)
    moreSessions = serializers.BooleanField()
    incomplete = serializers.BooleanField(help_text="The search stopped at its time limit; try other words")


class SearchView(SessionAPIView):
    @extend_schema(
        parameters=[SearchQuerySerializer], responses={200: SearchResultSerializer, 400: ERRORS[400]}
    )
    def get(self, request: Request) -> Response:
        """Find entries whose message text matches ``q`` in the sessions I can read."""
        params = self.valid(SearchQuerySerializer, request.query_params)
        text = params["q"].strip()
        query = self.get_queryset().order_by("-updated_at", "-pk")
        if "session" in params:
            query = query.filter(pk=params["session"])
        sessions = {s.pk: s for s in query.only("pk", "name", "cwd", "updated_at")}
        found = search.search_entries(list(sessions), text)
        listed = found.session_ids[:MAX_SESSIONS]
        return Response(
            {
                "query": text,
                "sessions": [_session(sessions[pk], found.hits[pk], pk in found.more) for pk in listed],
                "moreSessions": len(found.session_ids) > len(listed),
                "incomplete": found.incomplete,
            }
        )


def _session(session: ChatSession, hits: list[search.Hit], more: bool) -> dict[str, Any]:
    return {
        "id": session.pk,
        "name": session.name,
        "cwd": session.cwd,
        "updatedAt": serializers.DateTimeField().to_representation(session.updated_at),
        "hits": [
            {"entryId": h.entry_id, "seq": h.seq, "type": h.type, "role": h.role, "snippet": h.snippet}
            for h in hits
        ],
        "moreHits": more,
    }
