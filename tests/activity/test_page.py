"""The team activity page, its REST answer and its CSV: the same numbers, for members only."""

from __future__ import annotations

import csv
import io
from typing import Any

import pytest
from django.test import Client

from sessions_app import services
from teams import services as team_services

from .conftest import RANGE, Crew

pytestmark = pytest.mark.django_db


def _page(who: Any) -> Client:
    client = Client()
    client.force_login(who)
    return client


def _api(crew: Crew, who: Any, **params: str) -> Any:
    return crew.client(who).get(f"/api/teams/{crew.team.pk}/activity/", {**RANGE, **params})


def test_members_see_the_page_with_its_table_and_the_team_page_links_it(crew: Crew) -> None:
    team_page = _page(crew.vera).get(f"/teams/{crew.team.pk}/")
    assert f'href="/teams/{crew.team.pk}/activity/"' in team_page.content.decode()
    page = _page(crew.vera).get(f"/teams/{crew.team.pk}/activity/", RANGE)
    assert page.status_code == 200
    html = page.content.decode()
    assert '<tr data-person="olga">' in html and '<tr data-person="eddie">' in html
    assert "secret_plan" not in html  # the private session is nobody's business here
    assert f'href="/teams/{crew.team.pk}/activity.csv?from=2025-12-01&amp;to=2026-01-31"' in html
    config = page.context["config"]["report"]
    assert config["totals"]["sessions"] == 2 and config["totals"]["cost"] == pytest.approx(0.75)


def test_the_default_range_is_the_last_twelve_weeks(crew: Crew) -> None:
    body = crew.client(crew.olga).get(f"/api/teams/{crew.team.pk}/activity/").json()
    assert len(body["weeks"]) == 12
    assert body["totals"]["sessions"] == 0  # the sessions' work was in January


def test_unsharing_takes_a_session_out_of_every_number_at_once(crew: Crew) -> None:
    services.unshare_with_team(session=crew.eddies, team=crew.team, actor=crew.eddie)
    body = _api(crew, crew.olga).json()
    assert [p["name"] for p in body["people"]] == ["olga"]
    assert body["totals"]["cost"] == pytest.approx(0.25) and body["totals"]["sessions"] == 1
    rows = list(
        csv.reader(
            io.StringIO(_page(crew.olga).get(f"/teams/{crew.team.pk}/activity.csv", RANGE).content.decode())
        )
    )
    assert [r[1] for r in rows[1:]] == ["olga"]


def test_outsiders_and_removed_members_get_404(crew: Crew) -> None:
    assert _api(crew, crew.oscar).status_code == 404
    assert _page(crew.oscar).get(f"/teams/{crew.team.pk}/activity/").status_code == 404
    assert _page(crew.oscar).get(f"/teams/{crew.team.pk}/activity.csv").status_code == 404
    team_services.remove_member(actor=crew.olga, team_id=crew.team.pk, username="vera")
    assert _api(crew, crew.vera).status_code == 404
    assert _page(crew.vera).get(f"/teams/{crew.team.pk}/activity/").status_code == 404
    assert _page(crew.vera).get(f"/teams/{crew.team.pk}/activity.csv").status_code == 404
    assert Client().get(f"/teams/{crew.team.pk}/activity/").status_code == 302  # to sign in


def test_a_range_that_is_not_one_is_refused(crew: Crew) -> None:
    assert _api(crew, crew.olga, **{"from": "2026-02-01", "to": "2026-01-01"}).status_code == 400
    assert _api(crew, crew.olga, **{"from": "2020-01-01", "to": "2026-01-01"}).status_code == 400
    assert _api(crew, crew.olga, **{"from": "yesterday"}).status_code == 400
    page = _page(crew.olga).get(f"/teams/{crew.team.pk}/activity/", {"from": "nope"})
    assert page.status_code == 200 and "must be a day" in page.content.decode()


def test_the_csv_holds_the_pages_numbers_per_person_and_week(crew: Crew) -> None:
    body = _api(crew, crew.vera, rows="true").json()
    assert {k: v for k, v in body.items() if k != "rows"} == _api(crew, crew.vera).json()  # read two ways
    download = _page(crew.vera).get(f"/teams/{crew.team.pk}/activity.csv", RANGE)
    assert download.status_code == 200 and download["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(download.content.decode())))
    assert [(r["week"], r["person"]) for r in rows] == [(r["week"], r["person"]) for r in body["rows"]]
    assert [(r["week"], r["person"]) for r in rows] == [("2025-12-29", "eddie"), ("2025-12-29", "olga")]
    for line, row in zip(rows, body["rows"], strict=True):
        assert int(line["sessions"]) == row["sessions"] and int(line["runs"]) == row["runs"]
        assert float(line["cost"]) == pytest.approx(row["cost"])
        assert (
            int(line["tool calls"]) == row["toolCalls"] and int(line["files changed"]) == row["filesChanged"]
        )
    # The page's table has the same people with the same totals and tool mix.
    people = {p["name"]: p for p in body["people"]}
    for line in rows:
        assert people[line["person"]]["cost"] == pytest.approx(float(line["cost"]))
        tools = {t: int(line[f"tool {t}"]) for t in body["tools"] if int(line[f"tool {t}"])}
        assert tools == people[line["person"]]["tools"]


def test_a_member_chooses_the_digest_for_themselves(crew: Crew) -> None:
    url = f"/api/teams/{crew.team.pk}/activity/digest/"
    assert crew.client(crew.vera).get(url).json() == {"digest": True}
    assert crew.client(crew.vera).put(url, {"digest": False}, format="json").json() == {"digest": False}
    assert crew.client(crew.vera).get(url).json() == {"digest": False}
    assert crew.client(crew.olga).get(url).json() == {"digest": True}
    assert crew.client(crew.oscar).put(url, {"digest": False}, format="json").status_code == 404


def test_a_deleted_session_leaves_the_numbers(crew: Crew) -> None:
    services.delete_session(session=crew.eddies, actor=crew.eddie)
    body = _api(crew, crew.olga).json()
    assert [p["name"] for p in body["people"]] == ["olga"]
    assert body["totals"]["sessions"] == 1 and body["totals"]["cost"] == pytest.approx(0.25)
