"""The HTML pages through Django's test client: access, search, sort and the session page shell."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from django.test import Client

from sessions_app import services
from sessions_app.models import SessionShare
from teams.models import Team, TeamMembership
from tests.factories import HEADER, session_file, small_tree
from tests.factories import user_message as user_msg

pytestmark = pytest.mark.django_db


def signed_in(account: Any) -> Client:
    client = Client()
    client.force_login(account)
    return client


def store(owner: Any, pi_id: str, *, cwd: str = "/w", entries: list[dict[str, Any]] | None = None) -> Any:
    header = {**HEADER, "id": pi_id, "cwd": cwd}
    data = session_file(entries if entries is not None else small_tree(rich=True), header)
    return services.import_jsonl(actor=owner, data=data, filename=f"{pi_id}.jsonl").session


def listed(client: Client, **params: str) -> list[str]:
    response = client.get("/", params)
    assert response.status_code == 200
    return [s.pi_id for s in response.context["page"].object_list]


def test_pages_need_a_signed_in_user(user: Callable[..., Any]) -> None:
    session = store(user("ann"), "s1")
    for url in ("/", "/import/", f"/sessions/{session.pk}/"):
        response = Client().get(url)
        assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")


def test_list_shows_my_sessions_with_counts_and_not_others(user: Callable[..., Any]) -> None:
    me, other = user("me"), user("other")
    store(me, "mine")
    store(other, "theirs")
    client = signed_in(me)
    assert listed(client) == ["mine"]
    page = client.get("/").content.decode()
    assert ">6<" in page  # entry count column


def test_search_matches_name_cwd_and_message_text(user: Callable[..., Any]) -> None:
    me = user()
    store(me, "alpha", cwd="/projects/alpha")
    beta = store(me, "beta", cwd="/projects/beta", entries=[user_msg("b1", None, "refactor the parser")])
    services.rename_session(session=beta, actor=beta.owner, name="Parser work")
    store(me, "gamma", cwd="/srv", entries=[user_msg("g1", None, "tune the Zeppelin cache")])
    client = signed_in(me)
    assert listed(client, q="parser work") == ["beta"]  # name
    assert listed(client, q="projects/alpha") == ["alpha"]  # cwd
    assert listed(client, q="zeppelin") == ["gamma"]  # message text, any case
    assert listed(client, q="no such text anywhere") == []


def test_a_search_lists_the_newest_hits_of_each_session_and_how_many_more(user: Callable[..., Any]) -> None:
    me = user()
    chain = [user_msg("k0", None, "Kumquat jam, batch 0")]
    chain += [user_msg(f"k{i}", f"k{i - 1}", f"kumquat jam, batch {i}") for i in range(1, 9)]
    busy = store(me, "busy", entries=chain)
    store(me, "quiet", entries=[user_msg("q1", None, "a KUMQUAT tree")])
    page = signed_in(me).get("/", {"q": "kumquat"}).content.decode()
    base = f"/sessions/{busy.pk}/?q=kumquat"
    # The three newest hits, each opening the session at that entry with the search active.
    for i in (8, 7, 6):
        assert f'href="{base}#entry=k{i}"><mark>kumquat</mark> jam, batch {i}</a>' in page
    assert "batch 5" not in page
    assert f'<a class="more-hits" href="{base}">6 more in this session</a>' in page
    assert "<mark>KUMQUAT</mark> tree" in page  # matched in any case, shown as written
    assert page.count('class="more-hits"') == 1  # the quiet session's one hit is all there is
    assert "more-hits" not in signed_in(me).get("/", {"q": "busy"}).content.decode()  # a name match


def test_sort_by_entries_and_name(user: Callable[..., Any]) -> None:
    me = user()
    store(me, "small", entries=[user_msg("s1", None, "one")])
    store(me, "big")
    client = signed_in(me)
    assert listed(client, sort="entries") == ["big", "small"]
    assert set(listed(client, sort="name")) == {"big", "small"}


def test_shared_sessions_are_listed_and_open_read_only(user: Callable[..., Any]) -> None:
    owner, reader = user("owner"), user("reader")
    session = store(owner, "shared")
    team = Team.objects.create(name="crew")
    TeamMembership.objects.create(team=team, user=reader, role=TeamMembership.Role.VIEWER)
    SessionShare.objects.create(session=session, team=team, access=SessionShare.Access.VIEWER)
    client = signed_in(reader)
    assert listed(client, scope="shared") == ["shared"]
    assert listed(client, scope="mine") == []
    response = client.get(f"/sessions/{session.pk}/")
    assert response.status_code == 200
    page = response.content.decode()
    config = json.loads(page.split('type="application/json">')[1].split("</script>")[0])
    assert config["canEdit"] is False
    assert "shared by owner" in page


def test_another_users_session_page_is_not_found(user: Callable[..., Any]) -> None:
    session = store(user("owner"), "private")
    assert signed_in(user("stranger")).get(f"/sessions/{session.pk}/").status_code == 404


def test_session_page_carries_its_config_as_json_data(user: Callable[..., Any]) -> None:
    me = user()
    session = store(me, "s")
    response = signed_in(me).get(f"/sessions/{session.pk}/")
    page = response.content.decode()
    assert '<script id="session-config" type="application/json">' in page
    assert "script-src 'self';" in response["Content-Security-Policy"]
    # The page names where its socket's catch-up starts, so it need not ask the session for it.
    config = json.loads(page.split('type="application/json">')[1].split("</script>")[0])
    assert config["lastSeq"] == session.next_seq - 1 == session.entry_count - 1
    assert config["leafId"] == session.leaf_entry_id


def test_dead_links_and_refusals_show_the_products_own_pages_with_debug_off(
    user: Callable[..., Any], settings: Any
) -> None:
    settings.DEBUG = False
    owner, stranger = user("own"), user("str")
    session = store(owner, "s404")
    client = signed_in(stranger)
    for url in (f"/sessions/{session.pk}/", "/sessions/999999/", "/no/such/page/", "/s/not-a-token/"):
        response = client.get(url)
        assert response.status_code == 404, url
        page = response.content.decode()
        assert 'id="error-page"' in page and "Nothing here" in page, url
        assert "Page not found" not in page and "URLconf" not in page
        # The page is the product's: its navigation and stylesheet, and a way back.
        assert "My links" in page and "app.css" in page and 'href="/"' in page
    csrf = Client(enforce_csrf_checks=True)
    response = csrf.post("/accounts/login/", {"username": "own", "password": "x"})
    assert response.status_code == 403
    assert 'data-status="403"' in response.content.decode()
    assert "CSRF verification failed" not in response.content.decode()


def test_pages_for_links_teams_and_compare(user: Callable[..., Any]) -> None:
    owner = user("pages")
    session = store(owner, "s-pages")
    client = signed_in(owner)
    for url in ("/links/", "/teams/", f"/sessions/{session.pk}/compare/?a=u1&b=a3"):
        assert client.get(url).status_code == 200, url
    assert signed_in(user("other")).get(f"/sessions/{session.pk}/compare/").status_code == 404
    # The staff link to the audit pages shows only to staff.
    assert "audit-nav" not in client.get("/").content.decode()
    owner.is_staff = True
    owner.save()
    assert 'id="audit-nav"' in client.get("/").content.decode()
