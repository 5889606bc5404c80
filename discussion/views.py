"""Pages of discussions: the inbox (its lines come from the API)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render


@login_required
def inbox_page(request: HttpRequest) -> HttpResponse:
    return render(request, "discussion/inbox.html")
