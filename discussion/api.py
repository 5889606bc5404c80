"""REST adapters of discussions: parse, call one use case or query, shape the answer."""

from __future__ import annotations

from typing import Any, cast

from django.http import HttpResponse
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from core.api.errors import error_response
from core.api.fields import Flag, Text, parse
from core.api.parsers import LimitedJSONParser
from discussion import queries, rules, services
from discussion.domain.text import InvalidComment
from discussion.models import EmailChoice, Notification, NotificationPreference
from pitree.storable import MAX_ID_CHARS
from sessions_app.facade import ErrorSerializer, LinkReadableView, SessionAPIView, access

ERRORS = {code: OpenApiResponse(ErrorSerializer) for code in (400, 403, 404)}
MAX_COUNT_IDS = 2000  # entry ids per counts request: more than any page draws at once


def _refusal(exc: Exception) -> Response:
    if isinstance(exc, InvalidComment):
        return error_response(exc.message, status.HTTP_400_BAD_REQUEST, field=exc.field)
    raise exc


class CommentSerializer(serializers.Serializer[Any]):
    id = serializers.IntegerField()
    entryId = serializers.CharField()
    threadId = serializers.IntegerField()
    parentId = serializers.IntegerField(allow_null=True)
    author = serializers.CharField()
    body = serializers.CharField(help_text="Markdown; empty once deleted")
    html = serializers.CharField(help_text="The body rendered and sanitized as messages are")
    mentions = serializers.ListField(child=serializers.CharField())
    createdAt = serializers.DateTimeField()
    editedAt = serializers.DateTimeField(allow_null=True)
    deleted = serializers.BooleanField()
    mine = serializers.BooleanField(help_text="The caller wrote it and may edit or delete it")
    resolved = serializers.BooleanField(required=False, help_text="Threads (root comments) only")
    resolvedBy = serializers.CharField(required=False, allow_null=True)
    resolvedAt = serializers.DateTimeField(required=False, allow_null=True)


class ThreadSerializer(CommentSerializer):
    replies = CommentSerializer(many=True)


class CommentListQuerySerializer(serializers.Serializer[Any]):
    entryId = Text(required=False, max_length=MAX_ID_CHARS, help_text="The threads on this entry")
    entries = Text(
        required=False,
        max_length=MAX_COUNT_IDS * (MAX_ID_CHARS + 1),
        help_text=f"Comma-separated entry ids (at most {MAX_COUNT_IDS}): counts for these entries only",
    )
    open = Flag(required=False, default=False, help_text="Counts of entries with an open thread only")


class CommentCountSerializer(serializers.Serializer[Any]):
    comments = serializers.IntegerField()
    open = serializers.IntegerField(help_text="Threads not resolved")


class CommentListSerializer(serializers.Serializer[Any]):
    counts = serializers.DictField(child=CommentCountSerializer(), required=False, help_text="By entry id")
    threads = ThreadSerializer(many=True, required=False, help_text="With entryId: that entry's threads")
    canComment = serializers.BooleanField()


class CommentCreateSerializer(serializers.Serializer[Any]):
    entryId = Text(max_length=MAX_ID_CHARS)
    body = Text(allow_blank=True, trim_whitespace=False, help_text="Markdown; @username mentions a reader")
    parentId = serializers.IntegerField(required=False, allow_null=True, help_text="Reply in this thread")


class CommentPatchSerializer(serializers.Serializer[Any]):
    body = Text(required=False, allow_blank=True, trim_whitespace=False, help_text="New text (author only)")
    resolved = Flag(required=False, help_text="Resolve (true) or reopen (false) the thread; any reader")


class CommentsView(LinkReadableView):
    @extend_schema(parameters=[CommentListQuerySerializer], responses={200: CommentListSerializer, **ERRORS})
    def get(self, request: Request, pk: int) -> Response:
        """Count comments per entry (all commented entries, the ones named, or those with open threads),
        or with ``entryId`` list that entry's threads. A share link sees only the comments in its scope."""
        grant = self.access(pk)
        params = self.valid(CommentListQuerySerializer, request.query_params)
        viewer = request.user.pk if request.user.is_authenticated else None
        body: dict[str, Any] = {"canComment": _can_comment(request, grant)}
        if "entryId" in params:
            grant.entry(params["entryId"])
            body["threads"] = queries.threads_of(grant, params["entryId"], viewer)
            return Response(body)
        ids = None
        if "entries" in params:
            ids = [i for i in params["entries"].split(",") if i]
            if len(ids) > MAX_COUNT_IDS:
                return error_response(
                    f"entries names {len(ids)} ids; at most {MAX_COUNT_IDS} per request.",
                    status.HTTP_400_BAD_REQUEST,
                )
        body["counts"] = queries.comment_counts(grant, ids, open_only=params["open"])
        return Response(body)

    @extend_schema(request=CommentCreateSerializer, responses={201: CommentSerializer, **ERRORS})
    def post(self, request: Request, pk: int) -> Response:
        """Comment on an entry, or reply in a thread (``parentId``). Mentions must name readers."""
        grant = self.access(pk)
        data = self.valid(CommentCreateSerializer, request.data)
        try:
            comment = services.post_comment(
                actor=request.user,
                session=grant.session,
                entry_id=data["entryId"],
                body=data["body"],
                parent_id=data.get("parentId"),
                grant=grant,
            )
        except InvalidComment as exc:
            return _refusal(exc)
        return Response(queries.serialize_comment(comment, request.user.pk), status=status.HTTP_201_CREATED)


