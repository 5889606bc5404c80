"""Team shares and share links: who may see a session beyond its owner."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from core.api.fields import Flag, Text, parse
from core.api.parsers import LimitedJSONParser
from sessions_app import access, services
from sessions_app.models import SessionShare, ShareLink
from sessions_app.queries import team_sessions

ERROR = OpenApiResponse(description='{"error": <message>}')


class ShareSerializer(serializers.Serializer[Any]):
    teamId = serializers.IntegerField()
    access = serializers.ChoiceField(choices=SessionShare.Access.values, default=SessionShare.Access.VIEWER)


class LinkSerializer(serializers.Serializer[Any]):
    scope = serializers.ChoiceField(choices=ShareLink.Scope.values, default=ShareLink.Scope.TREE)
    entryId = Text(required=False, allow_null=True, default=None)
    frozen = Flag(default=False)
    expiresAt = serializers.DateTimeField(required=False, allow_null=True, default=None)


def link_payload(link: ShareLink) -> dict[str, Any]:
    """A link as lists show it: named by its token's prefix, never with a usable token or address."""
    return {
        "id": link.pk,
        "tokenPrefix": link.token_prefix,
        "state": link.state(),
        "session": link.session_id,
        "scope": link.scope,
        "entryId": link.entry_id,
        "frozenSeq": link.frozen_seq,
        "expiresAt": link.expires_at.isoformat() if link.expires_at else None,
        "revokedAt": link.revoked_at.isoformat() if link.revoked_at else None,
        "createdAt": link.created_at.isoformat(),
    }


def new_link_payload(request: Request, link: ShareLink) -> dict[str, Any]:
    """A link just created: the one answer that holds its token and address (only a hash is kept)."""
    token = link.raw_token
    if token is None:
        raise ValueError("only a link just created knows its token")
    return {**link_payload(link), "token": token, "url": request.build_absolute_uri(f"/s/{token}/")}


def _valid(serializer_class: type[Any], data: Any) -> dict[str, Any]:
    return parse(serializer_class, data)


class SharingAPIView(APIView):
    parser_classes = [LimitedJSONParser]


class SessionSharesView(SharingAPIView):
    @extend_schema(responses={200: OpenApiResponse(), 403: ERROR, 404: ERROR})
    def get(self, request: Request, pk: int) -> Response:
        """List the teams the session is shared with (owner only)."""
        session = access.require_owner(request, pk)
        shares = SessionShare.objects.filter(session=session).select_related("team").order_by("team__name")
        return Response(
            {"results": [{"teamId": s.team_id, "team": s.team.name, "access": s.access} for s in shares]}
        )

    @extend_schema(request=ShareSerializer, responses={201: OpenApiResponse(), 403: ERROR, 404: ERROR})
    def post(self, request: Request, pk: int) -> Response:
        """Share the session with one of my teams, as viewer or editor (owner only)."""
        session = access.require_owner(request, pk)
        data = _valid(ShareSerializer, request.data)
        share = services.share_with_team(
            session=session, team=data["teamId"], access=data["access"], actor=request.user
        )
        return Response(
            {"teamId": share.team.pk, "team": share.team.name, "access": share.access},
            status=status.HTTP_201_CREATED,
        )


class SessionShareDetailView(SharingAPIView):
    @extend_schema(responses={204: None, 403: ERROR, 404: ERROR})
    def delete(self, request: Request, pk: int, team_id: int) -> Response:
        """Stop sharing with a team (owner only); its members' open views close at once."""
        session = access.require_owner(request, pk)
        services.unshare_with_team(session=session, team=team_id, actor=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)


class SessionLinksView(SharingAPIView):
    @extend_schema(responses={200: OpenApiResponse(), 403: ERROR, 404: ERROR})
    def get(self, request: Request, pk: int) -> Response:
        """List the session's share links, revoked ones included (owner only), by token prefix and state.

        Only a hash of each token is stored, so no list can give a link's address again.
        """
        session = access.require_owner(request, pk)
        links = ShareLink.objects.filter(session=session).order_by("-created_at")
        return Response({"results": [link_payload(link) for link in links]})

    @extend_schema(
        request=LinkSerializer,
        responses={
            201: OpenApiResponse(description="The link with its token and url, shown this once"),
            403: ERROR,
            404: ERROR,
        },
    )
    def post(self, request: Request, pk: int) -> Response:
        """Create a read-only link: whole tree or one path, live or frozen, optionally expiring.

        The answer holds the link's token and address; they are not stored and cannot be shown again.
        """
        session = access.require_owner(request, pk)
        data = _valid(LinkSerializer, request.data)
        link = services.create_share_link(
            session=session,
            actor=request.user,
            scope=data["scope"],
            entry_id=data["entryId"],
            frozen=data["frozen"],
            expires_at=data["expiresAt"],
        )
        return Response(new_link_payload(request, link), status=status.HTTP_201_CREATED)


class LinkDetailView(SharingAPIView):
    @extend_schema(responses={204: None, 403: ERROR, 404: ERROR})
    def delete(self, request: Request, link_id: int) -> Response:
        """Revoke a link at once: pages opened through it lose access and their sockets close."""
        services.revoke_share_link(link=link_id, actor=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)


class TeamSessionsQuery(serializers.Serializer[Any]):
    q = Text(required=False, default="", allow_blank=True, max_length=200)


def team_session_payload(share: SessionShare) -> dict[str, Any]:
    session = share.session
    # The list's query brought the first prompt along (``team_sessions``): no query per row.
    session.__dict__.setdefault("first_prompt", getattr(share, "session_first_prompt", None))
    return {
        "id": session.pk,
        "name": session.name,
        "title": session.title,
        "cwd": session.cwd,
        "sourceFilename": session.source_filename,
        "owner": session.owner.get_username(),
        "access": share.access,
        "entryCount": session.entry_count,
        "messageCount": session.message_count,
        "updatedAt": session.updated_at.isoformat(),
    }


class TeamSessionsView(SharingAPIView):
    @extend_schema(
        parameters=[TeamSessionsQuery],
        responses={200: OpenApiResponse(description="The sessions shared with the team"), 404: ERROR},
    )
    def get(self, request: Request, team_id: int) -> Response:
        """List the sessions shared with one of my teams, newest activity first; ``q`` searches their name,
        folder, file name and owner."""
        team = access.team_of(request.user, team_id, owner=False)
        query = parse(TeamSessionsQuery, request.query_params)["q"].strip()
        found = [team_session_payload(share) for share in team_sessions(team, query)]
        return Response({"results": found, "count": len(found)})


__all__ = [
    "LinkDetailView",
    "SessionLinksView",
    "SessionShareDetailView",
    "SessionSharesView",
    "TeamSessionsView",
]
