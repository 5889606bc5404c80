"""REST adapters for organizing sessions: pins, archive, team tags, saved filters and bulk actions."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from core.api.errors import api_exception_handler, register_error
from core.api.fields import Text
from organize import bulk, queries, services
from organize.models import COLOURS, SavedFilter, Tag
from sessions_app.facade import ChatSession, access

register_error(services.OrganizeError, status.HTTP_400_BAD_REQUEST)

ERROR = inline_serializer("OrganizeError", {"error": serializers.CharField()})
DONE = inline_serializer("OrganizeDone", {"changed": serializers.BooleanField()})


class _View(APIView):
    def get_exception_handler(self) -> Any:
        return api_exception_handler


def _readable(request: Request, pk: int) -> ChatSession:
    """The session if the signed-in caller may read it (share links do not organize), else 404."""
    return access.require_read(request, pk, links=False).session


def tag_body(tag: Tag, count: int | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": tag.pk,
        "name": tag.name,
        "colour": tag.colour,
        "team": tag.team_id,
        "teamName": tag.team.name,
    }
    if count is not None:
        body["count"] = count
    return body


def filter_body(saved: SavedFilter) -> dict[str, Any]:
    return {
        "id": saved.pk,
        "name": saved.name,
        "query": saved.query,
        "team": {"id": saved.team_id, "name": saved.team.name} if saved.team is not None else None,
        "url": f"/?{saved.query}",
    }


class PinView(_View):
    @extend_schema(request=None, responses={200: DONE, 404: ERROR})
    def post(self, request: Request, pk: int) -> Response:
        """Pin the session for yourself (``?pinned=1`` on the list shows your pinned sessions)."""
        return Response({"changed": services.pin_session(actor=request.user, session=_readable(request, pk))})

    @extend_schema(request=None, responses={200: DONE, 404: ERROR})
    def delete(self, request: Request, pk: int) -> Response:
        """Unpin the session."""
        return Response(
            {"changed": services.unpin_session(actor=request.user, session=_readable(request, pk))}
        )


class ArchiveView(_View):
    @extend_schema(request=None, responses={200: DONE, 403: ERROR, 404: ERROR})
    def post(self, request: Request, pk: int) -> Response:
        """Archive the session: hidden from the default list (``?archived=only`` finds it), not deleted."""
        session = _readable(request, pk)
        return Response({"changed": services.archive_session(actor=request.user, session=session)})

    @extend_schema(request=None, responses={200: DONE, 403: ERROR, 404: ERROR})
    def delete(self, request: Request, pk: int) -> Response:
        """Restore an archived session to the default list."""
        session = _readable(request, pk)
        return Response({"changed": services.restore_session(actor=request.user, session=session)})


class ApplyTagSerializer(serializers.Serializer[Any]):
    tagId = serializers.IntegerField()


def _tag(request: Request, tag_id: int) -> Tag:
    tag = queries.visible_tag(request.user, tag_id)
    if tag is None:
        raise NotFound("No such tag")
    return tag


class SessionTagsView(_View):
    @extend_schema(responses={200: inline_serializer("SessionTags", {"results": serializers.ListField()})})
    def get(self, request: Request, pk: int) -> Response:
        """The tags of your teams on this session."""
        session = _readable(request, pk)
        tags = queries.tags_on([session.pk], request.user).get(session.pk, [])
        return Response({"results": [tag_body(t) for t in tags]})

    @extend_schema(request=ApplyTagSerializer, responses={200: DONE, 403: ERROR, 404: ERROR})
    def post(self, request: Request, pk: int) -> Response:
        """Put one of a team's tags on the session (it must be shared with that team)."""
        session = _readable(request, pk)
        body = ApplyTagSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        tag = _tag(request, body.validated_data["tagId"])
        return Response({"changed": services.apply_tag(actor=request.user, session=session, tag=tag)})


class SessionTagView(_View):
    @extend_schema(request=None, responses={200: DONE, 403: ERROR, 404: ERROR})
    def delete(self, request: Request, pk: int, tag_id: int) -> Response:
        """Take a tag off the session."""
        session = _readable(request, pk)
        tag = _tag(request, tag_id)
        return Response({"changed": services.remove_tag(actor=request.user, session=session, tag=tag)})


class TagSerializer(serializers.Serializer[Any]):
    name = Text(max_length=40)
    colour = serializers.ChoiceField(choices=COLOURS, required=False, default="grey")


class TagChangeSerializer(serializers.Serializer[Any]):
    name = Text(max_length=40, required=False)
    colour = serializers.ChoiceField(choices=COLOURS, required=False)


