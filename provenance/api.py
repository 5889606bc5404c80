"""REST adapters of provenance: the sessions behind a commit or a pull request, and a session's commits."""

from __future__ import annotations

from typing import Any

from django.urls import reverse
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from core.api.errors import api_exception_handler, error_response
from provenance import queries
from provenance.models import Commit
from sessions_app.facade import LinkReadableView

_ENTRY = inline_serializer(
    "ProvenanceEntry",
    {
        "entryId": serializers.CharField(allow_null=True),
        "url": serializers.CharField(),
        "sha": serializers.CharField(required=False),
        "subject": serializers.CharField(required=False),
        "pr": serializers.CharField(required=False),
    },
)
_SESSION = inline_serializer(
    "ProvenanceSession",
    {
        "id": serializers.IntegerField(),
        "title": serializers.CharField(),
        "url": serializers.CharField(),
        "entries": serializers.ListField(child=_ENTRY),
    },
)


class ProvenanceView(APIView):
    def get_exception_handler(self) -> Any:
        return api_exception_handler

    @extend_schema(
        parameters=[
            OpenApiParameter("commit", str, description="A commit SHA, or 7 or more of its first hex digits"),
            OpenApiParameter(
                "pr", str, description="A pull-request URL (GitHub and GitLab forms normalized)"
            ),
        ],
        responses={
            200: inline_serializer("Provenance", {"sessions": serializers.ListField(child=_SESSION)}),
            400: inline_serializer("ProvenanceError", {"error": serializers.CharField()}),
        },
    )
    def get(self, request: Request) -> Response:
        """The sessions you may read behind a commit (``?commit=``) or a pull request (``?pr=``), with the
        entries that made or named it. Sessions you may not read are left out, unmentioned."""
        commit = request.query_params.get("commit", "")
        pr = request.query_params.get("pr", "")
        if bool(commit) == bool(pr):
            return error_response("Give one of commit or pr", status.HTTP_400_BAD_REQUEST)
        try:
            found = queries.sessions_behind(request.user, commit=commit, pr=pr)
        except queries.BadQuery as exc:
            return error_response(str(exc), status.HTTP_400_BAD_REQUEST)
        return Response({"sessions": found})


def commit_body(commit: Commit, session_url: str) -> dict[str, Any]:
    return {
        "sha": commit.sha,
        "subject": commit.subject,
        "repository": commit.repository,
        "branch": commit.branch,
        "entryId": commit.entry_id,
        "url": f"{session_url}#entry={commit.entry_id}" if commit.entry_id else session_url,
        "found": commit.found,
    }


class SessionCommitsView(LinkReadableView):
    @extend_schema(
        parameters=[
            OpenApiParameter("leaf", str, description="Only the commits on the branch ending here"),
            OpenApiParameter("entry", str, description="Only the commits this entry made"),
        ],
        responses={200: inline_serializer("SessionCommits", {"commits": serializers.ListField()})},
    )
    def get(self, request: Request, pk: int) -> Response:  # type: ignore[override]
        """The commits the session's entries made and the pull requests they named, oldest first
        (``?leaf=``: on that branch only; ``?entry=``: that entry's), and the repository, branch and HEAD
        its folder was last seen at (members only)."""
        grant = self.access(pk)
        leaf = request.query_params.get("leaf") or None
        entry = request.query_params.get("entry") or None
        commits = queries.commits_of(grant, leaf=leaf, entry=entry)
        prs = queries.pull_requests_of(grant, leaf=leaf, entry=entry)
        url = reverse("sessions:detail", args=[grant.session.pk])
        workspace = queries.workspace_of(grant)
        return Response(
            {
                "commits": [commit_body(c, url) for c in commits],
                "pullRequests": [
                    {
                        "url": p.url,
                        "normalized": p.normalized,
                        "entryId": p.entry_id,
                        "entryUrl": f"{url}#entry={p.entry_id}" if p.entry_id else url,
                    }
                    for p in prs
                ],
                "workspace": {
                    "repository": workspace.repository,
                    "branch": workspace.branch,
                    "head": workspace.head,
                    "source": workspace.source,
                    "seenAt": workspace.seen_at.isoformat(),
                }
                if workspace is not None
                else None,
            }
        )
