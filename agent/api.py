"""REST adapters for agent runs: start one, read its state, abort it."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from drf_spectacular.utils import OpenApiResponse, extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from agent import services
from agent.models import AgentRun
from core.api.errors import api_exception_handler, error_response
from core.api.fields import Text
from documents import rendering
from pitree.images import IMAGE_TYPES
from providers.facade import LLMProvider, LLMThrottle
from sessions_app.facade import access


class ImageSerializer(serializers.Serializer[Any]):
    data = serializers.CharField(help_text="The picture's bytes in base64")  # type: ignore[assignment]  # a field named data
    mimeType = serializers.ChoiceField(choices=list(IMAGE_TYPES))


class StartRunSerializer(serializers.Serializer[Any]):
    prompt = Text(trim_whitespace=False, max_length=1_000_000)
    images = serializers.ListField(
        child=ImageSerializer(),
        required=False,
        help_text="Pictures to attach (PNG, JPEG, GIF or WebP), stored after the text as Pi stores them",
    )
    providerId = serializers.IntegerField(required=False, allow_null=True)
    thinkingLevel = serializers.ChoiceField(
        choices=services.THINKING_LEVELS, required=False, allow_blank=True
    )


class RegenerateSerializer(serializers.Serializer[Any]):
    entryId = Text(max_length=200)
    providerId = serializers.IntegerField(required=False, allow_null=True)
    thinkingLevel = serializers.ChoiceField(
        choices=services.THINKING_LEVELS, required=False, allow_blank=True
    )


class EditSerializer(serializers.Serializer[Any]):
    entryId = Text(max_length=200)
    prompt = Text(trim_whitespace=False, max_length=1_000_000)
    providerId = serializers.IntegerField(required=False, allow_null=True)
    thinkingLevel = serializers.ChoiceField(
        choices=services.THINKING_LEVELS, required=False, allow_blank=True
    )


class RenderSerializer(serializers.Serializer[Any]):
    text = Text(trim_whitespace=False, allow_blank=True, max_length=rendering.MARKDOWN_LIMIT)


RUN_SCHEMA = inline_serializer(
    "AgentRun",
    {
        "runId": serializers.UUIDField(),
        "session": serializers.IntegerField(),
        "status": serializers.CharField(),
        "prompt": serializers.CharField(),
        "provider": serializers.DictField(allow_null=True),
        "thinkingLevel": serializers.CharField(allow_null=True),
        "error": serializers.CharField(allow_null=True),
        "abortRequested": serializers.BooleanField(),
        "userEntryId": serializers.CharField(allow_null=True),
        "regenerateFrom": serializers.CharField(allow_null=True),
        "editOf": serializers.CharField(allow_null=True),
        "finalEntryId": serializers.CharField(allow_null=True),
        "stopReason": serializers.CharField(allow_null=True),
        "retryAttempts": serializers.IntegerField(),
        "recoveryEvents": serializers.ListField(child=serializers.DictField()),
        "createdAt": serializers.DateTimeField(),
        "startedAt": serializers.DateTimeField(allow_null=True),
        "finishedAt": serializers.DateTimeField(allow_null=True),
    },
)
ERROR = OpenApiResponse(description='{"error": <message>}')


def run_payload(run: AgentRun) -> dict[str, Any]:
    """Return the public shape of a run."""
    provider = run.provider
    return {
        "runId": str(run.public_id),
        "session": run.session_id,
        "status": run.status,
        "prompt": run.prompt,
        "provider": None
        if provider is None
        else {"id": provider.pk, "provider": provider.provider, "modelId": provider.model_id},
        "thinkingLevel": run.thinking_level or None,
        "error": run.error or None,
        "abortRequested": run.abort_requested,
        "userEntryId": run.user_entry_id,
        "regenerateFrom": run.regenerate_from,
        "editOf": run.edit_of,
        "finalEntryId": run.final_entry_id,
        "stopReason": run.stop_reason or None,
        "retryAttempts": run.retry_attempts,
        "recoveryEvents": run.recovery_events,
        "createdAt": run.created_at.isoformat(),
        "startedAt": run.started_at.isoformat() if run.started_at else None,
        "finishedAt": run.finished_at.isoformat() if run.finished_at else None,
    }


class _RunAPIView(APIView):
    def get_exception_handler(self) -> Any:
        return api_exception_handler

    def readable_run(self, run_id: UUID) -> AgentRun:
        run = (
            AgentRun.objects.visible_to(self.request.user)
            .select_related("provider")
            .filter(public_id=run_id)
            .first()
        )
        if run is None:
            raise NotFound(f"Run not found: {run_id}")
        return run

    def started(self, request: Request, pk: int, form: type[serializers.Serializer], start: Any) -> Response:
        """Start a run with ``start(grant, validated data)``: 202 with its id, 409 naming the active run,
        400 when no model can answer; the one answer of every view that starts a run."""
        grant = access.require_read(request, pk)
        serializer = form(data=request.data)
        serializer.is_valid(raise_exception=True)
        try:
            run = start(grant, serializer.validated_data)
        except services.RunConflict as exc:
            active = str(exc.active.public_id) if exc.active is not None else None
            return error_response(str(exc), status.HTTP_409_CONFLICT, activeRunId=active)
        except (services.NoProvider, ValueError) as exc:
            return error_response(str(exc), status.HTTP_400_BAD_REQUEST)
        return Response({"runId": str(run.public_id)}, status=status.HTTP_202_ACCEPTED)


def _started_responses(name: str) -> dict[int, Any]:
    """The answers of a request that queues a run: its id, or why it was refused."""
    return {
        202: inline_serializer(name, {"runId": serializers.UUIDField()}),
        400: ERROR,
        403: ERROR,
        404: ERROR,
        409: ERROR,
    }


class SessionRunsView(_RunAPIView):
    """POST a prompt: 202 with the run id; 409 while another run of the session is active."""

    def get_throttles(self) -> list[Any]:
        return [LLMThrottle()] if self.request.method == "POST" else []

    @extend_schema(
        request=StartRunSerializer,
        responses=_started_responses("RunStarted"),
    )
    def post(self, request: Request, pk: int) -> Response:
        return self.started(
            request,
            pk,
            StartRunSerializer,
            lambda grant, data: services.start_run(
                session=grant.session,
                user=request.user,
                prompt=data["prompt"],
                provider_id=data.get("providerId"),
                thinking_level=data.get("thinkingLevel") or "",
                grant=grant,
                images=data.get("images") or [],
            ),
        )

    @extend_schema(
        responses={
            200: inline_serializer(
                "RunList", {"results": serializers.ListField(child=serializers.DictField())}
            ),
            404: ERROR,
        }
    )
    def get(self, request: Request, pk: int) -> Response:
        # Run prompts belong to collaborators: share links do not reach them.
        access.require_read(request, pk, links=False)
        runs = AgentRun.objects.filter(session_id=pk).select_related("provider")[:50]
        return Response({"results": [run_payload(r) for r in runs]})


class RunDetailView(_RunAPIView):
    @extend_schema(responses={200: RUN_SCHEMA, 404: ERROR})
    def get(self, request: Request, run_id: UUID) -> Response:
        return Response(run_payload(self.readable_run(run_id)))


class RunAbortView(_RunAPIView):
    @extend_schema(request=None, responses={202: RUN_SCHEMA, 403: ERROR, 404: ERROR})
    def post(self, request: Request, run_id: UUID) -> Response:
        run = self.readable_run(run_id)
        return Response(
            run_payload(services.abort_run(run=run, actor=request.user)), status=status.HTTP_202_ACCEPTED
        )


class SessionRegenerateView(_RunAPIView):
    """POST an assistant entry id: a run answers its turn again, as a new branch beside it."""

    def get_throttles(self) -> list[Any]:
        return [LLMThrottle()]

    @extend_schema(
        request=RegenerateSerializer,
        responses=_started_responses("RunRegenerated"),
    )
    def post(self, request: Request, pk: int) -> Response:
        return self.started(
            request,
            pk,
            RegenerateSerializer,
            lambda grant, data: services.regenerate_run(
                session=grant.session,
                user=request.user,
                entry_id=data["entryId"],
                provider_id=data.get("providerId"),
                thinking_level=data.get("thinkingLevel") or "",
                grant=grant,
            ),
        )


class SessionEditView(_RunAPIView):
    """POST a user entry id and a new prompt: the prompt goes in beside that message, as a new branch."""

    def get_throttles(self) -> list[Any]:
        return [LLMThrottle()]

    @extend_schema(
        request=EditSerializer,
        responses={
            202: inline_serializer("RunEdited", {"runId": serializers.UUIDField()}),
            400: ERROR,
            403: ERROR,
            404: ERROR,
            409: ERROR,
        },
    )
    def post(self, request: Request, pk: int) -> Response:
        return self.started(
            request,
            pk,
            EditSerializer,
            lambda grant, data: services.resend_edited(
                session=grant.session,
                user=request.user,
                entry_id=data["entryId"],
                prompt=data["prompt"],
                provider_id=data.get("providerId"),
                thinking_level=data.get("thinkingLevel") or "",
                grant=grant,
            ),
        )


class StreamRenderView(_RunAPIView):
    """POST the text of a reply still streaming: its sanitized HTML, as the finished message will show."""

    @extend_schema(
        request=RenderSerializer,
        responses={
            200: inline_serializer("RenderedText", {"html": serializers.CharField()}),
            400: ERROR,
            403: ERROR,
            404: ERROR,
        },
    )
    def post(self, request: Request, pk: int) -> Response:
        # Streams reach collaborators only (links get no deltas), so the renderer does too.
        access.require_read(request, pk, links=False)
        serializer = RenderSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        return Response({"html": rendering.render_markdown(serializer.validated_data["text"])})


class SessionStopView(_RunAPIView):
    """POST: stop the session's active run; what streamed so far is kept as an aborted answer."""

    @extend_schema(request=None, responses={202: RUN_SCHEMA, 403: ERROR, 404: ERROR, 409: ERROR})
    def post(self, request: Request, pk: int) -> Response:
        grant = access.require_read(request, pk, links=False)
        try:
            run = services.abort_active_run(session=grant.session, actor=request.user)
        except services.NoActiveRun as exc:
            return error_response(str(exc), status.HTTP_409_CONFLICT)
        return Response(run_payload(run), status=status.HTTP_202_ACCEPTED)


__all__ = [
    "LLMProvider",
    "RunAbortView",
    "RunDetailView",
    "SessionEditView",
    "SessionRegenerateView",
    "SessionRunsView",
    "SessionStopView",
    "StreamRenderView",
]
