"""``GET /api/sessions/<pk>/continue-in-pi/?entry=``: how to continue a node's branch in Pi.

The answer is the exact ``piweb-sync pull`` command (and the file it writes, for a download instead), so
the page can show it on any node, and after a run that stopped to call a tool piweb does not run.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from sessions_app.api.views import ERRORS, SessionAPIView

_PI_SESSIONS = "~/.pi/agent/sessions"


def pi_folder(cwd: str) -> str:
    """Pi's folder for a working directory (``--<cwd with / \\ : as ->--``), under its default root."""
    trimmed = cwd[1:] if cwd[:1] in ("/", "\\") else cwd
    return f"{_PI_SESSIONS}/--{trimmed.replace('/', '-').replace(chr(92), '-').replace(':', '-')}--"


def pi_file_name(timestamp: str, pi_id: str) -> str:
    return f"{timestamp.replace(':', '-').replace('.', '-')}_{pi_id}.jsonl"


class ContinueInPiView(SessionAPIView):
    @extend_schema(
        parameters=[
            OpenApiParameter("entry", str, description="The node to continue from (default: the leaf)")
        ],
        responses={
            200: inline_serializer(
                "ContinueInPi",
                {
                    "sessionId": serializers.IntegerField(),
                    "entryId": serializers.CharField(allow_null=True),
                    "command": serializers.CharField(help_text="Writes the file into Pi's folder"),
                    "resume": serializers.CharField(help_text="Then continue it in Pi"),
                    "download": serializers.CharField(help_text="The same file, to save by hand"),
                    "fileName": serializers.CharField(),
                    "folder": serializers.CharField(help_text="Where Pi looks for it by default"),
                    "setup": serializers.CharField(help_text="Once per machine"),
                },
            ),
            **ERRORS,
        },
    )
    def get(self, request: Request, pk: int) -> Response:
        """The ``piweb-sync pull`` command that brings this node's branch into Pi, resuming at the node."""
        grant = self.access(pk)
        session = grant.session
        entry = request.query_params.get("entry") or None
        if entry is not None:
            grant.entry(entry)  # unknown, or outside what a link shows: 404 with the API's error shape
        at_leaf = entry is None or entry == session.leaf_entry_id
        command = f"piweb-sync pull {session.pk}" + ("" if at_leaf else f" --at {entry}")
        download = f"/api/sessions/{session.pk}/export/" + ("" if at_leaf else f"?leaf={entry}")
        name = pi_file_name(session.pi_timestamp, session.pi_id)
        folder = pi_folder(session.cwd)
        origin = request.build_absolute_uri("/").rstrip("/")
        body: dict[str, Any] = {
            "sessionId": session.pk,
            "entryId": entry,
            "command": command,
            "resume": f"pi --session {folder}/{name}",
            "download": download,
            "fileName": name,
            "folder": folder,
            "setup": f"pipx install ./clients/piweb-sync && piweb-sync login --server {origin}",
        }
        return Response(body)
