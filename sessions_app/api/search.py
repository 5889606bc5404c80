"""Search message text: ``GET /api/search/`` across the sessions I can read (a few newest hits and a count
per session), and ``GET /api/sessions/<pk>/search/`` for every hit of one session, in tree order, in pages.

``GET /api/search/`` also searches by work: ``path:``, ``tool:`` and ``cmd:`` terms (``pitree.work_query``)
find the sessions whose tool calls match, answered from the index of work; words beside them must match
the message text too."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from pitree.work_query import WorkQuery, WorkQueryError, parse_work_query
from sessions_app import link_scope, list_filters, text_search, work_search
from sessions_app.api.filter_params import FILTER_PARAMETERS
from sessions_app.api.views import ERRORS, LinkReadableView, SessionAPIView
from sessions_app.models import ChatSession, first_prompt

MAX_SESSIONS = 50  # sessions listed per search, most recently updated first
HIT_PAGE = 200  # hits per page of one session's list, unless asked otherwise
MAX_HIT_PAGE = 2000


class SearchQuerySerializer(serializers.Serializer[Any]):
    q = serializers.CharField(
        max_length=200,
        help_text='Words (all must match), "a quoted phrase", `or`, `-word`; matched against message text. '
        "By work: `path:src/app.py` (exact), `path:src/` (under a folder), `path:*.py` or "
        "`path:src/**/test_*.py` (glob), `tool:edit`, `cmd:pytest` (a bash command containing it)",
    )
    session = serializers.IntegerField(required=False, help_text="Search one session only")

    def validate_q(self, value: str) -> str:
        try:
            parse_work_query(value)
        except WorkQueryError as exc:
            raise serializers.ValidationError(str(exc)) from exc
        return value


class SearchHitSerializer(serializers.Serializer[Any]):
    entryId = serializers.CharField(allow_null=True, help_text="Open the tree here: tree?around=<entryId>")
    seq = serializers.IntegerField()
    type = serializers.CharField()
    role = serializers.CharField()
    snippet = serializers.CharField()


class SearchSessionSerializer(serializers.Serializer[Any]):
    id = serializers.IntegerField()
    name = serializers.CharField()
    title = serializers.CharField(help_text="The name, else the first prompt")
    cwd = serializers.CharField()
    updatedAt = serializers.DateTimeField()
    hits = SearchHitSerializer(many=True, help_text="Newest first")
    moreHits = serializers.BooleanField(help_text="More entries match than are listed")
    hitCount = serializers.IntegerField(
        allow_null=True,
        help_text=f"Entries that match in this session, counted up to {text_search.COUNT_CAP}; "
        "null when counting took too long (moreHits still says whether there are more)",
    )
    hitCountCapped = serializers.BooleanField(help_text=f"More than {text_search.COUNT_CAP} entries match")


class SearchResultSerializer(serializers.Serializer[Any]):
    query = serializers.CharField()
    sessions = SearchSessionSerializer(many=True)
    moreSessions = serializers.BooleanField()
    incomplete = serializers.BooleanField(help_text="The search stopped at its time limit; try other words")


class SearchView(SessionAPIView):
    @extend_schema(
        parameters=[SearchQuerySerializer, *FILTER_PARAMETERS],
        responses={200: SearchResultSerializer, 400: ERRORS[400]},
    )
    def get(self, request: Request) -> Response:
        """Find entries whose message text matches ``q`` in the sessions I can read."""
        params = self.valid(SearchQuerySerializer, request.query_params)
        text = params["q"].strip()
        query = self.get_queryset().order_by("-updated_at", "-pk")
        if "session" in params:
            query = query.filter(pk=params["session"])
        try:
            query = list_filters.apply_filters(query, request.query_params, request.user)
        except list_filters.FilterError as exc:
            raise ValidationError({"filters": [str(exc)]}) from exc
        # Ids only: thousands of readable sessions would cost more as model instances than the search.
        readable = list(query.values_list("pk", flat=True))
        work = parse_work_query(text)
        if work.has_work:
            return Response(_work_search(query, readable, text, work))
        # With many sessions, which match comes first, then hits and counts for the listed ones only.
        probe, stopped = None, False
        if len(readable) > MAX_SESSIONS:
            # One past the page says whether there are more.
            probe, stopped = text_search.first_matching(readable, text, enough=MAX_SESSIONS + 1)
        listed = readable if probe is None else probe[:MAX_SESSIONS]
        found = text_search.search_entries(listed, text)
        sessions = {
            s.pk: s
            for s in query.filter(pk__in=found.session_ids)
            .only("pk", "name", "pi_id", "cwd", "updated_at")
            .annotate(first_prompt=first_prompt())
        }
        return Response(
            {
                "query": text,
                "sessions": [_session(sessions[pk], found, pk) for pk in found.session_ids if pk in sessions],
                "moreSessions": probe is not None and len(probe) > MAX_SESSIONS,
                "incomplete": found.incomplete or stopped,
            }
        )


def _session(session: ChatSession, found: text_search.SearchResult, pk: int) -> dict[str, Any]:
    return {
        "id": session.pk,
        "name": session.name,
        "title": session.title,
        "cwd": session.cwd,
        "updatedAt": serializers.DateTimeField().to_representation(session.updated_at),
        "hits": [
            {"entryId": h.entry_id, "seq": h.seq, "type": h.type, "role": h.role, "snippet": h.snippet}
            for h in found.hits[pk]
        ],
        "moreHits": pk in found.more,
        "hitCount": found.counts.get(pk),
        "hitCountCapped": pk in found.capped,
    }


def _work_search(query: Any, readable: list[int], text: str, work: WorkQuery) -> dict[str, Any]:
    """Sessions whose tool uses match every work term (and whose text matches the words beside them),
    each with its newest matching uses; only ``readable`` sessions are ever looked at."""
    stopped = False
    if work.text:
        matched = work_search.matching_sessions(readable, work)
        candidates = [pk for pk in readable if pk in matched]
        if candidates:
            candidates, stopped = text_search.first_matching(candidates, work.text, enough=MAX_SESSIONS + 1)
    else:
        # One past the page says whether there are more.
        candidates = work_search.first_matching(readable, work, enough=MAX_SESSIONS + 1)
    listed = candidates[:MAX_SESSIONS]
    hits = work_search.hits_of(listed, work, text_search.HITS_PER_SESSION)
    sessions = {
        s.pk: s
        for s in query.filter(pk__in=listed)
        .only("pk", "name", "pi_id", "cwd", "updated_at")
        .annotate(first_prompt=first_prompt())
    }
    out = []
    for pk in listed:
        session, found = sessions.get(pk), hits.get(pk, [])
        if session is None:
            continue
        shown = found[: text_search.HITS_PER_SESSION]
        more = len(found) > len(shown)
        out.append(
            {
                "id": session.pk,
                "name": session.name,
                "title": session.title,
                "cwd": session.cwd,
                "updatedAt": serializers.DateTimeField().to_representation(session.updated_at),
                "hits": [
                    {
                        "entryId": h.entry_id,
                        "seq": h.seq,
                        "type": "message",
                        "role": h.role,
                        "snippet": h.snippet,
                    }
                    for h in shown
                ],
                "moreHits": more,
                "hitCount": None if more else len(shown),
                "hitCountCapped": False,
            }
        )
    return {
        "query": text,
        "sessions": out,
        "moreSessions": len(candidates) > MAX_SESSIONS,
        "incomplete": stopped,
    }


class SessionSearchQuerySerializer(serializers.Serializer[Any]):
    q = serializers.CharField(
        max_length=200,
        help_text='Words (all must match), "a quoted phrase", `or`, `-word`; matched against message text. '
        "By work: `path:`, `tool:` and `cmd:` terms, as in /api/search/ (hits are the tool results)",
    )

    validate_q = SearchQuerySerializer.validate_q
    offset = serializers.IntegerField(required=False, min_value=0, default=0, help_text="First hit to return")
    limit = serializers.IntegerField(required=False, min_value=1, max_value=MAX_HIT_PAGE, default=HIT_PAGE)


class SessionHitSerializer(serializers.Serializer[Any]):
    index = serializers.IntegerField(help_text="Position among all hits, from 0")
    entryId = serializers.CharField(help_text="Open the tree here: tree?around=<entryId>")
    seq = serializers.IntegerField()
    type = serializers.CharField()
    role = serializers.CharField()


class SessionHitPageSerializer(serializers.Serializer[Any]):
    query = serializers.CharField()
    total = serializers.IntegerField(help_text="Hits in the session (inside what this viewer may see)")
    offset = serializers.IntegerField()
    hits = SessionHitSerializer(many=True, help_text="In the tree's drawing order, from ``offset``")
    incomplete = serializers.BooleanField(help_text="The search stopped at its time limit; try other words")
    comments = serializers.ListField(
        child=serializers.DictField(),
        required=False,
        help_text="Comments whose text matches (first page only): id, entryId, threadId, author, snippet",
    )


class SessionSearchView(LinkReadableView):
    @extend_schema(
        parameters=[SessionSearchQuerySerializer], responses={200: SessionHitPageSerializer, **ERRORS}
    )
    def get(self, request: Request, pk: int) -> Response:
        """List every entry of this session whose message text matches ``q``, in tree order, a page at a
        time: next and previous step through all of them. A share link sees only the hits in its scope."""
        grant = self.access(pk)
        params = self.valid(SessionSearchQuerySerializer, request.query_params)
        text = params["q"].strip()
        found = link_scope.scoped_hits(grant, text)
        offset = params["offset"]
        hits = [
            {"index": h.index, "entryId": h.entry_id, "seq": h.seq, "type": h.type, "role": h.role}
            for h in text_search.hit_page(grant.session, found.seqs, offset, params["limit"])
        ]
        body = {
            "query": text,
            "total": len(found.seqs),
            "offset": offset,
            "hits": hits,
            "incomplete": found.incomplete,
        }
        if offset == 0:
            body.update(text_search.extra_hits(grant, parse_work_query(text).text))
        return Response(body)
