"""The "My activity" page: the same rows and filters as ``GET /api/activity/``, rendered on the server."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from rest_framework.exceptions import APIException, ValidationError

from actionlog.facade import declared_verbs, spoken
from audit.activity_api import read_page


@login_required
def activity_page(request: HttpRequest) -> HttpResponse:
    """My activity as a table, with the API's filters as a form and an "Older" link to page back."""
    error, status, page = "", 200, None
    # The form sends its empty fields too: on the page an empty filter means no filter.
    query = request.GET.copy()
    for name in [k for k, v in query.items() if v == ""]:
        del query[name]
    try:
        page = read_page(request.user, query)
    except APIException as exc:
        error, status = _message(exc), exc.status_code
    older = ""
    if page is not None and page.next_before is not None:
        kept = {k: v for k, v in request.GET.items() if k in ("action", "session", "limit") and v}
        older = "?" + urlencode({**kept, "before": page.next_before})
    context = {
        "items": page.items if page else [],
        "older": older,
        "error": error,
        "actions": sorted(((verb, spoken(verb)) for verb in declared_verbs()), key=lambda pair: pair[1]),
        "chosen_action": request.GET.get("action", ""),
        "chosen_session": request.GET.get("session", ""),
    }
    return render(request, "audit/activity.html", context, status=status)


def _message(exc: APIException) -> str:
    detail: Any = exc.detail
    if isinstance(exc, ValidationError) and isinstance(detail, dict):
        return "; ".join(f"{name}: {' '.join(str(m) for m in msgs)}" for name, msgs in detail.items())
    return str(detail)
