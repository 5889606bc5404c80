"""The team workflow's admin screens (reviews, organize, hooks), used by staff through the real pages.

Staff read every list and row; what they change (pause, resume and delete a hook, delete a tag or a saved
filter, withdraw a review) goes through the owners' use cases and leaves one row naming them. A hook's
secret never reaches a page, nor does the path of its URL.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from django.contrib.auth.models import Permission
from django.db import connection
from django.test import Client

from actionlog.models import ActionLog
from core.errors import Forbidden
from hooks import services as hook_services
from hooks.models import Delivery, Hook
from organize import services as organize_services
from organize.models import Archived, Pin, SavedFilter, SessionTag, Tag
from reviews import services as review_services
from reviews.models import Review, Reviewer
from sessions_app import services
from sessions_app.models import ChatSession
from teams import services as team_services
from teams.models import TeamMembership
from tests.factories import conversation, store

pytestmark = pytest.mark.django_db

SLACK_PATH = "/services/T0AAAA/B0BBBB/pathIsASecretToo"
HOOK_URL = "https://hooks.example.com" + SLACK_PATH


@dataclass
class Workflow:
    """One of each row these screens list, made the way the product makes them."""

    owner: Any
    other: Any
    staff: Any
    session: ChatSession
    hook: Hook
    secret: str
    delivery: Delivery
    tag: Tag
    saved: SavedFilter
    review: Review

    def client(self, account: Any | None = None) -> Client:
        client = Client()
        client.force_login(account or self.staff)
        return client


@pytest.fixture
def flow(user: Callable[..., Any]) -> Workflow:
    owner, other = user("owner"), user("other")
    staff = user("root", is_staff=True, is_superuser=True)
    session = store(owner, conversation(2))
    team = team_services.create_team(actor=owner, name="core")
    TeamMembership.objects.create(team=team, user=other, role="editor")
    services.share_with_team(session=session, team=team, access="editor", actor=owner)
    hook, secret = hook_services.create_hook(
        actor=owner, name="ci alerts", url=HOOK_URL, events=["run.failed"], format="slack", team_id=team.pk
    )
    delivery = hook_services.send_ping(actor=owner, hook_id=hook.pk)
    tag = organize_services.create_tag(actor=owner, team=team, name="billing", colour="red")
    organize_services.apply_tag(actor=owner, session=session, tag=tag)
    organize_services.pin_session(actor=owner, session=session)
    organize_services.archive_session(actor=owner, session=session)
    saved = organize_services.save_filter(actor=owner, name="billing work", query="tag=billing", team=team)
    review = review_services.request_review(actor=owner, session=session, reviewers=["other"])
    review_services.decide_review(actor=other, review_id=review.pk, decision="approved", note="fine by me")
    return Workflow(owner, other, staff, session, hook, secret, delivery, tag, saved, review)


def _pages(flow: Workflow) -> list[str]:
    """Every list of these screens, and one row's page of each."""
    rows: list[tuple[str, int | str]] = [
        ("hooks/hook", flow.hook.pk),
        ("hooks/delivery", flow.delivery.pk),
        ("organize/tag", flow.tag.pk),
        ("organize/savedfilter", flow.saved.pk),
        ("organize/pin", Pin.objects.get().pk),
        ("organize/sessiontag", SessionTag.objects.get().pk),
        ("organize/archived", Archived.objects.get().pk),
        ("reviews/review", flow.review.pk),
        ("reviews/reviewer", Reviewer.objects.get().pk),
    ]
    return [url for model, pk in rows for url in (f"/admin/{model}/", f"/admin/{model}/{pk}/change/")]


def _action(flow: Workflow, changelist: str, action: str, *pks: int) -> Any:
    body = {"action": action, "_selected_action": [str(pk) for pk in pks]}
    return flow.client().post(changelist, body)


def _row(action: str) -> ActionLog:
    (row,) = ActionLog.objects.filter(action=action).order_by("-pk")[:1]
    return row


