"""The usage page: every signed-in user's own tokens and cost; the page reads the numbers from the API."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from teams.facade import TeamMembership


@login_required
def usage_page(request: HttpRequest) -> HttpResponse:
    """My usage over time per model, and that of the teams I own."""
    owned = TeamMembership.objects.filter(user=request.user, role=TeamMembership.Role.OWNER)  # type: ignore[misc]  # signed in: never the anonymous user here
    teams = [{"id": t.pk, "name": t.name} for t in (m.team for m in owned.select_related("team"))]
    return render(request, "costs/usage.html", {"config": {"teams": teams}})
