"""REST adapters of reviews: parse, call one use case or query, shape the answer."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from core.api.errors import register_error
from core.api.fields import Text, parse
from core.api.parsers import LimitedJSONParser
from pitree.storable import MAX_ID_CHARS
from reviews import queries, services
from reviews.domain.status import DECISIONS, MAX_NOTE_CHARS, STATUSES, InvalidReview
from sessions_app.facade import ErrorSerializer, SessionAPIView, access

ERRORS = {code: OpenApiResponse(ErrorSerializer) for code in (400, 403, 404, 409)}

register_error(InvalidReview, status.HTTP_400_BAD_REQUEST, message=lambda exc: exc.message)
register_error(services.ReviewClosed, status.HTTP_409_CONFLICT)


class ReviewerSerializer(serializers.Serializer[Any]):
    username = serializers.CharField()
    decision = serializers.ChoiceField(choices=("pending", *DECISIONS))
    note = serializers.CharField(allow_blank=True)
    decidedAt = serializers.DateTimeField(allow_null=True)


class TeamRefSerializer(serializers.Serializer[Any]):
    id = serializers.IntegerField()
    name = serializers.CharField()


class ReviewSerializer(serializers.Serializer[Any]):
    id = serializers.IntegerField()
    sessionId = serializers.IntegerField()
    sessionName = serializers.CharField()
    entryId = serializers.CharField(
        allow_null=True, help_text="The reviewed branch's node; null: the session"
    )
    team = TeamRefSerializer()
    requester = serializers.CharField()
    note = serializers.CharField(allow_blank=True)
    status = serializers.ChoiceField(choices=STATUSES)
    statusLabel = serializers.CharField()
    requestedAt = serializers.DateTimeField()
    outdatedAt = serializers.DateTimeField(allow_null=True)
    outdatedBy = serializers.CharField(allow_null=True, help_text="The new entry that made it outdated")
    reviewers = ReviewerSerializer(many=True)
    canDecide = serializers.BooleanField(help_text="The caller is a reviewer and the review is open")
    mine = serializers.BooleanField(help_text="The caller asked for it (may withdraw or ask again)")


class QueueQuerySerializer(serializers.Serializer[Any]):
    team = serializers.IntegerField(required=False, min_value=1, help_text="One team's queue")


class QueueSerializer(serializers.Serializer[Any]):
    mine = ReviewSerializer(many=True, help_text="Waiting for me")
    others = ReviewSerializer(many=True, help_text="Waiting for others")
    done = ReviewSerializer(many=True, help_text="Decided or outdated, newest 50")


class RequestSerializer(serializers.Serializer[Any]):
    reviewers = serializers.ListField(
        child=Text(max_length=150), min_length=1, max_length=services.MAX_REVIEWERS, help_text="Usernames"
    )
    entryId = Text(
        required=False,
        allow_null=True,
        max_length=MAX_ID_CHARS,
        help_text="Review this branch; omit: the session",
    )
    note = Text(required=False, allow_blank=True, max_length=MAX_NOTE_CHARS, trim_whitespace=False)
    teamId = serializers.IntegerField(required=False, min_value=1, help_text="The team it belongs to")


class DecisionSerializer(serializers.Serializer[Any]):
    decision = serializers.ChoiceField(choices=DECISIONS)
    note = Text(required=False, allow_blank=True, max_length=MAX_NOTE_CHARS, trim_whitespace=False)


class PersonalAPIView(APIView):
    """A signed-in caller's reviews: no session in the path."""

    parser_classes = [LimitedJSONParser]


class QueueView(PersonalAPIView):
    @extend_schema(
        operation_id="reviews_queue",
        parameters=[QueueQuerySerializer],
        responses={200: QueueSerializer, **ERRORS},
    )
    def get(self, request: Request) -> Response:
        """My review queue, of all my teams or one: waiting for me, waiting for others, done."""
        params = parse(QueueQuerySerializer, request.query_params)
        team_id = params.get("team")
        if team_id is not None:
            access.team_of(request.user, team_id, owner=False)
        found = queries.boxes(request.user, team_id=team_id)
        return Response(
            {box: [queries.serialize(r, request.user) for r in rows] for box, rows in found.items()}
        )


def _one(request: Request, review_id: int) -> Response:
    review = queries.visible_reviews(request.user).filter(pk=review_id).first()
    if review is None:
        raise access.NotVisible(f"Review not found: {review_id}")
    return Response(queries.serialize(review, request.user))


class ReviewDetailView(PersonalAPIView):
    @extend_schema(operation_id="reviews_detail", responses={200: ReviewSerializer, **ERRORS})
    def get(self, request: Request, review_id: int) -> Response:
        """One review: its status, reviewers and their notes."""
        return _one(request, review_id)


class DecisionView(PersonalAPIView):
    @extend_schema(request=DecisionSerializer, responses={200: ReviewSerializer, **ERRORS})
    def post(self, request: Request, review_id: int) -> Response:
        """Approve or request changes, with an optional note (reviewers only; may be changed later)."""
        data = parse(DecisionSerializer, request.data)
        services.decide_review(
            actor=request.user, review_id=review_id, decision=data["decision"], note=data.get("note")
        )
        return _one(request, review_id)


class WithdrawView(PersonalAPIView):
    @extend_schema(request=None, responses={200: ReviewSerializer, **ERRORS})
    def post(self, request: Request, review_id: int) -> Response:
        """Withdraw the review request (its requester only)."""
        services.withdraw_review(actor=request.user, review_id=review_id)
        review = queries.visible_reviews(request.user).filter(pk=review_id).first()
        if review is None:
            raise access.NotVisible(f"Review not found: {review_id}")
        return Response(queries.serialize(review, request.user))


class RerequestView(PersonalAPIView):
    @extend_schema(request=None, responses={200: ReviewSerializer, **ERRORS})
    def post(self, request: Request, review_id: int) -> Response:
        """Ask the same reviewers again: decisions start over and the outdated mark is cleared."""
        services.rerequest_review(actor=request.user, review_id=review_id)
        return _one(request, review_id)


class SessionReviewsView(SessionAPIView):
    pagination_class = None

    @extend_schema(responses={200: ReviewSerializer(many=True), **ERRORS})
    def get(self, request: Request, pk: int) -> Response:
        """The session's reviews I may see (of my teams), newest first; withdrawn ones left out."""
        session = access.require_read(request, pk, links=False).session
        return Response(
            [queries.serialize(r, request.user) for r in queries.reviews_of_session(request.user, session)]
        )

    @extend_schema(request=RequestSerializer, responses={201: ReviewSerializer, **ERRORS})
    def post(self, request: Request, pk: int) -> Response:
        """Ask named teammates to review the session, or the branch ending at ``entryId``."""
        session = access.require_read(request, pk, links=False).session
        data = parse(RequestSerializer, request.data)
        review = services.request_review(
            actor=request.user,
            session=session,
            reviewers=data["reviewers"],
            entry_id=data.get("entryId"),
            note=data.get("note"),
            team_id=data.get("teamId"),
        )
        found = queries.visible_reviews(request.user).filter(pk=review.pk).first() or review
        return Response(queries.serialize(found, request.user), status=status.HTTP_201_CREATED)
