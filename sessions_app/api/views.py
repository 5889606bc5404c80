"""REST adapters: parse input, check permission, call one service or query, shape the output."""

from __future__ import annotations

import hashlib
from typing import IO, Any, cast

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile
from django.db.models import QuerySet
from django.http import HttpResponse, StreamingHttpResponse
from django.utils.http import content_disposition_header
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.exceptions import ValidationError
from rest_framework.generics import GenericAPIView
from rest_framework.parsers import MultiPartParser
from rest_framework.permissions import AllowAny
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.settings import api_settings

from core.api.errors import PayloadTooLarge, error_response
from core.api.fields import parse
from core.api.pagination import SessionPagination
from core.api.parsers import JsonlParser, LimitedJSONParser, NdjsonParser, max_import_bytes
from documents import rendering
from pitree.tokens import set_aside_usage
from providers.facade import context_window_for
from sessions_app import (
    access,
    branch_files,
    conditional,
    context_reads,
    link_scope,
    list_filters,
    queries,
    services,
    summary_facts,
)
from sessions_app.api.filter_params import FILTER_PARAMETERS
from sessions_app.api.serializers import (
    AppendSerializer,
    CloneSerializer,
    ContextQuerySerializer,
    EntriesQuerySerializer,
    EntryPageSerializer,
    EntrySerializer,
    ErrorSerializer,
    FilesQuerySerializer,
    ForkResultSerializer,
    ForkSerializer,
    ImportResultSerializer,
    ImportSerializer,
    LabelSerializer,
    PathPageSerializer,
    PathQuerySerializer,
    SessionCreateSerializer,
    SessionFilterSerializer,
    SessionListItemSerializer,
    SessionRenameSerializer,
    SessionSerializer,
    TreeQuerySerializer,
    context_page_payload,
    context_payload,
    session_body,
    set_aside_json,
    skipped_payload,
)
from sessions_app.attribution import author_of
from sessions_app.models import ChatSession, first_prompt
from sessions_app.overview_cache import json_bytes, overview_json
from sessions_app.state_cache import cached, state_key

ERRORS = {code: OpenApiResponse(ErrorSerializer) for code in (400, 403, 404)}


class SessionAPIView(GenericAPIView[ChatSession]):
    """Base view: size-limited JSON bodies and the session access rules (errors: ``api/errors.py``)."""

    parser_classes = [LimitedJSONParser]
    serializer_class = SessionSerializer

    def get_queryset(self) -> QuerySet[ChatSession]:
        return ChatSession.objects.visible_to(self.request.user)

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        # DRF reads "?format=" as no format at all; the schema lists the formats, so a blank one is refused.
        if request.query_params.get(api_settings.URL_FORMAT_OVERRIDE or "format") == "":
            raise ValidationError({"format": ["This field may not be blank."]})
        super().initial(request, *args, **kwargs)

    def access(self, pk: int) -> access.Access:
        """Return the caller's read access (membership or share link); anything else is "not found"."""
        return access.require_read(self.request, pk)

    def readable(self, pk: int) -> ChatSession:
        """Return a session the caller may read; anything else is "not found"."""
        return self.access(pk).session

    def valid(self, serializer_class: type[Any], data: Any) -> dict[str, Any]:
        return parse(serializer_class, data)


class SessionListView(SessionAPIView):
    pagination_class = SessionPagination

    @extend_schema(
        parameters=[SessionFilterSerializer, *FILTER_PARAMETERS],
        responses={200: SessionListItemSerializer(many=True)},
    )
    def get(self, request: Request) -> Response:
        """List my sessions, most recently updated first."""
        filters = self.valid(SessionFilterSerializer, request.query_params)
        query = (
            self.get_queryset()
            .select_related("owner", "forked_by")
            .annotate(first_prompt=first_prompt())
            .order_by("-updated_at", "-pk")
        )
        lookups = {
            "name": "name__icontains",
            "cwd": "cwd",
            "createdAfter": "created_at__gte",
            "createdBefore": "created_at__lt",
            "updatedAfter": "updated_at__gte",
            "updatedBefore": "updated_at__lt",
        }
        query = query.filter(**{lookups[k]: v for k, v in filters.items()})
        try:
            query = list_filters.apply_filters(query, request.query_params, request.user)
        except list_filters.FilterError as exc:
            raise ValidationError({"filters": [str(exc)]}) from exc
        page = self.paginate_queryset(query)
        return self.get_paginated_response(SessionListItemSerializer(page, many=True).data)

    @extend_schema(request=SessionCreateSerializer, responses={201: SessionSerializer, **ERRORS})
    def post(self, request: Request) -> Response:
        """Create an empty session with a new header."""
        data = self.valid(SessionCreateSerializer, request.data)
        session = services.create_session(actor=request.user, cwd=data["cwd"], name=data["name"])
        return Response(SessionSerializer(session).data, status=status.HTTP_201_CREATED)


