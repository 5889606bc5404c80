"""Teams over HTTP: create, invite, answer, change roles, settings; each view calls one use case."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from core.api.fields import Text, parse
from core.api.parsers import LimitedJSONParser
from teams import services as team_services
from teams.access import team_of
from teams.models import Team, TeamInvitation, TeamMembership

ERROR = OpenApiResponse(description='{"error": <message>}')


def _valid(serializer_class: type[Any], data: Any) -> dict[str, Any]:
    return parse(serializer_class, data)


class TeamAPIView(APIView):
    parser_classes = [LimitedJSONParser]


class TeamCreateSerializer(serializers.Serializer[Any]):
    name = Text(max_length=200)


class MemberSerializer(serializers.Serializer[Any]):
    username = Text(max_length=150)
    role = serializers.ChoiceField(choices=TeamMembership.Role.values, default=TeamMembership.Role.VIEWER)


def team_payload(team: Team, user: Any) -> dict[str, Any]:
    members = team.memberships.select_related("user").order_by("user__username")
    return {
        "id": team.pk,
        "name": team.name,
        "defaultShare": team.default_share or None,
        "managedByProvider": team.managed_by_provider,
        "role": next((m.role for m in members if m.user_id == user.pk), None),
        "members": [{"username": m.user.get_username(), "role": m.role} for m in members],
    }


class TeamListView(TeamAPIView):
    @extend_schema(responses={200: OpenApiResponse(description="My teams with their members")})
    def get(self, request: Request) -> Response:
        """List the teams I belong to."""
        teams = Team.objects.filter(memberships__user=request.user).order_by("name")  # type: ignore[misc]  # signed in: never the anonymous user here
        return Response({"results": [team_payload(t, request.user) for t in teams]})

    @extend_schema(request=TeamCreateSerializer, responses={201: OpenApiResponse(), 400: ERROR})
    def post(self, request: Request) -> Response:
        """Create a team; its creator becomes its owner."""
        data = _valid(TeamCreateSerializer, request.data)
        team = team_services.create_team(actor=request.user, name=data["name"])
        return Response(team_payload(team, request.user), status=status.HTTP_201_CREATED)


class RoleSerializer(serializers.Serializer[Any]):
    role = serializers.ChoiceField(choices=TeamMembership.Role.values)


class TeamMembersView(TeamAPIView):
    @extend_schema(
        request=MemberSerializer,
        responses={202: OpenApiResponse(description='{"status": "invited"}'), 403: ERROR, 404: ERROR},
    )
    def post(self, request: Request, team_id: int) -> Response:
        """Invite a user with a role (team owners only); they join by accepting. Same answer for anyone."""
        data = _valid(MemberSerializer, request.data)
        team_services.invite_member(
            actor=request.user, team_id=team_id, username=data["username"], role=data["role"]
        )
        return Response({"status": "invited"}, status=status.HTTP_202_ACCEPTED)


class TeamMemberDetailView(TeamAPIView):
    @extend_schema(
        request=RoleSerializer, responses={200: OpenApiResponse(), 403: ERROR, 404: ERROR, 409: ERROR}
    )
    def patch(self, request: Request, team_id: int, username: str) -> Response:
        """Change a member's role (team owners only); the last owner cannot be demoted (409)."""
        data = _valid(RoleSerializer, request.data)
        team = team_services.change_role(
            actor=request.user, team_id=team_id, username=username, role=data["role"]
        )
        return Response(team_payload(team, request.user))

    @extend_schema(responses={204: None, 403: ERROR, 404: ERROR, 409: ERROR})
    def delete(self, request: Request, team_id: int, username: str) -> Response:
        """Remove a member (team owners) or leave (yourself); never the last owner (409)."""
        team_services.remove_member(actor=request.user, team_id=team_id, username=username)
        return Response(status=status.HTTP_204_NO_CONTENT)


def invitation_payload(invitation: TeamInvitation) -> dict[str, Any]:
    inviter = invitation.invited_by
    return {
        "id": invitation.pk,
        "team": {"id": invitation.team_id, "name": invitation.team.name},
        "role": invitation.role,
        "invitedBy": inviter.get_username() if inviter is not None else None,
    }


class InvitationListView(TeamAPIView):
    @extend_schema(responses={200: OpenApiResponse(description="Invitations waiting for my answer")})
    def get(self, request: Request) -> Response:
        """List the team invitations waiting for my answer."""
        pending = team_services.pending_invitations(actor=request.user)
        return Response({"results": [invitation_payload(i) for i in pending]})


class InvitationAcceptView(TeamAPIView):
    @extend_schema(request=None, responses={200: OpenApiResponse(description="The team joined"), 404: ERROR})
    def post(self, request: Request, invitation_id: int) -> Response:
        """Accept an invitation: join the team with the offered role."""
        team = team_services.accept_invitation(actor=request.user, invitation_id=invitation_id)
        return Response(team_payload(team, request.user))


class InvitationDeclineView(TeamAPIView):
    @extend_schema(request=None, responses={204: None, 404: ERROR})
    def post(self, request: Request, invitation_id: int) -> Response:
        """Decline an invitation."""
        team_services.decline_invitation(actor=request.user, invitation_id=invitation_id)
        return Response(status=status.HTTP_204_NO_CONTENT)


class TeamSettingsSerializer(serializers.Serializer[Any]):
    defaultShare = serializers.ChoiceField(
        choices=[choice for choice in Team.DefaultShare.choices if choice[0]],
        allow_null=True,
        help_text="Access new sessions of members get in the team when imported or synced; null: none",
    )


class TeamDetailView(TeamAPIView):
    @extend_schema(
        operation_id="teams_detail",
        responses={200: OpenApiResponse(description="The team, its members and settings"), 404: ERROR},
    )
    def get(self, request: Request, team_id: int) -> Response:
        """Show one of my teams: members, my role and its default sharing."""
        team = team_of(request.user, team_id, owner=False)
        return Response(team_payload(team, request.user))

    @extend_schema(
        request=TeamSettingsSerializer, responses={200: OpenApiResponse(), 400: ERROR, 403: ERROR, 404: ERROR}
    )
    def patch(self, request: Request, team_id: int) -> Response:
        """Share members' new imported and synced sessions with the team by default (team owners only)."""
        data = _valid(TeamSettingsSerializer, request.data)
        team = team_services.set_team_default_share(
            actor=request.user, team_id=team_id, access_level=data["defaultShare"] or ""
        )
        return Response(team_payload(team, request.user))


def sent_invitation_payload(invitation: TeamInvitation) -> dict[str, Any]:
    return {**invitation_payload(invitation), "username": invitation.user.get_username()}


class TeamInvitationsView(TeamAPIView):
    @extend_schema(responses={200: OpenApiResponse(description="Invitations not answered yet"), 403: ERROR})
    def get(self, request: Request, team_id: int) -> Response:
        """List the team's invitations waiting for an answer (team owners only)."""
        sent = team_services.sent_invitations(actor=request.user, team_id=team_id)
        return Response({"results": [sent_invitation_payload(i) for i in sent]})


class TeamInvitationDetailView(TeamAPIView):
    @extend_schema(responses={204: None, 403: ERROR, 404: ERROR})
    def delete(self, request: Request, team_id: int, invitation_id: int) -> Response:
        """Withdraw an invitation nobody has answered yet (team owners only)."""
        team_services.withdraw_invitation(actor=request.user, team_id=team_id, invitation_id=invitation_id)
        return Response(status=status.HTTP_204_NO_CONTENT)
