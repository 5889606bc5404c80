"""The live-sync endpoint used by ``piweb-sync push``: store a local file's new lines verbatim."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from core.api.errors import error_response
from core.api.fields import Flag, Text
from core.api.parsers import LimitedJSONParser, NdjsonParser, parse_json_body
from live.facade import MAX_DEVICE_CHARS, writer_heartbeat_seconds
from provenance.facade import GitState
from sessions_app.facade import InvalidSessionFile, skipped_payload
from sync.services import (
    Cursor,
    NoSuchSession,
    SyncConflict,
    SyncCursorMismatch,
    pi_beat,
    sync_lines,
    sync_state,
)


class FromSerializer(serializers.Serializer[Any]):
    lines = serializers.IntegerField(min_value=0, help_text="Complete lines after the header acknowledged")
    bytes = serializers.IntegerField(min_value=0, help_text="File offset just after them")
    lastId = Text(allow_null=True, required=False, default=None)


class ToSerializer(serializers.Serializer[Any]):
    lines = serializers.IntegerField(min_value=0)
    bytes = serializers.IntegerField(min_value=0)


class WorkspaceSerializer(serializers.Serializer[Any]):
    # Generous bounds: a value piweb cannot keep is dropped, never the push it came with.
    repository = Text(required=False, allow_blank=True, default="", max_length=4000)
    branch = Text(required=False, allow_blank=True, default="", max_length=1000)
    head = Text(required=False, allow_blank=True, default="", max_length=100)


class SyncRequestSerializer(serializers.Serializer[Any]):
    header = Text(trim_whitespace=False, help_text="The file's header line, verbatim")
    lines = serializers.ListField(
        child=Text(allow_blank=True, trim_whitespace=False),
        max_length=5000,
        help_text="The complete lines after `from`, verbatim",
    )
    path = Text(
        required=False,
        allow_blank=True,
        default="",
        max_length=4096,
        help_text="The file's path on the client",
    )
    reset = Flag(
        default=False,
        help_text="The client restarted this file: skip the cursor check, match migrated lines by content",
    )
    dryRun = Flag(default=False, help_text="Store nothing: say what a push would store and its conflicts")
    device = Text(
        required=False,
        allow_blank=True,
        default="",
        max_length=MAX_DEVICE_CHARS,
        help_text="Sent by a Pi writing the session live (the Pi package): the device it runs on. The "
        'session\'s pages show "live from Pi on <device>" until its beats stop.',
    )
    workspace = WorkspaceSerializer(
        required=False,
        default=None,
        allow_null=True,
        help_text="The git work tree of the session's folder: its remote URL (credentials are stripped), "
        "branch and HEAD. Optional; the session page and the provenance API show it.",
    )

    def get_fields(self) -> dict[str, Any]:
        fields = super().get_fields()
        # "from" is a Python keyword, so these two are declared here rather than as attributes.
        fields["from"] = FromSerializer(help_text="How far the server has acknowledged the local file")
        fields["to"] = ToSerializer(help_text="Where the local file stands after these lines")
        return fields


_CURSOR = inline_serializer(
    "SyncCursor",
    {
        "lines": serializers.IntegerField(),
        "bytes": serializers.IntegerField(allow_null=True),
        "lastId": serializers.CharField(allow_null=True),
    },
)


class SyncStreamSerializer(SyncRequestSerializer):
    """The first line of a streamed push: everything but the lines, which follow it verbatim."""

    lines = None  # type: ignore[assignment]


class SyncView(APIView):
    """Store new lines of a local Pi session file; the local file's own progress is the cursor.

    The lines come in a JSON body (``lines``, at most 5,000 and ``PIWEB_MAX_BODY_BYTES``) or streamed as
    ``application/x-ndjson``: one JSON line with the other fields, then the file's lines as they are,
    up to ``PIWEB_MAX_IMPORT_BYTES`` (spooled to disk as an import is), so a big file goes in one request.
    """

    parser_classes = [LimitedJSONParser, NdjsonParser]
    accepts_large_body = True  # only the streamed form: the JSON parser keeps its own smaller cap

    @extend_schema(
        request=SyncRequestSerializer,
        responses={
            200: inline_serializer(
                "SyncResult",
                {
                    "sessionId": serializers.IntegerField(),
                    "created": serializers.BooleanField(),
                    "appended": serializers.IntegerField(),
                    "known": serializers.IntegerField(),
                    "cursor": _CURSOR,
                    "conflicts": serializers.ListField(child=serializers.CharField()),
                    "skippedLines": serializers.ListField(child=serializers.DictField()),
                    "skippedCount": serializers.IntegerField(),
                },
            )
        },
    )
    def post(self, request: Request) -> Response:
        upload = (
            request.FILES.get("file") if request.content_type.startswith("application/x-ndjson") else None
        )
        if upload is not None:
            with upload:
                control = parse_json_body(upload.readline())
                data = SyncStreamSerializer(data=control if isinstance(control, dict) else {})
                data.is_valid(raise_exception=True)
                values = dict(data.validated_data)
                values["lines"] = [
                    line.decode("utf-8", errors="replace").rstrip("\n") for line in iter(upload.readline, b"")
                ]
        else:
            body = SyncRequestSerializer(data=request.data)
            body.is_valid(raise_exception=True)
            values = body.validated_data
        start, end = values["from"], values["to"]
        try:
            result = sync_lines(
                actor=request.user,
                header_line=values["header"],
                start=Cursor(start["lines"], start["bytes"], start["lastId"]),
                end_lines=end["lines"],
                end_bytes=end["bytes"],
                lines=values["lines"],
                reset=values["reset"],
                path=values["path"],
                dry_run=values["dryRun"],
                token=request.auth,
                workspace=GitState(**values["workspace"]) if values.get("workspace") else None,
            )
        except SyncCursorMismatch as exc:
            return error_response(
                str(exc), status.HTTP_409_CONFLICT, kind="cursor", cursor=exc.cursor.as_json()
            )
        except SyncConflict as exc:
            return error_response(
                str(exc),
                status.HTTP_409_CONFLICT,
                kind="conflict",
                entryId=exc.entry_id,
                entryIds=exc.entry_ids,
            )
        except InvalidSessionFile as exc:
            return error_response(str(exc), status.HTTP_400_BAD_REQUEST)
        if values["device"] and not values["dryRun"] and result.session is not None:
            pi_beat(actor=request.user, pi_id=result.session.pi_id, device=values["device"])
        return Response(
            {
                "sessionId": result.session.pk if result.session is not None else None,
                "created": result.created,
                "appended": result.appended,
                "known": result.known,
                "cursor": result.cursor.as_json(),
                "conflicts": result.conflicts,
                **skipped_payload(result.skipped),
            }
        )

    @extend_schema(
        parameters=[OpenApiParameter("piId", str, required=True, description="The Pi session id")],
        responses={
            200: inline_serializer(
                "SyncState",
                {"sessionId": serializers.IntegerField(allow_null=True), "cursor": _CURSOR},
            )
        },
    )
    def get(self, request: Request) -> Response:
        """Return the session and the sync cursor the server holds for one of your Pi session ids."""
        pi_id = request.query_params.get("piId")
        if not pi_id:
            return error_response("the piId query parameter is required", status.HTTP_400_BAD_REQUEST)
        if "\x00" in pi_id:
            return error_response("the piId holds a NUL character", status.HTTP_400_BAD_REQUEST)
        session, cursor = sync_state(owner=request.user, pi_id=pi_id)
        return Response(
            {
                "sessionId": session.pk if session else None,
                "cursor": cursor.as_json() if cursor else None,
            }
        )


class PiBeatSerializer(serializers.Serializer[Any]):
    piId = Text(max_length=255, help_text="The Pi session id Pi is writing")
    device = Text(
        max_length=MAX_DEVICE_CHARS, help_text="The device Pi runs on, as the session pages show it"
    )
    leaving = Flag(default=False, help_text="Pi quit or stopped sending: stop showing it now")


class PiBeatView(APIView):
    """A Pi writing one of your sessions live says it is still there (or leaving).

    The session's pages show it beside the people who have it open, at the entry it wrote last, until
    ``heartbeat`` seconds pass without a beat or a push a few times over. Stores nothing.
    """

    @extend_schema(
        request=PiBeatSerializer,
        responses={
            200: inline_serializer(
                "PiBeat", {"sessionId": serializers.IntegerField(), "heartbeat": serializers.FloatField()}
            )
        },
    )
    def post(self, request: Request) -> Response:
        body = PiBeatSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        values = body.validated_data
        try:
            session = pi_beat(
                actor=request.user, pi_id=values["piId"], device=values["device"], leaving=values["leaving"]
            )
        except NoSuchSession as exc:
            return error_response(str(exc), status.HTTP_404_NOT_FOUND)
        return Response({"sessionId": session.pk, "heartbeat": writer_heartbeat_seconds()})