class LinkReadableView(SessionAPIView):
    """GET is open to share-link holders (``X-Share-Token`` or ``?link=``); other methods need a login."""

    def get_permissions(self) -> list[Any]:
        if self.request.method in ("GET", "HEAD", "OPTIONS"):
            return [AllowAny()]
        return list(super().get_permissions())


class SessionDetailView(LinkReadableView):
    @extend_schema(responses={200: SessionSerializer, **ERRORS})
    def get(self, request: Request, pk: int) -> Response:
        grant = self.access(pk)
        # The row's own fields (its update time, the owner's and forker's names) change without an append.
        session = grant.session
        etag = conditional.etag_for(
            "detail", request, grant, session.updated_at.timestamp(), session.owner_id, session.forked_by_id
        )
        unchanged = conditional.not_modified(request, etag)
        if unchanged is not None:
            return unchanged  # type: ignore[return-value]  # an HttpResponse, as DRF allows
        # A frozen or path link sees the name, counters, leaf and last activity of its scope only.
        body = session_body(link_scope.session_as_seen(grant))
        body["canEdit"] = grant.can_write
        body["viaLink"] = grant.via_link
        return conditional.tagged(Response(body), etag)

    @extend_schema(request=SessionRenameSerializer, responses={200: SessionSerializer, **ERRORS})
    def patch(self, request: Request, pk: int) -> Response:
        """Rename the session (appends a ``session_info`` entry)."""
        grant = self.access(pk)
        data = self.valid(SessionRenameSerializer, request.data)
        session = services.rename_session(
            session=grant.session, name=data["name"], actor=request.user, grant=grant
        )
        return Response(SessionSerializer(session).data)

    @extend_schema(responses={204: None, **ERRORS})
    def delete(self, request: Request, pk: int) -> Response:
        grant = access.require_read(request, pk, links=False)
        services.delete_session(session=grant.session, actor=request.user, grant=grant)
        return Response(status=status.HTTP_204_NO_CONTENT)


class EntryListView(LinkReadableView):
    @extend_schema(
        operation_id="sessions_entries_list",
        parameters=[EntriesQuerySerializer],
        responses={200: EntryPageSerializer, **ERRORS},
    )
    def get(self, request: Request, pk: int) -> Response:
        """List entries in append order, strictly after ``since`` (Pi's ``get_entries`` cursor), or the
        entries named by ``id`` (what a page needs for the rows it shows, in one request)."""
        grant = self.access(pk)
        session = grant.session
        query = self.valid(EntriesQuerySerializer, request.query_params)
        limit = query["limit"]
        if "id" in query:
            rows = queries.entries_by_id(session, query["id"])
            if grant.restricted:
                rows = link_scope.visible_rows(grant, rows)
            return Response(
                {
                    "entries": EntrySerializer(rows, many=True).data,  # type: ignore[arg-type]  # many=True takes a list
                    "leafId": grant.leaf_id(),
                    "lastSeq": link_scope.visible_last_seq(grant) if grant.restricted else grant.last_seq(),
                    "hasMore": False,
                }
            )
        if grant.restricted:
            rows = link_scope.scoped_entries_since(grant, query.get("since"), limit=limit + 1)
        else:
            rows = queries.entries_since(session, query.get("since"), limit=limit + 1)
        return Response(
            {
                "entries": EntrySerializer(rows[:limit], many=True).data,  # type: ignore[arg-type]  # many=True takes a list
                "leafId": grant.leaf_id(),
                "lastSeq": link_scope.visible_last_seq(grant) if grant.restricted else grant.last_seq(),
                "hasMore": len(rows) > limit,
            }
        )


