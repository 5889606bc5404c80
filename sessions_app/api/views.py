"""REST adapters: parse input, check permission, call one service or query, shape the output."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile
from django.db.models import QuerySet
from django.http import StreamingHttpResponse
from django.utils.module_loading import import_string
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.exceptions import NotFound, PermissionDenied
from rest_framework.generics import GenericAPIView
from rest_framework.parsers import MultiPartParser
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response

from .. import queries, services
from ..models import ChatSession
from ..tree_overview import build_tree_overview
from .errors import PayloadTooLarge, api_exception_handler, error_response
from .pagination import SessionPagination
from .parsers import JsonlParser, LimitedJSONParser, NdjsonParser, max_import_bytes
from .serializers import (
    AppendSerializer,
    CloneSerializer,
    ContextQuerySerializer,
    EntriesQuerySerializer,
    EntryPageSerializer,
    EntrySerializer,
    ErrorSerializer,
    ForkResultSerializer,
    ForkSerializer,
    ImportResultSerializer,
    ImportSerializer,
    LabelSerializer,
    NavigateResultSerializer,
    NavigateSerializer,
    OperationSerializer,
    PathPageSerializer,
    PathQuerySerializer,
    SessionCreateSerializer,
    SessionFilterSerializer,
    SessionRenameSerializer,
    SessionSerializer,
    TreeQuerySerializer,
    context_payload,
)

ERRORS = {code: OpenApiResponse(ErrorSerializer) for code in (400, 403, 404)}


class SessionAPIView(GenericAPIView[ChatSession]):
    """Base view: the API's error shape, size-limited JSON bodies and the session access rules."""

    parser_classes = [LimitedJSONParser]
    serializer_class = SessionSerializer

    def get_exception_handler(self) -> Any:
        return api_exception_handler

    def get_queryset(self) -> QuerySet[ChatSession]:
        return ChatSession.objects.visible_to(self.request.user)

    def readable(self, pk: int) -> ChatSession:
        """Return a session the user may read; anything else is "not found"."""
        session = ChatSession.objects.visible_to(self.request.user).filter(pk=pk).first()
        if session is None:
            raise NotFound(f"Session not found: {pk}")
        return session

    def writable(self, pk: int) -> ChatSession:
        """Return a session the user may change: 404 if they cannot see it, 403 if they can only read it."""
        session = self.readable(pk)
        if not ChatSession.objects.editable_by(self.request.user).filter(pk=pk).exists():
            raise PermissionDenied("You may read this session but not change it.")
        return session

    def valid(self, serializer_class: type[Any], data: Any) -> dict[str, Any]:
        serializer = serializer_class(data=data)
        serializer.is_valid(raise_exception=True)
        return dict(serializer.validated_data)


class SessionListView(SessionAPIView):
    pagination_class = SessionPagination

    @extend_schema(parameters=[SessionFilterSerializer], responses={200: SessionSerializer(many=True)})
    def get(self, request: Request) -> Response:
        """List my sessions, most recently updated first."""
        filters = self.valid(SessionFilterSerializer, request.query_params)
        query = self.get_queryset().select_related("owner", "forked_by").order_by("-updated_at", "-pk")
        lookups = {
            "name": "name__icontains",
            "cwd": "cwd",
            "createdAfter": "created_at__gte",
            "createdBefore": "created_at__lt",
            "updatedAfter": "updated_at__gte",
            "updatedBefore": "updated_at__lt",
        }
        query = query.filter(**{lookups[k]: v for k, v in filters.items()})
        page = self.paginate_queryset(query)
        return self.get_paginated_response(SessionSerializer(page, many=True).data)

    @extend_schema(request=SessionCreateSerializer, responses={201: SessionSerializer, **ERRORS})
    def post(self, request: Request) -> Response:
        """Create an empty session with a new header."""
        data = self.valid(SessionCreateSerializer, request.data)
        session = services.create_session(owner=request.user, cwd=data["cwd"], name=data["name"])
        return Response(SessionSerializer(session).data, status=status.HTTP_201_CREATED)


class SessionDetailView(SessionAPIView):
    @extend_schema(responses={200: SessionSerializer, **ERRORS})
    def get(self, request: Request, pk: int) -> Response:
        return Response(SessionSerializer(self.readable(pk)).data)

    @extend_schema(request=SessionRenameSerializer, responses={200: SessionSerializer, **ERRORS})
    def patch(self, request: Request, pk: int) -> Response:
        """Rename the session (appends a ``session_info`` entry)."""
        session = self.writable(pk)
        data = self.valid(SessionRenameSerializer, request.data)
        return Response(SessionSerializer(services.rename_session(session=session, name=data["name"])).data)

    @extend_schema(responses={204: None, **ERRORS})
    def delete(self, request: Request, pk: int) -> Response:
        services.delete_session(session=self.writable(pk))
        return Response(status=status.HTTP_204_NO_CONTENT)


