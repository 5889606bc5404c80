"""REST adapters of governance: secrets found in a session, their redaction, and a link's opens."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from core.api.fields import Flag, Text, parse
from core.api.parsers import LimitedJSONParser
from governance import link_open_log, redaction, scanning
from governance.domain.redaction import marker
from governance.models import LinkView, SecretFinding
from sessions_app.facade import ChatSession, access

ERROR = OpenApiResponse(description='{"error": <message>}')
MAX_IDS = 10_000
# A prompt is checked as a whole; the detectors take about half a second a megabyte at worst.
MAX_CHECK_CHARS = 1_000_000


class FindingSerializer(serializers.Serializer[Any]):
    id = serializers.IntegerField()
    entryId = serializers.CharField(allow_null=True)
    seq = serializers.IntegerField(allow_null=True, help_text="The entry's append order; null for a comment")
    commentId = serializers.IntegerField(allow_null=True, help_text="The comment holding it, if in one")
    kind = serializers.CharField()
    path = serializers.CharField(help_text="JSON pointer to the string in the entry that holds the secret")
    start = serializers.IntegerField(help_text="Character offset of the secret in that string")
    end = serializers.IntegerField()
    marker = serializers.CharField(help_text="What the secret is (or will be) replaced by")
    redacted = serializers.BooleanField()
    redactedAt = serializers.DateTimeField(allow_null=True)
    redactedBy = serializers.CharField(allow_null=True)


class FindingListSerializer(serializers.Serializer[Any]):
    findings = FindingSerializer(many=True)
    open = serializers.IntegerField(help_text="Findings not redacted yet")
    scanned = serializers.BooleanField(help_text="False while a worker still scans a bulk import")


class SessionSecretsSummarySerializer(serializers.Serializer[Any]):
    session = serializers.IntegerField()
    open = serializers.IntegerField(help_text="Findings not redacted yet")


class SecretsSummarySerializer(serializers.Serializer[Any]):
    sessions = SessionSecretsSummarySerializer(many=True)


class RedactSerializer(serializers.Serializer[Any]):
    findingIds = serializers.ListField(
        child=serializers.IntegerField(min_value=1), required=False, allow_empty=False, max_length=MAX_IDS
    )
    all = Flag(required=False, default=False)

    def validate(self, data: dict[str, Any]) -> dict[str, Any]:
        if bool(data.get("findingIds")) == bool(data.get("all")):
            raise serializers.ValidationError({"findingIds": ["Give findingIds, or all: true (not both)."]})
        return data


class RedactResultSerializer(serializers.Serializer[Any]):
    redacted = serializers.IntegerField()
    findings = FindingSerializer(many=True)


class LinkViewSerializer(serializers.Serializer[Any]):
    viewer = serializers.CharField(allow_null=True, help_text="The username, or null for anonymous")
    day = serializers.DateField()
    count = serializers.IntegerField()
    firstAt = serializers.DateTimeField()
    lastAt = serializers.DateTimeField()


class LinkViewListSerializer(serializers.Serializer[Any]):
    link = serializers.IntegerField()
    opens = serializers.IntegerField()
    views = LinkViewSerializer(many=True)


def finding_body(finding: SecretFinding) -> dict[str, Any]:
    """A finding as the owner sees it: where and what kind, never the secret."""
    return {
        "id": finding.pk,
        "entryId": finding.entry_id,
        "seq": finding.seq,
        "commentId": finding.comment_id,
        "kind": finding.kind,
        "path": finding.path,
        "start": finding.start,
        "end": finding.end,
        "marker": marker(finding.kind),
        "redacted": finding.redacted_at is not None,
        "redactedAt": finding.redacted_at,
        "redactedBy": finding.redacted_by.get_username() if finding.redacted_by else None,
    }


def _session(request: Request, pk: int) -> ChatSession:
    """Return the session for its owner or staff; teammates get 403, others 404 (share links never count)."""
    if request.user.is_staff:
        found = ChatSession.objects.filter(pk=pk).first()
        if found is None:
            raise access.NotVisible(f"Session not found: {pk}")
        return found
    return access.require_read(request, pk, links=False).session


class SessionSecretsView(APIView):
    parser_classes = [LimitedJSONParser]

    @extend_schema(responses={200: FindingListSerializer, 401: ERROR, 403: ERROR, 404: ERROR})
    def get(self, request: Request, pk: int) -> Response:
        """List the secrets found in the session's entries (its owner and staff): entry, kind, position."""
        session = _session(request, pk)
        findings = scanning.list_findings(actor=request.user, session=session)
        return Response(
            {
                "findings": [finding_body(f) for f in findings],
                "open": sum(1 for f in findings if f.redacted_at is None),
                "scanned": scanning.scanned(session),
            }
        )