class EntryDetailView(LinkReadableView):
    @extend_schema(responses={200: EntrySerializer, **ERRORS})
    def get(self, request: Request, pk: int, entry_id: str) -> Response:
        return Response(EntrySerializer(self.access(pk).entry(entry_id)).data)


class TreeView(LinkReadableView):
    @extend_schema(parameters=[TreeQuerySerializer], responses={200: OpenApiResponse(), **ERRORS})
    def get(self, request: Request, pk: int) -> Response:
        """Return the tree as a flat list of nodes and folded linear runs, ready to draw."""
        grant = self.access(pk)
        session = grant.session
        query = self.valid(TreeQuerySerializer, request.query_params)
        etag = conditional.etag_for("tree", request, grant)
        unchanged = conditional.not_modified(request, etag)
        if unchanged is not None:
            return unchanged  # type: ignore[return-value]  # an HttpResponse, as DRF allows
        if grant.restricted:
            return conditional.tagged(Response(link_scope.scoped_tree(grant)), etag)
        body = overview_json(session, around=query.get("around"), segment=query.get("segment"))
        # Already JSON, written by the overview cache: a plain response skips a parse and a dump.
        return conditional.tagged(HttpResponse(body, content_type="application/json"), etag)  # type: ignore[return-value]


class ContextView(LinkReadableView):
    @extend_schema(parameters=[ContextQuerySerializer], responses={200: OpenApiResponse(), **ERRORS})
    def get(self, request: Request, pk: int) -> Response:
        """Return what the model sees when continuing from the leaf (or from ``?leaf=``)."""
        grant = self.access(pk)
        query = self.valid(ContextQuerySerializer, request.query_params)
        leaf_id = query.get("leaf") or grant.leaf_id()
        if leaf_id is None:
            payload = _context_payload(grant.session, None, query)
        else:
            # What the model sees from an entry is its path's, fixed once written: built once per session
            # state (state_cache) and query, for every reader. Only the window may change (the admin's
            # provider settings), so it is added to each answer.
            parts = [query.get(k) for k in ("head", "tail", "before", "beforeDepth", "llm", "render")]
            near = hashlib.sha256(leaf_id.encode("utf-8", "surrogatepass")).hexdigest()
            key = state_key(f"context:{CONTEXT_VERSION}", grant.session, near, *parts)
            if grant.restricted:
                link_scope.require_visible(grant, leaf_id)

            def build() -> dict[str, Any]:
                # A cached answer exists only for an entry that exists: the whole tree's readers skip this.
                link_scope.require_visible(grant, leaf_id)
                return _context_payload(grant.session, leaf_id, query)

            payload = cached(key, build, CONTEXT_TTL)
        window = (
            query.get("window")
            or context_window_for(payload["model"])
            or settings.PIWEB_DEFAULT_CONTEXT_WINDOW
        )
        # The window comes from the providers' settings, not the session: it is part of the tag.
        etag = conditional.etag_for("context", request, grant, window)
        unchanged = conditional.not_modified(request, etag)
        if unchanged is not None:
            return unchanged  # type: ignore[return-value]  # an HttpResponse, as DRF allows
        used = payload["breakdown"]["total"]
        payload["contextWindow"] = (
            {"window": window, "used": used, "fraction": used / window} if window else None
        )
        return conditional.tagged(Response(payload), etag)


CONTEXT_VERSION = 1
CONTEXT_TTL = 600  # seconds


