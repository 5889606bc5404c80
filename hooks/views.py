"""The hooks pages: a person's own (beside their API tokens) and a team's (its owners, from the team page).
Both read and write through the REST API."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render

from core.errors import Forbidden, NotVisible
from hooks.domain.events import EVENTS, PERSONAL_ONLY
from teams.facade import team_of


def _events(team: bool) -> list[dict[str, str]]:
    return [{"name": n, "label": label} for n, label in EVENTS.items() if not (team and n in PERSONAL_ONLY)]


@login_required
def my_hooks_page(request: HttpRequest) -> HttpResponse:
    config = {"listUrl": "/api/hooks/", "team": None, "events": _events(False)}
    return render(request, "hooks/hooks.html", {"config": config, "team": None})


@login_required
def team_hooks_page(request: HttpRequest, team_id: int) -> HttpResponse:
    try:
        team = team_of(request.user, team_id, owner=True)
    except NotVisible:
        raise Http404("Team not found") from None
    except Forbidden:
        return render(request, "403.html", {"reason": "Only the team's owners manage its hooks."}, status=403)
    config = {"listUrl": f"/api/teams/{team.pk}/hooks/", "team": team.name, "events": _events(True)}
    return render(request, "hooks/hooks.html", {"config": config, "team": team})