def _can_comment(request: Request, grant: access.Access) -> bool:
    try:
        rules.require_commenter(request.user, grant.session, grant)
    except access.AccessDenied:
        return False
    return True


class PersonalAPIView(APIView):
    """A signed-in caller's own things (a comment, the inbox): no session in the path, no object lookup."""

    parser_classes = [LimitedJSONParser]


class CommentDetailView(PersonalAPIView):
    @extend_schema(request=CommentPatchSerializer, responses={200: CommentSerializer, **ERRORS})
    def patch(self, request: Request, comment_id: int) -> Response:
        """Edit one's own comment (``body``), or resolve or reopen its thread (``resolved``; asking for the
        state it is already in changes nothing)."""
        data = parse(CommentPatchSerializer, request.data)
        if ("body" in data) == ("resolved" in data):
            return error_response("Send either body (to edit) or resolved (to resolve or reopen).", 400)
        try:
            if "body" in data:
                comment = services.edit_comment(actor=request.user, comment_id=comment_id, body=data["body"])
            elif data["resolved"]:
                comment = services.resolve_thread(actor=request.user, comment_id=comment_id)
            else:
                comment = services.reopen_thread(actor=request.user, comment_id=comment_id)
        except InvalidComment as exc:
            return _refusal(exc)
        return Response(queries.serialize_comment(comment, request.user.pk))

    @extend_schema(request=None, responses={204: None, **ERRORS})
    def delete(self, request: Request, comment_id: int) -> Response:
        """Delete one's own comment; its place in the thread stays as "deleted"."""
        services.delete_comment(actor=request.user, comment_id=comment_id)
        return Response(status=status.HTTP_204_NO_CONTENT)


class CommentExportSerializer(serializers.Serializer[Any]):
    session = serializers.IntegerField()
    threads = ThreadSerializer(many=True, help_text="Every visible thread, by entry id then time")


class CommentExportView(LinkReadableView):
    @extend_schema(responses={200: CommentExportSerializer, **ERRORS})
    def get(self, request: Request, pk: int) -> HttpResponse:
        """Download every comment thread the caller may see, as JSON (the session file never holds them)."""
        grant = self.access(pk)
        threads = services.export_comments(actor=access.acting(request.user, grant), grant=grant)
        response = Response({"session": pk, "threads": threads})
        response["Content-Disposition"] = f'attachment; filename="session-{pk}-comments.json"'
        return response


class PeopleQuerySerializer(serializers.Serializer[Any]):
    q = Text(required=False, allow_blank=True, default="", max_length=150, help_text="Username prefix")


class PersonSerializer(serializers.Serializer[Any]):
    username = serializers.CharField()
    name = serializers.CharField()


class MentionPeopleView(SessionAPIView):
    pagination_class = None  # at most 20 names, by prefix

    @extend_schema(parameters=[PeopleQuerySerializer], responses={200: PersonSerializer(many=True), **ERRORS})
    def get(self, request: Request, pk: int) -> Response:
        """List the people who can read the session (and so can be mentioned), by username prefix."""
        grant = self.access(pk)
        rules.require_reader(request.user, grant.session, grant)
        prefix = self.valid(PeopleQuerySerializer, request.query_params)["q"].lstrip("@")
        people = rules.readers(grant.session).filter(username__istartswith=prefix).order_by("username")[:20]
        return Response([{"username": u.get_username(), "name": u.get_full_name()} for u in people])