def _context_payload(session: ChatSession, leaf_id: str | None, query: dict[str, Any]) -> dict[str, Any]:
    """Return the context payload at ``leaf_id`` without its window (``contextWindow`` is None)."""
    page = None
    if leaf_id is not None and query.get("tail") is not None and query.get("before") is None:
        # A page with the totals from the running sums; None where they do not cover the path.
        page = context_reads.context_page(
            session,
            leaf_id,
            head=query.get("head", 0),
            tail=query["tail"],
            before_depth=query.get("beforeDepth"),
        )
    if page is not None:
        set_aside = None
        if not page.totals.set_aside_known:
            # A rare shape (the newest usage omitted or rewritten): the full projection tells.
            full = queries.context_for_leaf(session, leaf_id, use_session_leaf=False)
            set_aside = set_aside_json(set_aside_usage(full.projection, full.path))
        payload = context_page_payload(page, None, llm=query["llm"], set_aside=set_aside)
    else:
        view = queries.context_for_leaf(session, leaf_id, use_session_leaf=False)
        payload = context_payload(
            view,
            None,
            head=query.get("head", 0),
            tail=query.get("tail"),
            before=query.get("before"),
            llm=query["llm"],
        )
    summaries = [
        item
        for item in payload["messages"]
        if isinstance(item["message"], dict)
        and item["message"].get("role") in ("compactionSummary", "branchSummary")
    ]
    if summaries:
        facts = summary_facts.replaced_by_summaries(session, [i["entryId"] for i in summaries])
        for item in summaries:
            replaced = facts.get(item["entryId"])
            item["replaced"] = replaced
            # The projected summary message carries no details; the panel still marks offline ones.
            if replaced is not None and replaced.pop("offline", False):
                item["details"] = {"offline": True}
    if query["render"]:
        calls: dict[str, Any] = {}
        for item in payload["messages"][-query["render"] :]:
            item["rendered"] = rendering.render_message(item["message"], calls)
    return payload


class PathView(LinkReadableView):
    @extend_schema(parameters=[PathQuerySerializer], responses={200: PathPageSerializer, **ERRORS})
    def get(self, request: Request, pk: int) -> Response:
        """Return the newest ``limit`` entries of the path root→leaf above ``beforeDepth``, root first."""
        grant = self.access(pk)
        session = grant.session
        query = self.valid(PathQuerySerializer, request.query_params)
        leaf_id = query.get("leaf") or grant.leaf_id()
        if leaf_id is None:
            return Response({"entries": [], "leafId": None, "firstDepth": None, "hasMore": False})
        etag = conditional.etag_for("path", request, grant)
        unchanged = conditional.not_modified(request, etag)
        if unchanged is not None:
            # Only a 200 carries a tag: the same viewer saw this leaf in this very state.
            return unchanged  # type: ignore[return-value]  # an HttpResponse, as DRF allows
        if grant.restricted:
            return conditional.tagged(Response(_path_page(grant, leaf_id, query)), etag)
        # A page of a path is fixed once written, like the context: built once per session state and query.
        near = hashlib.sha256(leaf_id.encode("utf-8", "surrogatepass")).hexdigest()
        parts = [query.get("beforeDepth"), query["limit"], int(bool(query["render"]))]
        key = state_key(f"path:{PATH_VERSION}", session, near, *parts)
        body = cached(key, lambda: json_bytes(_path_page(grant, leaf_id, query)), PATH_TTL)
        return conditional.tagged(HttpResponse(body, content_type="application/json"), etag)  # type: ignore[return-value]


PATH_VERSION = 1
PATH_TTL = 600  # seconds


def _path_page(grant: access.Access, leaf_id: str, query: dict[str, Any]) -> dict[str, Any]:
    """Return the newest ``limit`` entries of the path to ``leaf_id`` above ``beforeDepth``, root first."""
    leaf = grant.entry(leaf_id)
    top = (leaf.depth or 0) if query.get("beforeDepth") is None else query["beforeDepth"] - 1
    low = max(0, top - query["limit"] + 1)
    rows = queries.path_rows(grant.session, leaf, min_depth=low, max_depth=top) if top >= 0 else []
    first_depth = rows[0].depth if rows else None
    entries: Any = EntrySerializer(rows, many=True).data  # type: ignore[arg-type]  # many=True takes a list
    if query["render"]:
        rendering.render_records(entries)
    return {
        "entries": entries,
        "leafId": leaf.entry_id,
        "firstDepth": first_depth,
        "hasMore": bool(first_depth),
    }


