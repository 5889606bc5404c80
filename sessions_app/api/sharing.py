"""Teams, team shares and share links: who may see a session beyond its owner."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from sessions_app import access, services
from sessions_app.api.fields import Flag, Text, parse
from sessions_app.api.parsers import LimitedJSONParser
from sessions_app.models import SessionShare, ShareLink, Team, TeamInvitation, TeamMembership
from sessions_app.queries import team_sessions

ERROR = OpenApiResponse(description='{"error": <message>}')


class TeamCreateSerializer(serializers.Serializer[Any]):
    name = Text(max_length=200)


class MemberSerializer(serializers.Serializer[Any]):
    username = Text(max_length=150)
    role = serializers.ChoiceField(choices=TeamMembership.Role.values, default=TeamMembership.Role.VIEWER)


class ShareSerializer(serializers.Serializer[Any]):
    teamId = serializers.IntegerField()
    access = serializers.ChoiceField(choices=SessionShare.Access.values, default=SessionShare.Access.VIEWER)


class LinkSerializer(serializers.Serializer[Any]):
    scope = serializers.ChoiceField(choices=ShareLink.Scope.values, default=ShareLink.Scope.TREE)
    entryId = Text(required=False, allow_null=True, default=None)
    frozen = Flag(default=False)
    expiresAt = serializers.DateTimeField(required=False, allow_null=True, default=None)


def team_payload(team: Team, user: Any) -> dict[str, Any]:
    members = team.memberships.select_related("user").order_by("user__username")
    return {
        "id": team.pk,
        "name": team.name,
        "defaultShare": team.default_share or None,
        "role": next((m.role for m in members if m.user_id == user.pk), None),
        "members": [{"username": m.user.get_username(), "role": m.role} for m in members],
    }


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


class TeamListView(SharingAPIView):
    @extend_schema(responses={200: OpenApiResponse(description="My teams with their members")})
    def get(self, request: Request) -> Response:
        """List the teams I belong to."""
        teams = Team.objects.filter(memberships__user=request.user).order_by("name")
        return Response({"results": [team_payload(t, request.user) for t in teams]})

    @extend_schema(request=TeamCreateSerializer, responses={201: OpenApiResponse(), 400: ERROR})
    def post(self, request: Request) -> Response:
        """Create a team; its creator becomes its owner."""
        data = _valid(TeamCreateSerializer, request.data)
        team = services.create_team(actor=request.user, name=data["name"])
        return Response(team_payload(team, request.user), status=status.HTTP_201_CREATED)


class RoleSerializer(serializers.Serializer[Any]):
    role = serializers.ChoiceField(choices=TeamMembership.Role.values)


class TeamMembersView(SharingAPIView):
    @extend_schema(
        request=MemberSerializer,
        responses={202: OpenApiResponse(description='{"status": "invited"}'), 403: ERROR, 404: ERROR},
    )
    def post(self, request: Request, team_id: int) -> Response:
        """Invite a user with a role (team owners only); they join by accepting. Same answer for anyone."""
        data = _valid(MemberSerializer, request.data)
        services.invite_member(
            actor=request.user, team_id=team_id, username=data["username"], role=data["role"]
        )
        return Response({"status": "invited"}, status=status.HTTP_202_ACCEPTED)


class TeamMemberDetailView(SharingAPIView):
    @extend_schema(
        request=RoleSerializer, responses={200: OpenApiResponse(), 403: ERROR, 404: ERROR, 409: ERROR}
    )
    def patch(self, request: Request, team_id: int, username: str) -> Response:
        """Change a member's role (team owners only); the last owner cannot be demoted (409)."""
        data = _valid(RoleSerializer, request.data)
        team = services.change_role(actor=request.user, team_id=team_id, username=username, role=data["role"])
        return Response(team_payload(team, request.user))

    @extend_schema(responses={204: None, 403: ERROR, 404: ERROR, 409: ERROR})
    def delete(self, request: Request, team_id: int, username: str) -> Response:
        """Remove a member (team owners) or leave (yourself); never the last owner (409)."""
        services.remove_member(actor=request.user, team_id=team_id, username=username)
        return Response(status=status.HTTP_204_NO_CONTENT)


