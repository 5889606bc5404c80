"""Teams in the admin: staff edits are logged as the members' own changes are."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db import transaction
from django.http import HttpRequest

from actionlog.facade import services as actions
from teams.models import Team, TeamMembership


class TeamMembershipInline(admin.TabularInline):
    model = TeamMembership
    extra = 1
    raw_id_fields = ["user"]


@admin.register(Team)
class TeamAdmin(admin.ModelAdmin):
    list_display = ["name", "members", "created_at"]
    search_fields = ["name", "memberships__user__username"]
    inlines = [TeamMembershipInline]

    @admin.display(description="members")
    def members(self, team: Team) -> int:
        return team.memberships.count()

    # Staff edits of teams are logged as the members' own changes are, with the staff member as actor.
    def save_model(self, request: HttpRequest, obj: Team, form: Any, change: bool) -> None:
        with transaction.atomic():
            super().save_model(request, obj, form, change)
            if not change:
                actions.record_action(
                    actor=request.user,
                    action=actions.Action.TEAM_CREATE,
                    session=None,
                    team=obj,
                    by_staff=True,
                )

    def save_formset(self, request: HttpRequest, form: Any, formset: Any, change: bool) -> None:
        with transaction.atomic():
            super().save_formset(request, form, formset, change)
            if formset.model is not TeamMembership:
                return
            changes = [
                *((actions.Action.TEAM_ACCEPT, m) for m in formset.new_objects),
                *((actions.Action.TEAM_ROLE, m) for m, _ in formset.changed_objects),
                *((actions.Action.TEAM_REMOVE, m) for m in formset.deleted_objects),
            ]
            for action, membership in changes:
                actions.record_action(
                    actor=request.user,
                    action=action,
                    session=None,
                    team=form.instance,
                    username=membership.user.get_username(),
                    role=membership.role,
                    by_staff=True,
                )
