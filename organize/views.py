"""The tags page: each of my teams' tags with how many sessions I may read carry them; its editors and
owners create, rename, recolour and delete them here (through the REST API)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from organize import queries
from organize.models import COLOURS
from teams.facade import Team


@login_required
def tags_page(request: HttpRequest) -> HttpResponse:
    user = request.user
    editor = set(queries.editor_team_ids(user))
    tags = queries.tags_of_teams(user)
    teams: list[dict[str, Any]] = [
        {"team": team, "editor": team.pk in editor, "tags": [t for t in tags if t.team_id == team.pk]}
        for team in Team.objects.filter(pk__in=queries.member_team_ids(user)).order_by("name")
    ]
    return render(request, "organize/tags.html", {"teams": teams, "colours": COLOURS})
