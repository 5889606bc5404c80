"""Staff revoke an API token in the admin: listed by name and owner, never shown or made there."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.test import Client
from rest_framework.test import APIClient

from actionlog.models import ActionLog
from sessions_app.models import ApiToken

pytestmark = pytest.mark.django_db


def test_staff_find_and_delete_a_token_in_the_admin_and_it_stops_working(user: Callable[..., Any]) -> None:
    owner = user("owner")
    _, key = ApiToken.objects.create(user=owner, name="laptop")
    digest = ApiToken.objects.get(user=owner).digest
    staff = Client()
    staff.force_login(user("staff", is_staff=True, is_superuser=True))
    listing = staff.get("/admin/sessions_app/apitoken/?q=laptop")
    assert listing.status_code == 200 and "laptop" in listing.content.decode()
    assert key not in listing.content.decode()
    assert staff.get("/admin/sessions_app/apitoken/add/").status_code == 403
    assert staff.get(f"/admin/sessions_app/apitoken/{digest}/change/").status_code == 200  # read-only

    script = APIClient()
    script.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    assert script.get("/api/sessions/").status_code == 200
    assert staff.post(f"/admin/sessions_app/apitoken/{digest}/delete/", {"post": "yes"}).status_code == 302
    assert not ApiToken.objects.filter(digest=digest).exists()
    assert script.get("/api/sessions/").status_code in (401, 403)
    (row,) = ActionLog.objects.filter(action="token_revoke")
    assert row.actor_name == "staff" and row.actor_kind == "user"


def test_the_admins_bulk_delete_revokes_each_token_with_its_log_row(user: Callable[..., Any]) -> None:
    owner = user("owner")
    ApiToken.objects.create(user=owner, name="one")
    ApiToken.objects.create(user=owner, name="two")
    staff = Client()
    staff.force_login(user("staff", is_staff=True, is_superuser=True))
    digests = list(ApiToken.objects.values_list("digest", flat=True))
    answer = staff.post(
        "/admin/sessions_app/apitoken/",
        {"action": "delete_selected", "_selected_action": digests, "post": "yes"},
    )
    assert answer.status_code == 302
    assert not ApiToken.objects.exists()
    assert ActionLog.objects.filter(action="token_revoke", actor_name="staff").count() == 2
