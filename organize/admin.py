"""Pins, team tags, tagged sessions, archived sessions and saved filters in the admin.

Staff read them all; the writes are deleting a team's tag or a saved filter, each through the owners' use
case (``as_staff``, logged ``by_staff``). Pins, applied tags and the archive belong to the people who set
them and are read-only here.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import Count, OuterRef, QuerySet, Subquery
from django.http import HttpRequest

from core.staff import ReadOnlyAdmin as ReadOnly
from organize import services
from organize.models import Archived, Pin, SavedFilter, SessionTag, Tag

TAG_FIELDS: tuple[str, ...] = (
    "name",
    "team",
    "colour",
    "sessions",
    "created_by",
    "created_at",
)

FILTER_FIELDS: tuple[str, ...] = (
    "name",
    "query",
    "user",
    "team",
    "created_by",
    "created_at",
)


class Whose(admin.SimpleListFilter):
    title = "whose"
    parameter_name = "whose"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("personal", "one person's"), ("team", "a team's")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        if self.value() == "personal":
            return queryset.filter(team__isnull=True)
        if self.value() == "team":
            return queryset.filter(team__isnull=False)
        return queryset


class DeletedThroughUseCase(admin.ModelAdmin):
    """Not added or edited here (that is the product's flow); deleted one row at a time by ``delete_one``,
    never by Django's cascade, and the confirmation counts what goes with a row instead of listing it."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def delete_one(self, request: HttpRequest, obj: Any) -> None:
        raise NotImplementedError

    def delete_model(self, request: HttpRequest, obj: Any) -> None:
        self.delete_one(request, obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> None:
        for obj in queryset:
            self.delete_one(request, obj)

    def get_deleted_objects(
        self, objs: Any, request: HttpRequest
    ) -> tuple[list[str], dict[str, int], set[str], list[str]]:
        rows = list(objs)
        return [str(row) for row in rows], {str(self.opts.verbose_name_plural): len(rows)}, set(), []


@admin.register(Tag)
class TagAdmin(DeletedThroughUseCase):
    list_display = ["name", "team", "colour", "sessions", "created_by", "created_at"]
    list_filter = ["colour", ("team", admin.RelatedOnlyFieldListFilter)]
    search_fields = ["name", "team__name"]
    list_select_related = ["team", "created_by"]
    raw_id_fields = ["team", "created_by"]
    fields = TAG_FIELDS
    readonly_fields = TAG_FIELDS

    def get_queryset(self, request: HttpRequest) -> QuerySet[Tag]:
        # Counted per row shown (the tag's index answers it), not by grouping every applied tag.
        applied = (
            SessionTag.objects.filter(tag=OuterRef("pk"))
            .order_by()
            .values("tag")
            .annotate(n=Count("pk"))
            .values("n")
        )
        return super().get_queryset(request).annotate(session_total=Subquery(applied))

    @admin.display(description="sessions", ordering="session_total")
    def sessions(self, tag: Tag) -> int:
        return int(getattr(tag, "session_total", None) or 0)

    def get_deleted_objects(
        self, objs: Any, request: HttpRequest
    ) -> tuple[list[str], dict[str, int], set[str], list[str]]:
        tags = list(objs)
        applied = SessionTag.objects.filter(tag__in=tags).count()
        counts = {"tags": len(tags), "taken off sessions (the sessions stay)": applied}
        return [f"{t} ({t.team})" for t in tags], counts, set(), []

    def delete_one(self, request: HttpRequest, obj: Tag) -> None:
        services.delete_tag(actor=request.user, tag=obj, as_staff=True)


@admin.register(SavedFilter)
class SavedFilterAdmin(DeletedThroughUseCase):
    list_display = ["name", "belongs_to", "query", "created_by", "created_at"]
    list_filter = [Whose, ("team", admin.RelatedOnlyFieldListFilter)]
    search_fields = ["name", "query", "user__username", "team__name"]
    list_select_related = ["user", "team", "created_by"]
    raw_id_fields = ["user", "team", "created_by"]
    fields = FILTER_FIELDS
    readonly_fields = FILTER_FIELDS

    @admin.display(description="whose")
    def belongs_to(self, saved: SavedFilter) -> str:
        return f"team {saved.team}" if saved.team is not None else str(saved.user)

    def delete_one(self, request: HttpRequest, obj: SavedFilter) -> None:
        services.delete_saved_filter(actor=request.user, saved=obj, as_staff=True)


@admin.register(Pin)
class PinAdmin(ReadOnly):
    list_display = ["user", "session", "created_at"]
    search_fields = ["user__username", "session__id__exact", "session__name"]
    list_select_related = ["user", "session"]
    raw_id_fields = ["user", "session"]


@admin.register(SessionTag)
class SessionTagAdmin(ReadOnly):
    list_display = ["session", "tag", "team", "added_by", "added_at"]
    list_filter = [("tag__team", admin.RelatedOnlyFieldListFilter)]
    search_fields = ["tag__name", "tag__team__name", "session__id__exact", "session__name"]
    list_select_related = ["session", "tag", "tag__team", "added_by"]
    raw_id_fields = ["session", "tag", "added_by"]

    @admin.display(description="team", ordering="tag__team__name")
    def team(self, applied: SessionTag) -> str:
        return str(applied.tag.team)


@admin.register(Archived)
class ArchivedAdmin(ReadOnly):
    list_display = ["session", "archived_by", "archived_at"]
    search_fields = ["session__id__exact", "session__name", "archived_by__username"]
    list_select_related = ["session", "archived_by"]
    raw_id_fields = ["session", "archived_by"]
