"""The runners page: register a runner (its token shown once, with the commands to start it), see which
are online and in which workspaces, revoke one."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from teams.facade import Team, TeamMembership


@login_required
def runners_page(request: HttpRequest) -> HttpResponse:
    owned = Team.objects.filter(
        memberships__user=request.user, memberships__role=TeamMembership.Role.OWNER
    ).order_by("name")
    server = f"{request.scheme}://{request.get_host()}"
    return render(request, "runners/runners.html", {"teams": owned, "server": server})