class EntryListView(SessionAPIView):
    @extend_schema(
        operation_id="sessions_entries_list",
        parameters=[EntriesQuerySerializer],
        responses={200: EntryPageSerializer, **ERRORS},
    )
    def get(self, request: Request, pk: int) -> Response:
        """List entries in append order, strictly after ``since`` (Pi's ``get_entries`` cursor)."""
        session = self.readable(pk)
        query = self.valid(EntriesQuerySerializer, request.query_params)
        limit = query["limit"]
        rows = queries.entries_since(session, query.get("since"), limit=limit + 1)
        return Response(
            {
                "entries": EntrySerializer(rows[:limit], many=True).data,
                "leafId": session.leaf_entry_id,
                "lastSeq": session.next_seq - 1 if session.next_seq else None,
                "hasMore": len(rows) > limit,
            }
        )


class EntryDetailView(SessionAPIView):
    @extend_schema(responses={200: EntrySerializer, **ERRORS})
    def get(self, request: Request, pk: int, entry_id: str) -> Response:
        return Response(EntrySerializer(queries.find_entry(self.readable(pk), entry_id)).data)


class TreeView(SessionAPIView):
    @extend_schema(parameters=[TreeQuerySerializer], responses={200: OpenApiResponse(), **ERRORS})
    def get(self, request: Request, pk: int) -> Response:
        """Return the tree as a flat list of nodes and folded linear runs, ready to draw."""
        session = self.readable(pk)
        query = self.valid(TreeQuerySerializer, request.query_params)
        return Response(
            build_tree_overview(session, around=query.get("around"), segment=query.get("segment"))
        )


class ContextView(SessionAPIView):
    @extend_schema(parameters=[ContextQuerySerializer], responses={200: OpenApiResponse(), **ERRORS})
    def get(self, request: Request, pk: int) -> Response:
        """Return what the model sees when continuing from the leaf (or from ``?leaf=``)."""
        session = self.readable(pk)
        query = self.valid(ContextQuerySerializer, request.query_params)
        view = queries.context_for_leaf(session, query.get("leaf"))
        window = query.get("window") or getattr(settings, "PIWEB_DEFAULT_CONTEXT_WINDOW", None)
        return Response(
            context_payload(view, window, head=query.get("head", 0), tail=query.get("tail"), llm=query["llm"])
        )


class PathView(SessionAPIView):
    @extend_schema(parameters=[PathQuerySerializer], responses={200: PathPageSerializer, **ERRORS})
    def get(self, request: Request, pk: int) -> Response:
        """Return the newest ``limit`` entries of the path root→leaf above ``beforeDepth``, root first."""
        session = self.readable(pk)
        query = self.valid(PathQuerySerializer, request.query_params)
        leaf_id = query.get("leaf") or session.leaf_entry_id
        if leaf_id is None:
            return Response({"entries": [], "leafId": None, "firstDepth": None, "hasMore": False})
        leaf = queries.find_entry(session, leaf_id)
        top = (leaf.depth or 0) if query.get("beforeDepth") is None else query["beforeDepth"] - 1
        low = max(0, top - query["limit"] + 1)
        rows = queries.path_rows(session, leaf, min_depth=low, max_depth=top) if top >= 0 else []
        first_depth = rows[0].depth if rows else None
        return Response(
            {
                "entries": EntrySerializer(rows, many=True).data,
                "leafId": leaf.entry_id,
                "firstDepth": first_depth,
                "hasMore": bool(first_depth),
            }
        )


class NavigateView(SessionAPIView):
    @extend_schema(
        request=NavigateSerializer,
        responses={200: NavigateResultSerializer, 202: OperationSerializer, 501: ErrorSerializer, **ERRORS},
    )
    def post(self, request: Request, pk: int) -> Response:
        """Move the leaf to a target; with ``summarize``, start a branch summary of the branch being left."""
        session = self.writable(pk)
        data = self.valid(NavigateSerializer, request.data)
        if data["summarize"]:
            starter = getattr(settings, "PIWEB_BRANCH_SUMMARY_STARTER", None)
            if not starter:
                return error_response(
                    "Branch summaries are not available on this server.", status.HTTP_501_NOT_IMPLEMENTED
                )
            if data["targetId"] != session.leaf_entry_id:
                queries.find_entry(session, data["targetId"])
            operation = import_string(starter)(
                session=session,
                target_id=data["targetId"],
                custom_instructions=data.get("customInstructions"),
                replace_instructions=data["replaceInstructions"],
                actor=request.user,
            )
            return Response({"operationId": str(operation)}, status=status.HTTP_202_ACCEPTED)
        outcome = services.navigate_without_summary(session=session, target_id=data["targetId"])
        body: dict[str, Any] = {"leafId": outcome.leaf_id}
        if outcome.editor_text is not None:
            body["editorText"] = outcome.editor_text
        return Response(body)


class ForkView(SessionAPIView):
    @extend_schema(request=ForkSerializer, responses={201: ForkResultSerializer, **ERRORS})
    def post(self, request: Request, pk: int) -> Response:
        """Create a new session from an entry of this one; the source is recorded as its parent."""
        session = self.readable(pk)
        data = self.valid(ForkSerializer, request.data)
        outcome = services.fork_session(
            session=session,
            entry_id=data["entryId"],
            actor=request.user,
            position=data.get("position"),
            mode=data["mode"],
        )
        body: dict[str, Any] = {"session": SessionSerializer(outcome.session).data}
        if outcome.editor_text is not None:
            body["editorText"] = outcome.editor_text
        return Response(body, status=status.HTTP_201_CREATED)


