"""REST adapters for runners: register, list and revoke them; run a session on one; steer its run."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from agent.facade import AgentRun
from core.api.errors import api_exception_handler, error_response
from core.api.fields import Text
from runners import services
from runners.models import Runner
from sessions_app.facade import access
from teams.facade import Team

ERROR = inline_serializer("RunnerError", {"error": serializers.CharField()})


def runner_body(runner: Runner) -> dict[str, Any]:
    info = runner.info if isinstance(runner.info, dict) else {}
    return {
        "id": runner.pk,
        "name": runner.name,
        "team": {"id": runner.team_id, "name": runner.team.name} if runner.team is not None else None,
        "tokenId": runner.token_id,
        "online": runner.online,
        "revoked": runner.revoked_at is not None,
        "workspaces": runner.workspaces(),
        "piVersion": info.get("piVersion") or None,
        "tools": info.get("tools") or [],
        "models": info.get("models") or [],
        "labels": info.get("labels") or [],
    }


class _View(APIView):
    def get_exception_handler(self) -> Any:
        return api_exception_handler


class CreateRunnerSerializer(serializers.Serializer[Any]):
    name = Text(max_length=100)
    teamId = serializers.IntegerField(required=False, allow_null=True, default=None)


class RunnersView(_View):
    @extend_schema(responses={200: inline_serializer("RunnerList", {"results": serializers.ListField()})})
    def get(self, request: Request) -> Response:
        """The runners you may run sessions on (yours, and your teams' where you edit)."""
        return Response({"results": [runner_body(r) for r in services.runners_for(request.user)]})

    @extend_schema(
        request=CreateRunnerSerializer,
        responses={201: inline_serializer("RunnerCreated", {"token": serializers.CharField()}), 400: ERROR},
    )
    def post(self, request: Request) -> Response:
        """Register a runner; its token is in this answer only (give it to ``piweb-runner``)."""
        body = CreateRunnerSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        team = None
        if body.validated_data["teamId"] is not None:
            team = Team.objects.filter(pk=body.validated_data["teamId"]).first()
            if team is None:
                raise NotFound("No such team")
        try:
            runner, token = services.create_runner(
                actor=request.user, name=body.validated_data["name"], team=team
            )
        except PermissionError as exc:
            return error_response(str(exc), status.HTTP_403_FORBIDDEN)
        except ValueError as exc:
            return error_response(str(exc), status.HTTP_400_BAD_REQUEST)
        return Response({**runner_body(runner), "token": token}, status=status.HTTP_201_CREATED)


class RunnerDetailView(_View):
    @extend_schema(responses={204: None, 403: ERROR, 404: ERROR})
    def delete(self, request: Request, runner_id: int) -> Response:
        """Revoke a runner: its socket closes and its runs in progress stop."""
        runner = Runner.objects.filter(pk=runner_id).select_related("team").first()
        mine = runner is not None and runner.owner_id == request.user.pk
        if runner is None or not (mine or runner in services.runners_for(request.user)):
            raise NotFound("No such runner")
        try:
            services.revoke_runner(actor=request.user, runner=runner)
        except PermissionError as exc:
            return error_response(str(exc), status.HTTP_403_FORBIDDEN)
        return Response(status=status.HTTP_204_NO_CONTENT)


class SessionRunnersView(_View):
    @extend_schema(responses={200: inline_serializer("SessionRunners", {"results": serializers.ListField()})})
    def get(self, request: Request, pk: int) -> Response:
        """The runners that may run this session for you (none if you may not change it)."""
        grant = access.require_read(request, pk, links=False)
        if not grant.can_write:
            return Response({"results": []})
        return Response({"results": [runner_body(r) for r in services.runners_for(request.user)]})


class DispatchSerializer(serializers.Serializer[Any]):
    runnerId = serializers.IntegerField()
    workspace = Text(max_length=200)
    prompt = Text(trim_whitespace=False, max_length=200_000)
    thinkingLevel = Text(required=False, allow_blank=True, default="")
    model = Text(required=False, allow_blank=True, default="", help_text="provider/id, one the runner offers")


class SessionRemoteRunView(_View):
    @extend_schema(
        responses={
            200: inline_serializer(
                "ActiveRemoteRun",
                {
                    "runId": serializers.UUIDField(allow_null=True),
                    "runner": serializers.DictField(allow_null=True),
                },
            ),
            404: ERROR,
        }
    )
    def get(self, request: Request, pk: int) -> Response:
        """The run Pi is doing on a runner for this session now, if any: a page opened during it (another
        tab, another teammate) learns it can steer it. Nothing for those who may not change the session."""
        grant = access.require_read(request, pk, links=False)
        placed = services.active_runner_run(grant.session) if grant.can_write else None
        if placed is None:
            return Response({"runId": None, "runner": None})
        runner = {"id": placed.runner_id, "name": placed.runner.name}
        return Response({"runId": str(placed.run.public_id), "runner": runner})

    @extend_schema(
        request=DispatchSerializer,
        responses={
            202: inline_serializer("RemoteRunStarted", {"runId": serializers.UUIDField()}),
            400: ERROR,
            403: ERROR,
            404: ERROR,
            409: ERROR,
        },
    )
    def post(self, request: Request, pk: int) -> Response:
        """Run a prompt with Pi on one of your runners: 202 with the run id, 409 when it cannot start now."""
        grant = access.require_write(request, pk)
        body = DispatchSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        runner = next((r for r in services.runners_for(request.user) if r.pk == data["runnerId"]), None)
        if runner is None:
            raise NotFound("No such runner among yours")
        try:
            run = services.dispatch_run(
                actor=request.user,
                session=grant.session,
                runner=runner,
                workspace=data["workspace"],
                prompt=data["prompt"],
                thinking_level=data["thinkingLevel"],
                model=data["model"],
            )
        except services.DispatchRefused as exc:
            return error_response(str(exc), status.HTTP_409_CONFLICT)
        except ValueError as exc:
            return error_response(str(exc), status.HTTP_400_BAD_REQUEST)
        return Response({"runId": str(run.public_id)}, status=status.HTTP_202_ACCEPTED)


class MessageSerializer(serializers.Serializer[Any]):
    message = Text(trim_whitespace=False, max_length=200_000)


class RunMessageView(_View):
    kind = "steer"

    @extend_schema(request=MessageSerializer, responses={202: None, 400: ERROR, 404: ERROR, 409: ERROR})
    def post(self, request: Request, run_id: UUID) -> Response:
        """Steer a run on a runner (delivered after its current tool calls), or queue a follow-up."""
        body = MessageSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        runs = AgentRun.objects.visible_to(request.user).select_related("session")
        run = runs.filter(public_id=run_id).first()
        if run is None:
            raise NotFound(f"Run not found: {run_id}")
        try:
            services.send_to_run(
                actor=request.user, run=run, kind=self.kind, message=body.validated_data["message"]
            )
        except services.DispatchRefused as exc:
            return error_response(str(exc), status.HTTP_409_CONFLICT)
        except ValueError as exc:
            return error_response(str(exc), status.HTTP_400_BAD_REQUEST)
        return Response(status=status.HTTP_202_ACCEPTED)


class RunFollowUpView(RunMessageView):
    kind = "follow_up"


class HandoffSerializer(serializers.Serializer[Any]):
    userId = serializers.IntegerField()
    note = Text(trim_whitespace=False, allow_blank=True, default="", max_length=10_000)


class SessionHandoffView(_View):
    @extend_schema(
        responses={200: inline_serializer("HandoffCandidates", {"results": serializers.ListField()})}
    )
    def get(self, request: Request, pk: int) -> Response:
        """The teammates you may hand this session to (those who may change it)."""
        grant = access.require_write(request, pk)
        people = services.handoff_candidates(actor=request.user, session=grant.session)
        body = [{"id": u.pk, "username": u.get_username(), "name": u.get_full_name() or ""} for u in people]
        return Response({"results": body})

    @extend_schema(request=HandoffSerializer, responses={201: None, 400: ERROR, 403: ERROR, 404: ERROR})
    def post(self, request: Request, pk: int) -> Response:
        """Hand the session to a teammate with a note: they are told in their inbox and by mail."""
        grant = access.require_write(request, pk)
        body = HandoffSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        from django.contrib.auth import get_user_model

        to = get_user_model().objects.filter(pk=body.validated_data["userId"]).first()
        try:
            comment = services.hand_off(
                actor=request.user, session=grant.session, to=to, note=body.validated_data["note"]
            )
        except ValueError as exc:
            return error_response(str(exc), status.HTTP_400_BAD_REQUEST)
        return Response({"commentId": comment.pk}, status=status.HTTP_201_CREATED)