class FilesView(LinkReadableView):
    @extend_schema(parameters=[FilesQuerySerializer], responses={200: OpenApiResponse(), **ERRORS})
    def get(self, request: Request, pk: int) -> Response:
        """Return the files the branch root → leaf (or ``?leaf=``) read and changed, the most recently
        touched first; with ``?path=``, that file's changes as diff hunks, newest first, and its content
        at the leaf when the branch shows it (``null``: not known); with ``?against=``, the files the two
        branches changed after they parted: only on the leaf's, only on the other's, or on both, with
        each side's diffs."""
        grant = self.access(pk)
        query = self.valid(FilesQuerySerializer, request.query_params)
        leaf_id = query.get("leaf") or grant.leaf_id()
        # The entry check is the path view's: a path link sees only its path, a frozen link what existed
        # then; the branch above a visible entry is visible too (parents are always written first).
        leaf = grant.entry(leaf_id) if leaf_id is not None else None
        if "against" in query:
            # Two branches compared by their work: the other node passes the same check as the leaf.
            other = grant.entry(query["against"])
            if leaf is None:
                return error_response("This session has no entries.", status.HTTP_404_NOT_FOUND)
            return Response(branch_files.files_compared(grant.session, leaf, other, limit=query["limit"]))
        if "path" not in query:
            return Response(branch_files.files_at(grant.session, leaf, limit=query["limit"]))
        detail = branch_files.file_detail(grant.session, leaf, query["path"]) if leaf is not None else None
        if detail is None:
            return error_response("This branch did not touch that file.", status.HTTP_404_NOT_FOUND)
        return Response(detail)


class ForkView(SessionAPIView):
    @extend_schema(request=ForkSerializer, responses={201: ForkResultSerializer, **ERRORS})
    def post(self, request: Request, pk: int) -> Response:
        """Create a new session from an entry of this one; the source is recorded as its parent."""
        grant = self.access(pk)
        data = self.valid(ForkSerializer, request.data)
        outcome = services.fork_session(
            session=grant.session,
            entry_id=data["entryId"],
            actor=request.user,
            position=data.get("position"),
            mode=data["mode"],
            grant=grant,
        )
        body: dict[str, Any] = {"session": SessionSerializer(outcome.session).data}
        if outcome.editor_text is not None:
            body["editorText"] = outcome.editor_text
        return Response(body, status=status.HTTP_201_CREATED)


class CloneView(SessionAPIView):
    @extend_schema(request=CloneSerializer, responses={201: ForkResultSerializer, **ERRORS})
    def post(self, request: Request, pk: int) -> Response:
        """Create a new session holding the path to an entry (default: the leaf)."""
        grant = self.access(pk)
        data = self.valid(CloneSerializer, request.data)
        new = services.clone_session(
            session=grant.session, actor=request.user, entry_id=data.get("entryId") or None, grant=grant
        )
        return Response({"session": SessionSerializer(new).data}, status=status.HTTP_201_CREATED)


