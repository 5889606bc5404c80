"""REST adapters for hooks: list and create (personal or a team's), change, pause and resume, rotate the
secret, delete, send a test, read the delivery log and replay a delivery."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from core.api.errors import api_exception_handler
from core.api.fields import Flag, Text
from hooks import queries, services
from hooks.models import Hook

ERROR = inline_serializer("HookError", {"error": serializers.CharField()})


class HookSerializer(serializers.Serializer[Any]):
    """A hook as the API answers it (one schema component, whichever answer names it)."""

    id = serializers.IntegerField()
    name = serializers.CharField()
    url = serializers.CharField()
    events = serializers.ListField(child=serializers.CharField())
    format = serializers.CharField()
    active = serializers.BooleanField()
    failingSince = serializers.DateTimeField(allow_null=True)


def _hook() -> Any:
    return HookSerializer()


HOOK_WITH_SECRET = inline_serializer(
    "HookWithSecret", {"hook": _hook(), "secret": serializers.CharField(help_text="Shown this once")}
)


class _View(APIView):
    def get_exception_handler(self) -> Any:
        return api_exception_handler


class CreateHookSerializer(serializers.Serializer[Any]):
    name = Text(max_length=100)
    url = Text(max_length=2000)
    events = serializers.ListField(child=Text(max_length=40), max_length=20)
    format = serializers.ChoiceField(choices=Hook.Format.values, default=Hook.Format.JSON)


class ChangeHookSerializer(serializers.Serializer[Any]):
    name = Text(max_length=100, required=False)
    url = Text(max_length=2000, required=False)
    events = serializers.ListField(child=Text(max_length=40), max_length=20, required=False)
    format = serializers.ChoiceField(choices=Hook.Format.values, required=False)
    active = Flag(required=False)


def _create(request: Request, team_id: int | None) -> Response:
    body = CreateHookSerializer(data=request.data)
    body.is_valid(raise_exception=True)
    hook, secret = services.create_hook(actor=request.user, team_id=team_id, **body.validated_data)
    return Response({"hook": queries.hook_body(hook), "secret": secret}, status=status.HTTP_201_CREATED)


class HooksView(_View):
    @extend_schema(
        responses={200: inline_serializer("HookList", {"results": serializers.ListField(child=_hook())})}
    )
    def get(self, request: Request) -> Response:
        """Your personal hooks, with their failed and waiting deliveries."""
        return Response({"results": queries.hook_list(request.user), "events": queries.event_choices()})

    @extend_schema(request=CreateHookSerializer, responses={201: HOOK_WITH_SECRET, 400: ERROR})
    def post(self, request: Request) -> Response:
        """Create a personal hook: it hears of sessions you may read. Its secret is in this answer alone."""
        return _create(request, None)


class TeamHooksView(_View):
    @extend_schema(
        responses={200: inline_serializer("TeamHookList", {"results": serializers.ListField(child=_hook())})}
    )
    def get(self, request: Request, team_id: int) -> Response:
        """The team's hooks (its owners only)."""
        results = queries.hook_list(request.user, team_id=team_id)
        return Response({"results": results, "events": queries.event_choices()})

    @extend_schema(request=CreateHookSerializer, responses={201: HOOK_WITH_SECRET, 400: ERROR, 403: ERROR})
    def post(self, request: Request, team_id: int) -> Response:
        """Create a team hook (its owners only): it hears of the sessions shared with the team."""
        return _create(request, team_id)


class HookDetailView(_View):
    @extend_schema(operation_id="hooks_detail", responses={200: _hook(), 404: ERROR})
    def get(self, request: Request, hook_id: int) -> Response:
        """One hook you manage."""
        return Response(queries.hook_body(services.managed_hook(request.user, hook_id)))

    @extend_schema(request=ChangeHookSerializer, responses={200: _hook(), 400: ERROR, 403: ERROR, 404: ERROR})
    def patch(self, request: Request, hook_id: int) -> Response:
        """Change a hook, or pause (``active: false``) and resume it."""
        body = ChangeHookSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        hook = services.update_hook(actor=request.user, hook_id=hook_id, changes=body.validated_data)
        return Response(queries.hook_body(hook))

    @extend_schema(responses={204: None, 403: ERROR, 404: ERROR})
    def delete(self, request: Request, hook_id: int) -> Response:
        """Delete a hook and its delivery log."""
        services.delete_hook(actor=request.user, hook_id=hook_id)
        return Response(status=status.HTTP_204_NO_CONTENT)


class RotateSecretView(_View):
    @extend_schema(request=None, responses={200: HOOK_WITH_SECRET, 403: ERROR, 404: ERROR})
    def post(self, request: Request, hook_id: int) -> Response:
        """Give the hook a new secret, in this answer only; the old one stops signing at once."""
        hook, secret = services.rotate_secret(actor=request.user, hook_id=hook_id)
        return Response({"hook": queries.hook_body(hook), "secret": secret})


class PingView(_View):
    @extend_schema(
        request=None, responses={202: inline_serializer("HookPing", {"id": serializers.IntegerField()})}
    )
    def post(self, request: Request, hook_id: int) -> Response:
        """Send a test delivery (event ``ping``); its outcome appears in the delivery log."""
        delivery = services.send_ping(actor=request.user, hook_id=hook_id)
        return Response({"id": delivery.pk}, status=status.HTTP_202_ACCEPTED)


class DeliveriesView(_View):
    @extend_schema(
        parameters=[OpenApiParameter("before", int, description="Deliveries older than this id (next page)")],
        responses={
            200: inline_serializer(
                "HookDeliveries",
                {"results": serializers.ListField(), "next": serializers.IntegerField(allow_null=True)},
            ),
            404: ERROR,
        },
    )
    def get(self, request: Request, hook_id: int) -> Response:
        """The hook's delivery log, newest first, 50 at a time: each request's event, payload and outcome."""
        raw = request.query_params.get("before")
        before = int(raw) if raw and raw.isdigit() and len(raw) < 19 else None
        hook, rows, following = queries.delivery_log(request.user, hook_id, before=before)
        return Response({"hook": queries.hook_body(hook), "results": rows, "next": following})


class ReplayView(_View):
    @extend_schema(
        request=None,
        responses={
            202: inline_serializer("HookReplay", {"id": serializers.IntegerField()}),
            403: ERROR,
            404: ERROR,
        },
    )
    def post(self, request: Request, hook_id: int, delivery_id: int) -> Response:
        """Send a logged delivery again, as a new delivery with its own id."""
        delivery = services.replay_delivery(actor=request.user, hook_id=hook_id, delivery_id=delivery_id)
        return Response({"id": delivery.pk}, status=status.HTTP_202_ACCEPTED)