def test_staff_open_every_list_and_row_of_the_workflow(flow: Workflow) -> None:
    client = flow.client()
    for url in _pages(flow):
        assert client.get(url).status_code == 200, url
    hooks = client.get("/admin/hooks/hook/").content.decode()
    assert "ci alerts" in hooks and "https://hooks.example.com" in hooks and "run.failed" in hooks
    reviews = client.get("/admin/reviews/review/").content.decode()
    assert "approved" in reviews and "core" in reviews
    review_page = client.get(f"/admin/reviews/review/{flow.review.pk}/change/").content.decode()
    assert "fine by me" in review_page  # the decision, inline
    delivery = client.get(f"/admin/hooks/delivery/{flow.delivery.pk}/change/").content.decode()
    assert "ping" in delivery and "Test delivery" in delivery  # its event and payload


def test_the_lists_find_rows_by_session_team_and_user(flow: Workflow) -> None:
    client = flow.client()
    by_session = client.get("/admin/reviews/review/", {"q": str(flow.session.pk)}).content.decode()
    assert f"/admin/reviews/review/{flow.review.pk}/change/" in by_session
    by_team = client.get("/admin/organize/tag/", {"q": "core"}).content.decode()
    assert f"/admin/organize/tag/{flow.tag.pk}/change/" in by_team
    nobody = client.get("/admin/hooks/hook/", {"q": "no-such-team"}).content.decode()
    assert f"/admin/hooks/hook/{flow.hook.pk}/change/" not in nobody
    # A word where a number is searched for finds nothing instead of failing.
    assert client.get("/admin/hooks/delivery/", {"q": "ping"}).status_code == 200


def test_a_hooks_secret_and_url_path_never_reach_an_admin_page(flow: Workflow) -> None:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT secret FROM {Hook._meta.db_table} WHERE id = %s", [flow.hook.pk])
        found = cursor.fetchone()
    assert found is not None
    stored = found[0]
    assert stored and stored != flow.secret  # encrypted at rest
    client = flow.client()
    pages = [*_pages(flow), f"/admin/hooks/hook/{flow.hook.pk}/delete/", "/admin/hooks/hook/?q=ci"]
    for url in pages:
        html = client.get(url).content.decode()
        assert flow.secret not in html, url
        assert stored not in html and "fernet:" not in html, url
        assert "pathIsASecretToo" not in html, url


def test_staff_pause_and_resume_a_hook_from_the_list(flow: Workflow) -> None:
    response = _action(flow, "/admin/hooks/hook/", "pause_hooks", flow.hook.pk)
    assert response.status_code == 302
    flow.hook.refresh_from_db()
    assert not flow.hook.active
    row = _row("hook_change")
    assert (row.actor, row.detail["active"], row.detail["by_staff"]) == (flow.staff, False, True)

    # Pausing a paused hook changes nothing and logs nothing.
    _action(flow, "/admin/hooks/hook/", "pause_hooks", flow.hook.pk)
    assert ActionLog.objects.filter(action="hook_change").count() == 1

    _action(flow, "/admin/hooks/hook/", "resume_hooks", flow.hook.pk)
    flow.hook.refresh_from_db()
    assert flow.hook.active
    assert ActionLog.objects.filter(action="hook_change", actor=flow.staff).count() == 2


def test_staff_delete_a_hook_with_its_delivery_log(flow: Workflow) -> None:
    client = flow.client()
    confirm = client.get(f"/admin/hooks/hook/{flow.hook.pk}/delete/")
    assert confirm.status_code == 200 and "Deliveries: 1" in confirm.content.decode()
    assert client.post(f"/admin/hooks/hook/{flow.hook.pk}/delete/", {"post": "yes"}).status_code == 302
    assert not Hook.objects.exists() and not Delivery.objects.exists()
    row = _row("hook_delete")
    assert (row.actor, row.detail["name"], row.detail["by_staff"]) == (flow.staff, "ci alerts", True)


