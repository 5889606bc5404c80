"""REST adapters for compaction and branch-summary operations: parse the request, call one use case."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from compaction_app import services
from compaction_app.api.serializers import CompactionOperationSerializer, CompactRequestSerializer
from compaction_app.models import CompactionRun
from core.api.errors import api_exception_handler, error_response
from core.api.parsers import LimitedJSONParser
from providers.facade import LLMThrottle
from sessions_app.facade import (
    ErrorSerializer,
    NavigateResultSerializer,
    NavigateSerializer,
    OperationSerializer,
    access,
)
from sessions_app.facade import services as session_services

ERRORS = {code: ErrorSerializer for code in (400, 403, 404, 409)}


def operation_exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """The API's error body, with the operations' own refusals: Pi's refusal 400, busy or finished 409."""
    if isinstance(exc, services.CompactionRefused):
        return error_response(str(exc), status.HTTP_400_BAD_REQUEST)
    if isinstance(exc, services.OperationInProgress):
        return error_response(exc.message, status.HTTP_409_CONFLICT)
    if isinstance(exc, services.OperationFinished):
        return error_response(str(exc), status.HTTP_409_CONFLICT)
    return api_exception_handler(exc, context)


class OperationAPIView(APIView):
    parser_classes = [LimitedJSONParser]

    def get_exception_handler(self) -> Any:
        return operation_exception_handler


def _visible_run(request: Request, operation_id: Any) -> CompactionRun:
    run = CompactionRun.objects.visible_to(request.user).filter(operation_id=operation_id).first()
    if run is None:
        raise NotFound(f"Operation not found: {operation_id}")
    return run


class CompactView(OperationAPIView):
    def get_throttles(self) -> list[Any]:
        return [LLMThrottle()] if self.request.method == "POST" else []

    @extend_schema(request=CompactRequestSerializer, responses={202: CompactionOperationSerializer, **ERRORS})
    def post(self, request: Request, pk: int) -> Response:
        """Queue a manual compaction of the session's leaf; Pi's refusals come back at once as 400."""
        session = access.require_read(request, pk).session
        data = CompactRequestSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        run = services.request_compaction(
            session=session,
            custom_instructions=data.validated_data.get("customInstructions"),
            actor=request.user,
            idempotency_key=request.headers.get("Idempotency-Key"),
        )
        return Response(CompactionOperationSerializer(run).data, status=status.HTTP_202_ACCEPTED)


class NavigateView(OperationAPIView):
    """Move the leaf; with ``summarize``, queue a branch summary of the branch being left."""

    def get_throttles(self) -> list[Any]:
        # Only a navigation that writes a branch summary spends model tokens.
        summarize = isinstance(self.request.data, dict) and bool(self.request.data.get("summarize"))
        return [LLMThrottle()] if self.request.method == "POST" and summarize else []

    @extend_schema(
        request=NavigateSerializer,
        responses={200: NavigateResultSerializer, 202: OperationSerializer, **ERRORS},
    )
    def post(self, request: Request, pk: int) -> Response:
        """Move the leaf to a target; with ``summarize``, start a branch summary of the branch being left."""
        grant = access.require_read(request, pk)
        serializer = NavigateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        if data["summarize"]:
            operation = services.start_branch_summary(
                session=grant.session,
                target_id=data["targetId"],
                custom_instructions=data.get("customInstructions"),
                replace_instructions=data["replaceInstructions"],
                actor=request.user,
                grant=grant,
            )
            return Response({"operationId": operation}, status=status.HTTP_202_ACCEPTED)
        outcome = session_services.navigate_without_summary(
            session=grant.session, target_id=data["targetId"], actor=request.user, grant=grant
        )
        body: dict[str, Any] = {"leafId": outcome.leaf_id}
        if outcome.editor_text is not None:
            body["editorText"] = outcome.editor_text
        return Response(body)


class OperationView(OperationAPIView):
    @extend_schema(responses={200: CompactionOperationSerializer})
    def get(self, request: Request, operation_id: Any) -> Response:
        """Return an operation's status, its error or its result."""
        return Response(CompactionOperationSerializer(_visible_run(request, operation_id)).data)


class CancelOperationView(OperationAPIView):
    @extend_schema(request=None, responses={200: CompactionOperationSerializer, **ERRORS})
    def post(self, request: Request, operation_id: Any) -> Response:
        """Cancel a queued or running operation; the session is left as it was."""
        run = services.cancel_operation(run=_visible_run(request, operation_id), actor=request.user)
        return Response(CompactionOperationSerializer(run).data)