class InboxItemSerializer(serializers.Serializer[Any]):
    id = serializers.IntegerField()
    kind = serializers.ChoiceField(choices=Notification.Kind.choices)
    sessionId = serializers.IntegerField()
    sessionName = serializers.CharField()
    entryId = serializers.CharField(allow_null=True)
    commentId = serializers.IntegerField(allow_null=True, help_text="None for a line that is not a comment")
    threadId = serializers.IntegerField(allow_null=True)
    author = serializers.CharField()
    snippet = serializers.CharField()
    createdAt = serializers.DateTimeField()
    read = serializers.BooleanField()


class InboxSerializer(serializers.Serializer[Any]):
    unread = serializers.IntegerField()
    email = serializers.ChoiceField(choices=EmailChoice.choices, help_text="What reaches me by email")
    items = InboxItemSerializer(many=True, help_text="The newest 50, unread or not")


class InboxReadSerializer(serializers.Serializer[Any]):
    ids = serializers.ListField(
        child=serializers.IntegerField(), required=False, max_length=1000, help_text="Lines to mark read"
    )
    all = Flag(required=False, default=False, help_text="Mark every line read")


class InboxSettingsSerializer(serializers.Serializer[Any]):
    email = serializers.ChoiceField(choices=EmailChoice.choices)


class InboxView(PersonalAPIView):
    @extend_schema(responses={200: InboxSerializer})
    def get(self, request: Request) -> Response:
        """List my inbox: comments that mention me or answer threads I am in, and reviews asked of me or
        decided, newest first."""
        user = request.user
        rows = queries.inbox_of(user).select_related("comment", "session").order_by("-created_at", "-pk")[:50]
        choice = NotificationPreference.objects.filter(user=user).values_list("email", flat=True).first()  # type: ignore[misc]  # signed in: never the anonymous user here
        return Response(
            {
                "unread": queries.unread_count(cast(int, user.pk)),  # signed in: a real user
                "email": choice or EmailChoice.MENTIONS,
                "items": [_item(n) for n in rows],
            }
        )


def _item(note: Notification) -> dict[str, Any]:
    from discussion.domain.text import snippet
    from documents.plain import plain_text

    comment = note.comment
    return {
        "id": note.pk,
        "kind": note.kind,
        "sessionId": note.session_id,
        "sessionName": note.session.title,
        "entryId": comment.entry_id if comment is not None else note.entry_id,
        "commentId": note.comment_id,
        "threadId": comment.root_id if comment is not None else None,
        "author": comment.author_name if comment is not None else (note.author_name or ""),
        "snippet": snippet(plain_text(comment.body)) if comment is not None else (note.text or ""),
        "createdAt": note.created_at.isoformat(),
        "read": note.read_at is not None,
    }


class InboxReadView(PersonalAPIView):
    @extend_schema(request=InboxReadSerializer, responses={200: InboxSerializer, **ERRORS})
    def post(self, request: Request) -> Response:
        """Mark inbox lines read (``ids``, or ``all``); answers the unread count left."""
        data = parse(InboxReadSerializer, request.data)
        if "ids" not in data and not data["all"]:
            return error_response("Send ids (the lines to mark read) or all: true.", 400)
        unread = services.mark_read(actor=request.user, ids=None if data["all"] else data["ids"])
        return Response({"unread": unread})


class InboxSettingsView(PersonalAPIView):
    @extend_schema(request=InboxSettingsSerializer, responses={200: InboxSettingsSerializer, **ERRORS})
    def put(self, request: Request) -> Response:
        """Choose which notifications reach me by email: all, mentions only, or none."""
        data = parse(InboxSettingsSerializer, request.data)
        return Response({"email": services.set_email_choice(actor=request.user, choice=data["email"])})


class TeamDiscussionSerializer(serializers.Serializer[Any]):
    viewersMayComment = Flag(help_text="The team's viewers may comment on sessions shared with it")
    canChange = serializers.BooleanField(read_only=True, help_text="The caller owns the team")


class TeamDiscussionView(PersonalAPIView):
    @extend_schema(responses={200: TeamDiscussionSerializer, **ERRORS})
    def get(self, request: Request, team_id: int) -> Response:
        """Say whether the team's viewers may comment (any member may ask)."""
        allowed, owner = services.viewers_may_comment(actor=request.user, team_id=team_id)
        return Response({"viewersMayComment": allowed, "canChange": owner})

    @extend_schema(request=TeamDiscussionSerializer, responses={200: TeamDiscussionSerializer, **ERRORS})
    def put(self, request: Request, team_id: int) -> Response:
        """Let the team's viewers comment, or not (the team's owners decide)."""
        data = parse(TeamDiscussionSerializer, request.data)
        allowed = services.set_viewers_may_comment(
            actor=request.user, team_id=team_id, allowed=data["viewersMayComment"]
        )
        return Response({"viewersMayComment": allowed, "canChange": True})