def invitation_payload(invitation: TeamInvitation) -> dict[str, Any]:
    inviter = invitation.invited_by
    return {
        "id": invitation.pk,
        "team": {"id": invitation.team_id, "name": invitation.team.name},
        "role": invitation.role,
        "invitedBy": inviter.get_username() if inviter is not None else None,
    }


class InvitationListView(SharingAPIView):
    @extend_schema(responses={200: OpenApiResponse(description="Invitations waiting for my answer")})
    def get(self, request: Request) -> Response:
        """List the team invitations waiting for my answer."""
        pending = services.pending_invitations(actor=request.user)
        return Response({"results": [invitation_payload(i) for i in pending]})


class InvitationAcceptView(SharingAPIView):
    @extend_schema(request=None, responses={200: OpenApiResponse(description="The team joined"), 404: ERROR})
    def post(self, request: Request, invitation_id: int) -> Response:
        """Accept an invitation: join the team with the offered role."""
        team = services.accept_invitation(actor=request.user, invitation_id=invitation_id)
        return Response(team_payload(team, request.user))


class InvitationDeclineView(SharingAPIView):
    @extend_schema(request=None, responses={204: None, 404: ERROR})
    def post(self, request: Request, invitation_id: int) -> Response:
        """Decline an invitation."""
        services.decline_invitation(actor=request.user, invitation_id=invitation_id)
        return Response(status=status.HTTP_204_NO_CONTENT)


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


class TeamSettingsSerializer(serializers.Serializer[Any]):
    defaultShare = serializers.ChoiceField(
        choices=SessionShare.Access.choices,
        allow_null=True,
        help_text="Access new sessions of members get in the team when imported or synced; null: none",
    )


class TeamDetailView(SharingAPIView):
    @extend_schema(
        operation_id="teams_detail",
        responses={200: OpenApiResponse(description="The team, its members and settings"), 404: ERROR},
    )
    def get(self, request: Request, team_id: int) -> Response:
        """Show one of my teams: members, my role and its default sharing."""
        team = access.team_of(request.user, team_id, owner=False)
        return Response(team_payload(team, request.user))

    @extend_schema(
        request=TeamSettingsSerializer, responses={200: OpenApiResponse(), 400: ERROR, 403: ERROR, 404: ERROR}
    )
    def patch(self, request: Request, team_id: int) -> Response:
        """Share members' new imported and synced sessions with the team by default (team owners only)."""
        data = _valid(TeamSettingsSerializer, request.data)
        team = services.set_team_default_share(
            actor=request.user, team_id=team_id, access_level=data["defaultShare"] or ""
        )
        return Response(team_payload(team, request.user))


def sent_invitation_payload(invitation: TeamInvitation) -> dict[str, Any]:
    return {**invitation_payload(invitation), "username": invitation.user.get_username()}


class TeamInvitationsView(SharingAPIView):
    @extend_schema(responses={200: OpenApiResponse(description="Invitations not answered yet"), 403: ERROR})
    def get(self, request: Request, team_id: int) -> Response:
        """List the team's invitations waiting for an answer (team owners only)."""
        sent = services.sent_invitations(actor=request.user, team_id=team_id)
        return Response({"results": [sent_invitation_payload(i) for i in sent]})


class TeamInvitationDetailView(SharingAPIView):
    @extend_schema(responses={204: None, 403: ERROR, 404: ERROR})
    def delete(self, request: Request, team_id: int, invitation_id: int) -> Response:
        """Withdraw an invitation nobody has answered yet (team owners only)."""
        services.withdraw_invitation(actor=request.user, team_id=team_id, invitation_id=invitation_id)
        return Response(status=status.HTTP_204_NO_CONTENT)


class TeamSessionsQuery(serializers.Serializer[Any]):
    q = Text(required=False, default="", allow_blank=True, max_length=200)


def team_session_payload(share: SessionShare) -> dict[str, Any]:
    session = share.session
    return {
        "id": session.pk,
        "name": session.name,
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
    "InvitationAcceptView",
    "InvitationDeclineView",
    "InvitationListView",
    "LinkDetailView",
    "SessionLinksView",
    "SessionShareDetailView",
    "SessionSharesView",
    "TeamDetailView",
    "TeamInvitationDetailView",
    "TeamInvitationsView",
    "TeamListView",
    "TeamMemberDetailView",
    "TeamMembersView",
    "TeamSessionsView",
]