class TeamTagsView(_View):
    @extend_schema(responses={200: inline_serializer("TeamTags", {"results": serializers.ListField()})})
    def get(self, request: Request, team_id: int) -> Response:
        """The team's tags, each with how many sessions you may read carry it."""
        if queries.visible_team(request.user, team_id) is None:
            raise NotFound("No such team")
        tags = [t for t in queries.tags_of_teams(request.user) if t.team_id == team_id]
        return Response({"results": [tag_body(t, t.count) for t in tags]})  # type: ignore[attr-defined]

    @extend_schema(request=TagSerializer, responses={201: None, 400: ERROR, 403: ERROR, 404: ERROR})
    def post(self, request: Request, team_id: int) -> Response:
        """Create a tag for the team (its editors and owners)."""
        team = queries.visible_team(request.user, team_id)
        if team is None:
            raise NotFound("No such team")
        body = TagSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        tag = services.create_tag(actor=request.user, team=team, **body.validated_data)
        return Response(tag_body(tag, 0), status=status.HTTP_201_CREATED)


class TagView(_View):
    @extend_schema(request=TagChangeSerializer, responses={200: None, 400: ERROR, 403: ERROR, 404: ERROR})
    def patch(self, request: Request, tag_id: int) -> Response:
        """Rename or recolour a tag (the team's editors and owners)."""
        tag = _tag(request, tag_id)
        body = TagChangeSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        tag = services.update_tag(actor=request.user, tag=tag, **body.validated_data)
        return Response(tag_body(tag))

    @extend_schema(request=None, responses={204: None, 403: ERROR, 404: ERROR})
    def delete(self, request: Request, tag_id: int) -> Response:
        """Delete a tag: it comes off every session."""
        services.delete_tag(actor=request.user, tag=_tag(request, tag_id))
        return Response(status=status.HTTP_204_NO_CONTENT)


class SavedFilterSerializer(serializers.Serializer[Any]):
    name = Text(max_length=80)
    query = Text(max_length=services.MAX_QUERY, allow_blank=True)
    teamId = serializers.IntegerField(required=False, allow_null=True, default=None)


class SavedFiltersView(_View):
    @extend_schema(responses={200: inline_serializer("SavedFilters", {"results": serializers.ListField()})})
    def get(self, request: Request) -> Response:
        """Your saved filters and your teams'."""
        return Response({"results": [filter_body(f) for f in queries.saved_filters(request.user)]})

    @extend_schema(request=SavedFilterSerializer, responses={201: None, 400: ERROR, 403: ERROR, 404: ERROR})
    def post(self, request: Request) -> Response:
        """Save the list's query string under a name, for yourself or (its editors) for a team."""
        body = SavedFilterSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        team = None
        if body.validated_data["teamId"] is not None:
            team = queries.visible_team(request.user, body.validated_data["teamId"])
            if team is None:
                raise NotFound("No such team")
        saved = services.save_filter(
            actor=request.user,
            name=body.validated_data["name"],
            query=body.validated_data["query"],
            team=team,
        )
        return Response(filter_body(saved), status=status.HTTP_201_CREATED)


class SavedFilterView(_View):
    @extend_schema(request=None, responses={204: None, 403: ERROR, 404: ERROR})
    def delete(self, request: Request, filter_id: int) -> Response:
        """Delete a saved filter (yours, or your team's if you edit it)."""
        saved = queries.visible_filter(request.user, filter_id)
        if saved is None:
            raise NotFound("No such filter")
        services.delete_saved_filter(actor=request.user, saved=saved)
        return Response(status=status.HTTP_204_NO_CONTENT)


class BulkSerializer(serializers.Serializer[Any]):
    action = serializers.ChoiceField(choices=bulk.ACTIONS)
    sessions = serializers.ListField(child=serializers.IntegerField(), max_length=bulk.MAX_SELECTION)
    tagId = serializers.IntegerField(required=False, allow_null=True, default=None)
    teamId = serializers.IntegerField(required=False, allow_null=True, default=None)
    access = serializers.ChoiceField(choices=("viewer", "editor"), required=False, default="viewer")
    preview = serializers.BooleanField(required=False, default=True)


class BulkView(_View):
    @extend_schema(
        request=BulkSerializer,
        responses={
            200: inline_serializer("BulkPlan", {"counts": serializers.DictField()}),
            400: ERROR,
            404: ERROR,
        },
    )
    def post(self, request: Request) -> Response:
        """Preview (``preview: true``, the default) or run an action on a selection of sessions.

        Per session: ``change`` (will change, or changed), ``unchanged`` (already so), ``refused`` (with why),
        ``failed`` (refused while running). Ids you cannot read count as ``missing``, like ids of nothing."""
        body = BulkSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        asked = bulk.parse(
            request.user,
            action=data["action"],
            sessions=data["sessions"],
            tag_id=data["tagId"],
            team_id=data["teamId"],
            share_access=data["access"],
        )
        plan = bulk.preview(request.user, asked) if data["preview"] else bulk.run(request.user, asked)
        return Response(bulk.describe(plan))