class LabelView(SessionAPIView):
    @extend_schema(request=LabelSerializer, responses={201: EntrySerializer, **ERRORS})
    def post(self, request: Request, pk: int) -> Response:
        """Set or clear an entry's label (appends a ``label`` entry under the leaf)."""
        grant = self.access(pk)
        session = grant.session
        data = self.valid(LabelSerializer, request.data)
        rows = services.set_label(
            session=session, target_id=data["targetId"], label=data["label"], actor=request.user, grant=grant
        )
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
        grant = self.access(pk)
        session = grant.session
        data = self.valid(AppendSerializer, request.data)
        expected = data.get("expectedLeaf", ...)
        rows = services.append_entries(
            session=session,
            entries=data["entries"],
            expected_leaf=expected,
            actor=request.user,
            grant=grant,
            author=author_of(request.user, token=request.auth),
        )
        return Response(
            {
                "entries": EntrySerializer(rows, many=True).data,  # type: ignore[arg-type]  # many=True takes a list
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


def _file(description: str) -> OpenApiResponse:
    return OpenApiResponse(OpenApiTypes.STR, description=description)


class ExportView(LinkReadableView):
    renderer_classes = [JSONRenderer, NdjsonRenderer]

    def perform_content_negotiation(self, request: Request, force: bool = False) -> tuple[Any, str]:
        # "?format=" names the file format here (jsonl, markdown, html), read below; the body of an
        # error is always JSON.
        if request.query_params.get("format") not in (None, "jsonl"):
            return JSONRenderer(), JSONRenderer.media_type
        return super().perform_content_negotiation(request, force)

    @extend_schema(
        parameters=[
            OpenApiParameter(
                "format",
                str,
                enum=["jsonl", *services.DOCUMENT_FORMATS],
                description="jsonl (default): the Pi session file; markdown or html: a document to read",
            ),
            OpenApiParameter(
                "scope",
                str,
                enum=list(services.DOCUMENT_SCOPES),
                description="For markdown and html: the branch root → `at` (default) or the whole tree",
            ),
            OpenApiParameter(
                "at", str, description="For markdown and html: the branch ends here (default: the leaf)"
            ),
            OpenApiParameter(
                "leaf", str, description="Resume at this entry in Pi (default: the session's leaf)"
            ),
        ],
        responses={
            (200, "application/x-ndjson"): OpenApiResponse(OpenApiTypes.STR, description="The session file"),
            (200, "text/markdown"): OpenApiResponse(
                OpenApiTypes.STR, description="The branch or tree as Markdown"
            ),
            (200, "text/html"): OpenApiResponse(
                OpenApiTypes.STR, description="The branch or tree as one standalone page"
            ),
            **ERRORS,
        },
    )
    def get(self, request: Request, pk: int) -> StreamingHttpResponse | Response:
        """Download the session: as a Pi JSONL file (every stored line byte for byte, ending at the leaf),
        or its branch or whole tree as Markdown or a standalone HTML page."""
        grant = self.access(pk)
        params = request.query_params
        for name in ("leaf", "at", "scope", "format"):
            if "\x00" in params.get(name, ""):
                return error_response(f"the {name} holds a NUL character", status.HTTP_400_BAD_REQUEST)
        kind = params.get("format") or "jsonl"
        actor = access.acting(request.user, grant)
        if kind != "jsonl":
            if "leaf" in params:
                return error_response(
                    "leaf applies to the Pi file (format=jsonl); a document's branch ends at ?at=",
                    status.HTTP_400_BAD_REQUEST,
                )
            document = services.export_document(
                grant=grant,
                actor=actor,
                format=kind,
                scope=params.get("scope") or "branch",
                at=params.get("at") or None,
            )
            response = StreamingHttpResponse(document.body, content_type=document.content_type)
            response["Content-Disposition"] = content_disposition_header(
                as_attachment=True, filename=document.filename
            )
            response["Content-Security-Policy"] = DOCUMENT_CSP
            response["X-Content-Type-Options"] = "nosniff"
            return response
        if "scope" in params or "at" in params:
            return error_response(
                "scope and at apply to format=markdown or format=html; the Pi file ends at ?leaf=",
                status.HTTP_400_BAD_REQUEST,
            )
        leaf = params.get("leaf") or None
        # A client that holds the file as it is now (sync, a runner, a script) gets 304 and no copy.
        etag = conditional.etag_for("export", request, grant)
        unchanged = conditional.not_modified(request, etag)
        if unchanged is not None:
            return unchanged  # type: ignore[return-value]  # an HttpResponse, as DRF allows
        lines = services.export_session(grant=grant, actor=actor, leaf=leaf)
        response = StreamingHttpResponse(lines, content_type="application/x-ndjson")
        response["Content-Disposition"] = content_disposition_header(
            as_attachment=True, filename=services.export_filename(grant.session)
        )
        return conditional.tagged(response, etag)


# Opened straight from the server (not saved first), the page is held to the same rules it carries.
DOCUMENT_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; sandbox"


class ImportView(SessionAPIView):
    parser_classes = [MultiPartParser, NdjsonParser, JsonlParser]
    # The one endpoint allowed a body past PIWEB_MAX_BODY_BYTES (see piweb.limits); it spools to disk.
    accepts_large_body = True

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
            stream, filename = cast("IO[bytes]", upload.file), upload.name or ""
        else:
            stream, filename = upload, request.query_params.get("filename", "")
        try:
            stream.seek(0)
            result = services.import_stream(actor=request.user, stream=stream, filename=filename)
        finally:
            stream.close()
        body = {
            "session": SessionListItemSerializer(result.session).data,
            "created": result.created,
            "appended": result.appended,
            "serverOnly": result.server_only,
            **skipped_payload(result.skipped),
            "migrated": result.migrated,
        }
        changed = result.created or result.appended > 0
        return Response(body, status=status.HTTP_201_CREATED if changed else status.HTTP_200_OK)