def test_staff_delete_a_tag_and_the_sessions_stay(flow: Workflow) -> None:
    client = flow.client()
    confirm = client.get(f"/admin/organize/tag/{flow.tag.pk}/delete/").content.decode()
    assert "billing" in confirm
    assert client.post(f"/admin/organize/tag/{flow.tag.pk}/delete/", {"post": "yes"}).status_code == 302
    assert not Tag.objects.exists() and not SessionTag.objects.exists()
    assert ChatSession.objects.filter(pk=flow.session.pk).exists()
    row = _row("tag_delete")
    assert (row.actor, row.team_label, row.detail["by_staff"]) == (flow.staff, "core", True)


def test_staff_delete_a_saved_filter(flow: Workflow) -> None:
    body = {"action": "delete_selected", "_selected_action": [str(flow.saved.pk)], "post": "yes"}
    assert flow.client().post("/admin/organize/savedfilter/", body).status_code == 302
    assert not SavedFilter.objects.exists()
    row = _row("filter_delete")
    assert (row.actor, row.detail["by_staff"]) == (flow.staff, True)


def test_staff_withdraw_a_review_and_its_decisions_stay(flow: Workflow) -> None:
    response = _action(flow, "/admin/reviews/review/", "withdraw_reviews", flow.review.pk)
    assert response.status_code == 302
    flow.review.refresh_from_db()
    assert flow.review.status == Review.Status.WITHDRAWN
    assert Reviewer.objects.get(review=flow.review).decision == "approved"
    row = _row("review_withdraw")
    assert (row.actor, row.session, row.detail["by_staff"]) == (flow.staff, flow.session, True)


def test_nothing_is_added_or_edited_in_place(flow: Workflow) -> None:
    client = flow.client()
    for model in ["hooks/hook", "hooks/delivery", "organize/tag", "organize/savedfilter", "reviews/review"]:
        assert client.get(f"/admin/{model}/add/").status_code == 403, model
    body = {"name": "renamed", "active": ""}
    assert client.post(f"/admin/hooks/hook/{flow.hook.pk}/change/", body).status_code == 403
    assert (
        client.post(f"/admin/hooks/delivery/{flow.delivery.pk}/delete/", {"post": "yes"}).status_code == 403
    )
    assert client.post(f"/admin/reviews/review/{flow.review.pk}/delete/", {"post": "yes"}).status_code == 403
    flow.hook.refresh_from_db()
    assert (flow.hook.name, flow.hook.active) == ("ci alerts", True)
    assert Delivery.objects.exists() and Review.objects.exists()


def test_staff_who_may_only_look_cannot_pause_and_neither_can_a_script(
    flow: Workflow, user: Callable[..., Any]
) -> None:
    helpdesk = user("helpdesk", is_staff=True)
    helpdesk.user_permissions.add(*Permission.objects.filter(codename__in=["view_hook", "view_review"]))
    client = flow.client(helpdesk)
    assert client.get("/admin/hooks/hook/").status_code == 200
    client.post("/admin/hooks/hook/", {"action": "pause_hooks", "_selected_action": [str(flow.hook.pk)]})
    client.post(
        "/admin/reviews/review/", {"action": "withdraw_reviews", "_selected_action": [str(flow.review.pk)]}
    )
    flow.hook.refresh_from_db()
    flow.review.refresh_from_db()
    assert flow.hook.active and flow.review.status == Review.Status.APPROVED
    with pytest.raises(Forbidden):
        hook_services.update_hook(
            actor=helpdesk, hook_id=flow.hook.pk, changes={"active": False}, as_staff=True
        )
    with pytest.raises(Forbidden):
        organize_services.delete_tag(actor=helpdesk, tag=flow.tag, as_staff=True)
    assert not ActionLog.objects.filter(actor=helpdesk).exists()


def test_people_who_are_not_staff_are_sent_to_sign_in(flow: Workflow) -> None:
    signed_in, anonymous = flow.client(flow.owner), Client()
    for url in _pages(flow):
        for client in (signed_in, anonymous):
            response = client.get(url)
            assert response.status_code == 302, url
            assert response["Location"].startswith("/admin/login/"), url
