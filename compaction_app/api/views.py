"""REST adapters for compaction and branch-summary operations: check access, call one service."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView
from rest_framework.views import exception_handler as drf_exception_handler

from sessions_app import access
from sessions_app.api.throttles import LLMThrottle
from sessions_app.models import ActionLog, ChatSession

from .. import services
from ..models import CompactionRun
from .serializers import CompactionOperationSerializer, CompactRequestSerializer


def _error(message: str, code: int) -> Response:
    return Response({"error": message}, status=code)


def _exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """Give DRF's own errors the API's ``{"error": …}`` shape."""
    response = drf_exception_handler(exc, context)
    if response is not None:
        detail = response.data
        message = detail.get("detail", detail) if isinstance(detail, dict) else detail
        response.data = {"error": str(message), "detail": detail}
    return response


class OperationAPIView(APIView):
    def get_exception_handler(self) -> Any:
        return _exception_handler


def _writable_session(request: Request, pk: int) -> ChatSession:
    return access.require_write(request, pk).session


def _visible_run(request: Request, operation_id: Any) -> CompactionRun:
    run = CompactionRun.objects.visible_to(request.user).filter(operation_id=operation_id).first()
    if run is None:
        raise NotFound(f"Operation not found: {operation_id}")
    return run


class CompactView(OperationAPIView):
    def get_throttles(self) -> list[Any]:
        return [LLMThrottle()] if self.request.method == "POST" else []

    @extend_schema(request=CompactRequestSerializer, responses={202: CompactionOperationSerializer})
    def post(self, request: Request, pk: int) -> Response:
        """Queue a manual compaction of the session's leaf; Pi's refusals come back at once as 400."""
        session = _writable_session(request, pk)
        data = CompactRequestSerializer(data=request.data)
        if not data.is_valid():
            raise ValidationError(data.errors)
        try:
            run = services.request_compaction(
                session=session,
                custom_instructions=data.validated_data.get("customInstructions"),
                requested_by=request.user,
                idempotency_key=request.headers.get("Idempotency-Key"),
            )
        except services.CompactionRefused as exc:
            return _error(str(exc), status.HTTP_400_BAD_REQUEST)
        except services.OperationInProgress as exc:
            return _error(exc.message, status.HTTP_409_CONFLICT)
        access.log_action(
            actor=request.user,
            action=ActionLog.Action.COMPACT,
            session=session,
            operation=str(run.operation_id),
        )
        return Response(CompactionOperationSerializer(run).data, status=status.HTTP_202_ACCEPTED)


class OperationView(OperationAPIView):
    @extend_schema(responses={200: CompactionOperationSerializer})
    def get(self, request: Request, operation_id: Any) -> Response:
        """Return an operation's status, its error or its result."""
        return Response(CompactionOperationSerializer(_visible_run(request, operation_id)).data)


class CancelOperationView(OperationAPIView):
    @extend_schema(request=None, responses={200: CompactionOperationSerializer})
    def post(self, request: Request, operation_id: Any) -> Response:
        """Cancel a queued or running operation; the session is left as it was."""
        run = _visible_run(request, operation_id)
        _writable_session(request, run.session_id)
        try:
            run = services.cancel_operation(run=run)
        except services.OperationFinished as exc:
            return _error(str(exc), status.HTTP_409_CONFLICT)
        return Response(CompactionOperationSerializer(run).data)