class CloneView(SessionAPIView):
    @extend_schema(request=CloneSerializer, responses={201: ForkResultSerializer, **ERRORS})
    def post(self, request: Request, pk: int) -> Response:
        """Create a new session holding the path to an entry (default: the leaf)."""
        session = self.readable(pk)
        data = self.valid(CloneSerializer, request.data)
        new = services.clone_session(session=session, actor=request.user, entry_id=data.get("entryId"))
        return Response({"session": SessionSerializer(new).data}, status=status.HTTP_201_CREATED)


class LabelView(SessionAPIView):
    @extend_schema(request=LabelSerializer, responses={201: EntrySerializer, **ERRORS})
    def post(self, request: Request, pk: int) -> Response:
        """Set or clear an entry's label (appends a ``label`` entry under the leaf)."""
        session = self.writable(pk)
        data = self.valid(LabelSerializer, request.data)
        rows = services.set_label(session=session, target_id=data["targetId"], label=data["label"])
        return Response(
            {"entry": EntrySerializer(rows[-1]).data, "leafId": session.leaf_entry_id},
            status=status.HTTP_201_CREATED,
        )


class AppendView(SessionAPIView):
    @extend_schema(
        request=AppendSerializer, responses={201: EntryPageSerializer, 409: ErrorSerializer, **ERRORS}
    )
    def post(self, request: Request, pk: int) -> Response:
        """Append Pi entries; with ``expectedLeaf``, only if the leaf has not moved (409 otherwise)."""
        session = self.writable(pk)
        data = self.valid(AppendSerializer, request.data)
        expected = data.get("expectedLeaf", ...)
        rows = services.append_entries(session=session, entries=data["entries"], expected_leaf=expected)
        return Response(
            {
                "entries": EntrySerializer(rows, many=True).data,
                "leafId": session.leaf_entry_id,
                "lastSeq": session.next_seq - 1,
            },
            status=status.HTTP_201_CREATED,
        )


class NdjsonRenderer(BaseRenderer):
    """Lets clients ask for the export by its media type; error bodies still go out as JSON."""

    media_type = "application/x-ndjson"
    format = "jsonl"

    def render(
        self, data: Any, accepted_media_type: str | None = None, renderer_context: Any = None
    ) -> bytes:
        return JSONRenderer().render(data)


class ExportView(SessionAPIView):
    renderer_classes = [JSONRenderer, NdjsonRenderer]

    @extend_schema(responses={(200, "application/x-ndjson"): OpenApiResponse(description="The session file")})
    def get(self, request: Request, pk: int) -> StreamingHttpResponse:
        """Download the session as a Pi JSONL file, byte for byte as stored."""
        session = self.readable(pk)
        response = StreamingHttpResponse(services.export_jsonl(session), content_type="application/x-ndjson")
        response["Content-Disposition"] = f'attachment; filename="{services.export_filename(session)}"'
        return response


class ImportView(SessionAPIView):
    parser_classes = [MultiPartParser, NdjsonParser, JsonlParser]

    @extend_schema(
        request={"multipart/form-data": ImportSerializer, "application/x-ndjson": bytes},
        responses={201: ImportResultSerializer, 200: ImportResultSerializer, 413: ErrorSerializer, **ERRORS},
    )
    def post(self, request: Request) -> Response:
        """Import a Pi session file; re-importing a grown file appends only its new entries."""
        limit = max_import_bytes()
        declared = request.META.get("CONTENT_LENGTH") or "0"
        # Multipart framing adds a little to the file; refuse early what cannot fit anyway.
        if declared.isdigit() and int(declared) > limit + 64 * 1024:
            raise PayloadTooLarge(f"The session file is larger than {limit} bytes.")
        upload = request.FILES.get("file")
        if upload is None:
            return error_response(
                'Send the session file as multipart field "file" or as an application/x-ndjson body.',
                status.HTTP_400_BAD_REQUEST,
            )
        if isinstance(upload, UploadedFile):
            if upload.size is not None and upload.size > limit:
                raise PayloadTooLarge(f"The session file is larger than {limit} bytes.")
            stream, filename = upload.file, upload.name or ""
        else:
            stream, filename = upload, request.query_params.get("filename", "")
        try:
            stream.seek(0)
            result = services.import_stream(owner=request.user, stream=stream, filename=filename)
        finally:
            stream.close()
        body = {
            "session": SessionSerializer(result.session).data,
            "created": result.created,
            "appended": result.appended,
            "skippedLines": [{"line": s.line_no, "reason": s.reason} for s in result.skipped],
            "migrated": result.migrated,
        }
        changed = result.created or result.appended > 0
        return Response(body, status=status.HTTP_201_CREATED if changed else status.HTTP_200_OK)
