"""Teams in the admin: every change is the staff use case of ``teams.services``, logged ``by_staff``."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.core.exceptions import ValidationError
from django.forms.models import BaseInlineFormSet
from django.http import HttpRequest

from teams import services
from teams.models import Team, TeamMembership


class MembershipsFormSet(BaseInlineFormSet):
    def clean(self) -> None:
        super().clean()
        kept = [
            form.cleaned_data
            for form in self.forms
            if form.cleaned_data and not form.cleaned_data.get("DELETE") and form.cleaned_data.get("user")
        ]
        # The use cases refuse it too; saying so here keeps the page instead of failing the request.
        if kept and not any(row.get("role") == TeamMembership.Role.OWNER for row in kept):
            raise ValidationError("A team with members keeps at least one owner.")


class TeamMembershipInline(admin.TabularInline):
    model = TeamMembership
    formset = MembershipsFormSet
    extra = 1
    raw_id_fields = ["user"]


@admin.register(Team)
class TeamAdmin(admin.ModelAdmin):
    list_display = ["name", "members", "managed_by_provider", "created_at"]
    list_filter = ["managed_by_provider"]
    search_fields = ["name", "memberships__user__username"]
    inlines = [TeamMembershipInline]

    @admin.display(description="members")
    def members(self, team: Team) -> int:
        return team.memberships.count()

    def save_model(self, request: HttpRequest, obj: Team, form: Any, change: bool) -> None:
        services.staff_save_team(actor=request.user, team=obj, changed=form.changed_data)

    def save_formset(self, request: HttpRequest, form: Any, formset: Any, change: bool) -> None:
        if formset.model is not TeamMembership:
            super().save_formset(request, form, formset, change)
            return
        team = form.instance
        formset.save(commit=False)
        before = {m.pk: m.user for m in TeamMembership.objects.filter(team=team).select_related("user")}
        sets: list[tuple[Any, str]] = [(m.user, m.role) for m in formset.new_objects]
        removes = [before.get(m.pk, m.user) for m in formset.deleted_objects]
        for membership, _fields in formset.changed_objects:
            old_user = before.get(membership.pk)
            if old_user is not None and old_user.pk != membership.user_id:
                removes.append(old_user)  # another user in the same row: one leaves, one joins
            sets.append((membership.user, membership.role))
        # Owners are made first and demotions come last, so a team with members always keeps an owner.
        owners = [change for change in sets if change[1] == TeamMembership.Role.OWNER]
        others = [change for change in sets if change[1] != TeamMembership.Role.OWNER]
        for user, role in owners:
            services.staff_set_member(actor=request.user, team=team, user=user, role=role)
        for user in removes:
            services.staff_remove_member(actor=request.user, team=team, user=user)
        for user, role in others:
            services.staff_set_member(actor=request.user, team=team, user=user, role=role)
