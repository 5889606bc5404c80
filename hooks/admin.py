"""Hooks in the admin: who owns each, where it sends (the host only) and how it fares, and the delivery log.

Staff pause, resume and delete hooks through the owners' use cases (``as_staff``, logged ``by_staff``);
nothing else is written here. A hook's secret is never shown, nor its ciphertext, and neither is the
path of its URL (a Slack URL's path is itself a secret): the owners see those on their own page.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlsplit

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString

from hooks import services
from hooks.domain import events as kinds
from hooks.models import Delivery, Hook

# What a hook's page shows. ``secret`` is left out on purpose: neither its value nor its ciphertext
# reaches a page, and the URL is shown by its host (``host``).
HOOK_FIELDS: tuple[str, ...] = (
    "name",
    "team",
    "owner",
    "created_by",
    "host",
    "event_list",
    "format",
    "active",
    "failing_since",
    "last_delivered_at",
    "created_at",
    "log",
)

DELIVERY_FIELDS: tuple[str, ...] = (
    "public_id",
    "hook",
    "event",
    "session",
    "replay_of",
    "status",
    "attempts",
    "next_attempt_at",
    "last_status_code",
    "response_ms",
    "last_error",
    "last_response",
    "created_at",
    "delivered_at",
    "payload_json",
)


def _host(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.hostname}" if parts.hostname else "—"


@admin.register(Hook)
class HookAdmin(admin.ModelAdmin):
    list_display = [
        "name",
        "team",
        "owner",
        "host",
        "event_list",
        "format",
        "active",
        "failing_since",
        "last_delivered_at",
        "log",
    ]
    list_filter = [
        "active",
        "format",
        ("failing_since", admin.EmptyFieldListFilter),
        ("team", admin.RelatedOnlyFieldListFilter),
    ]
    # Not the URL: answering searches on it would spell its secret path out one guess at a time.
    search_fields = ["name", "team__name", "owner__username", "events"]
    list_select_related = ["team", "owner"]
    raw_id_fields = ["team", "owner", "created_by"]
    fields = HOOK_FIELDS
    readonly_fields = HOOK_FIELDS
    actions = ["pause_hooks", "resume_hooks"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # a hook is made by its owners, who alone are shown its secret

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # pause and resume (the owners' use case, logged) are the changes staff make

    def has_pause_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("hooks.change_hook")

    @admin.action(description="Pause the selected hooks", permissions=["pause"])
    def pause_hooks(self, request: HttpRequest, queryset: QuerySet[Hook]) -> None:
        self._set_active(request, queryset, active=False)

    @admin.action(description="Resume the selected hooks", permissions=["pause"])
    def resume_hooks(self, request: HttpRequest, queryset: QuerySet[Hook]) -> None:
        self._set_active(request, queryset, active=True)

    def _set_active(self, request: HttpRequest, queryset: QuerySet[Hook], *, active: bool) -> None:
        ids = list(queryset.exclude(active=active).values_list("pk", flat=True))
        for pk in ids:
            services.update_hook(actor=request.user, hook_id=pk, changes={"active": active}, as_staff=True)
        done = "resumed" if active else "paused"
        self.message_user(request, f"{len(ids)} hook(s) {done}.", messages.SUCCESS)

    # Deleting is the owners' use case, one hook at a time; the confirmation counts the delivery log
    # instead of listing each row (and asking for the right to delete rows nobody deletes by hand).
    def get_deleted_objects(
        self, objs: Any, request: HttpRequest
    ) -> tuple[list[str], dict[str, int], set[str], list[str]]:
        hooks = list(objs)
        deliveries = Delivery.objects.filter(hook__in=hooks).count()
        return [str(h) for h in hooks], {"hooks": len(hooks), "deliveries": deliveries}, set(), []

    def delete_model(self, request: HttpRequest, obj: Hook) -> None:
        services.delete_hook(actor=request.user, hook_id=obj.pk, as_staff=True)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Hook]) -> None:
        for pk in queryset.values_list("pk", flat=True):
            services.delete_hook(actor=request.user, hook_id=pk, as_staff=True)

    @admin.display(description="sends to")
    def host(self, hook: Hook) -> str:
        return _host(hook.url)

    @admin.display(description="events")
    def event_list(self, hook: Hook) -> str:
        return ", ".join(hook.events) or "—"

    # A link, not a count: a busy hook's log is long, and counting it for every row would be the page's cost.
    @admin.display(description="deliveries")
    def log(self, hook: Hook) -> SafeString:
        url = reverse("admin:hooks_delivery_changelist")
        return format_html('<a href="{}?hook__id__exact={}">log</a>', url, hook.pk)


class EventFilter(admin.SimpleListFilter):
    """The events there are, without reading the log for its distinct values."""

    title = "event"
    parameter_name = "event"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [(kind, kind) for kind in [*kinds.EVENTS, kinds.PING]]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        return queryset.filter(event=self.value()) if self.value() else queryset


@admin.register(Delivery)
class DeliveryAdmin(admin.ModelAdmin):
    """The delivery log, as it happened: read-only (the owners replay a delivery from their page)."""

    list_display = [
        "created_at",
        "hook",
        "event",
        "status",
        "attempts",
        "last_status_code",
        "response_ms",
        "delivered_at",
        "session",
    ]
    list_filter = ["status", EventFilter, "created_at"]
    search_fields = [
        "=event",
        "hook__name",
        "hook__team__name",
        "hook__owner__username",
        "session__id__exact",
    ]
    list_select_related = ["hook", "hook__team", "hook__owner", "session"]
    raw_id_fields = ["hook", "session", "replay_of"]
    show_full_result_count = False  # a busy log is long; counting it is the slow part of the page
    fields = DELIVERY_FIELDS
    readonly_fields = DELIVERY_FIELDS

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # history: each row is what was sent and what came back

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # the log goes with its hook

    @admin.display(description="payload")
    def payload_json(self, delivery: Delivery) -> SafeString:
        return format_html("<pre>{}</pre>", json.dumps(delivery.payload, indent=2, ensure_ascii=False))