class SessionRedactView(APIView):
    parser_classes = [LimitedJSONParser]

    @extend_schema(
        request=RedactSerializer,
        responses={200: RedactResultSerializer, 400: ERROR, 401: ERROR, 403: ERROR, 404: ERROR},
    )
    def post(self, request: Request, pk: int) -> Response:
        """Redact findings (or all of them): the secrets become [REDACTED:<kind>] in the stored lines."""
        data = parse(RedactSerializer, request.data)
        session = _session(request, pk)
        done = redaction.redact_findings(
            actor=request.user, session=session, finding_ids=None if data.get("all") else data["findingIds"]
        )
        return Response({"redacted": len(done), "findings": [finding_body(f) for f in done]})


class CheckTextSerializer(serializers.Serializer[Any]):
    text = Text(allow_blank=True, trim_whitespace=False, max_length=MAX_CHECK_CHARS)


class TextSecretSerializer(serializers.Serializer[Any]):
    kind = serializers.CharField()
    start = serializers.IntegerField(help_text="Character offset of the secret in the text")
    end = serializers.IntegerField()
    marker = serializers.CharField(help_text="What the secret would be replaced by")


class CheckTextResultSerializer(serializers.Serializer[Any]):
    secrets = TextSecretSerializer(many=True)


class CheckTextView(APIView):
    parser_classes = [LimitedJSONParser]

    @extend_schema(
        request=CheckTextSerializer, responses={200: CheckTextResultSerializer, 400: ERROR, 401: ERROR}
    )
    def post(self, request: Request) -> Response:
        """Say which secrets a text holds (kind and place) before it leaves: a prompt for the provider."""
        data = parse(CheckTextSerializer, request.data)
        found = scanning.secrets_in(actor=request.user, text=data["text"])
        return Response(
            {"secrets": [{"kind": k, "start": s, "end": e, "marker": marker(k)} for k, s, e in found]}
        )


class SecretsSummaryView(APIView):
    @extend_schema(responses={200: SecretsSummarySerializer, 401: ERROR, 403: ERROR})
    def get(self, request: Request) -> Response:
        """List my sessions holding secrets not redacted yet, with how many (the session list's badges)."""
        counts = scanning.open_counts(owner=request.user)
        return Response({"sessions": [{"session": pk, "open": n} for pk, n in counts]})


def view_body(row: LinkView) -> dict[str, Any]:
    return {
        "viewer": row.viewer.get_username() if row.viewer is not None else None,
        "day": row.day,
        "count": row.count,
        "firstAt": row.first_at,
        "lastAt": row.last_at,
    }


class LinkViewsView(APIView):
    @extend_schema(responses={200: LinkViewListSerializer, 401: ERROR, 403: ERROR, 404: ERROR})
    def get(self, request: Request, link_id: int) -> Response:
        """List when a share link was opened, by whom (a user, or anonymous) and how often (its owner)."""
        link, rows = link_open_log.link_views(actor=request.user, link=link_id)
        return Response(
            {"link": link.pk, "opens": sum(r.count for r in rows), "views": [view_body(r) for r in rows]},
            status=status.HTTP_200_OK,
        )
