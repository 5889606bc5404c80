"""Pages of reviews: the review queue, of all my teams or one."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render

from reviews import queries
from sessions_app.facade import access


@login_required
def queue_page(request: HttpRequest, team_id: int | None = None) -> HttpResponse:
    """Waiting for me, waiting for others, done: the reviews of my teams on sessions I may read."""
    team = None
    if team_id is not None:
        try:
            team = access.team_of(request.user, team_id, owner=False)
        except access.NotVisible:
            raise Http404("Team not found") from None
    found = queries.boxes(request.user, team_id=team_id)
    boxes = [
        ("mine", "Waiting for me", [queries.serialize(r, request.user) for r in found["mine"]]),
        ("others", "Waiting for others", [queries.serialize(r, request.user) for r in found["others"]]),
        ("done", "Done", [queries.serialize(r, request.user) for r in found["done"]]),
    ]
    return render(request, "reviews/queue.html", {"team": team, "boxes": boxes})
