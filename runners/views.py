"""The runners page: register a runner (its token shown once, with the commands to start it), see which
are online and in which workspaces, revoke one."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from teams.facade import Team, TeamMembership


@login_required
def runners_page(request: HttpRequest) -> HttpResponse:
    mine = TeamMembership.objects.filter(user_id=request.user.pk or 0, role=TeamMembership.Role.OWNER)
    owned = Team.objects.filter(pk__in=mine.values("team_id")).order_by("name")
    server = f"{request.scheme}://{request.get_host()}"
    return render(request, "runners/runners.html", {"teams": owned, "server": server})
