"""A team's data written by a release's own use cases, and a census of it; run in a child process.

``python release_team.py seed`` is copied into the previous release's tree (``test_from_release.py``)
and run there, so it calls that release's services, not this one's: it must keep to what the release in
``previous_release.json`` offers (when a release changes a use case called here, update this file as the
release file moves on). ``census`` reads the same rows through whichever release runs it: the previous
one after seeding, this one after the upgrade, and the two must agree. Each step prints one JSON line
last.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import django

TEAM_SESSIONS = 6  # the team's sessions, nobody writes to them during the upgrade
TURNS = 120  # questions and answers in each: about 2,000 entries with the branches and the load's own
LOAD_SESSIONS = 2  # sessions the load appends to
LOAD_TURNS = 60


def _with_branch(turns: int, at: int, length: int) -> list[dict[str, Any]]:
    """A conversation with a second answer to question ``at`` that goes on for ``length`` turns."""
    from tests.factories import assistant_message, conversation, user_message

    entries = conversation(turns)
    parent = f"u{at}"
    for n in range(length):
        answer = assistant_message(f"b{at}-a{n}", parent, f"another way, step {n}")
        entries.append(answer)
        parent = answer["id"]
        entries.append(user_message(f"b{at}-u{n}", parent, f"go on with step {n + 1}"))
        parent = f"b{at}-u{n}"
    return entries


def seed() -> dict[str, Any]:
    """Users, a team with members, sessions with branches shared with it, a link, a label, a thread,
    a review, tags, pins, an archived session, a saved filter, hooks and API tokens."""
    from django.contrib.auth import get_user_model

    from discussion.services import post_comment
    from hooks.services import create_hook
    from organize.services import apply_tag, archive_session, create_tag, pin_session, save_filter
    from providers.models import LLMProvider
    from reviews.services import request_review
    from sessions_app import services
    from sessions_app.models import ApiToken
    from teams.models import TeamInvitation
    from teams.services import accept_invitation, create_team, invite_member
    from tests.factories import HEADER, conversation, session_file, two_branches_with_files

    users = get_user_model().objects
    olga = users.create_user(username="olga", password="pw-for-tests")
    ben = users.create_user(username="ben", password="pw-for-tests")
    cleo = users.create_user(username="cleo", password="pw-for-tests")
    users.create_user(username="dan", password="pw-for-tests")  # in no team
    # Priced, so the sessions' answers have costs to compare after the upgrade.
    LLMProvider.objects.create(
        name="priced",
        base_url="http://127.0.0.1:1/v1",
        provider="p",
        model_id="m",
        cost_input=3,
        cost_output=15,
    )
    team = create_team(actor=olga, name="Platform")
    for person, role in ((ben, "editor"), (cleo, "viewer")):
        invite_member(actor=olga, team_id=team.pk, username=person.username, role=role)
        invitation = TeamInvitation.objects.get(team=team, user=person)
        accept_invitation(actor=person, invitation_id=invitation.pk)

    def imported(owner: Any, pi_id: str, entries: list[dict[str, Any]]) -> Any:
        data = session_file(entries, {**HEADER, "id": pi_id})
        return services.import_jsonl(actor=owner, data=data, filename=f"{pi_id}.jsonl").session

    sessions = [
        imported(olga, f"team-{n}", _with_branch(TURNS, at=TURNS // 2 + n, length=10))
        for n in range(TEAM_SESSIONS)
    ]
    sessions.append(imported(ben, "team-files", two_branches_with_files()))
    load = [imported(olga, f"load-{n}", conversation(LOAD_TURNS)) for n in range(LOAD_SESSIONS)]
    for n, session in enumerate(sessions[:4]):
        services.share_with_team(
            session=session, team=team, access="viewer" if n % 2 else "editor", actor=olga
        )
    services.share_with_team(session=sessions[-1], team=team, access="editor", actor=ben)
    for session in load:
        services.share_with_team(session=session, team=team, access="viewer", actor=olga)

    first = sessions[0]
    link = services.create_share_link(session=first, actor=olga)
    services.set_label(session=sessions[1], target_id="a3", label="the fix", actor=olga)
    question = post_comment(actor=ben, session=first, entry_id="a2", body="@cleo is this the parser bug?")
    post_comment(actor=olga, session=first, entry_id="a2", body="It is, fixed in a3.", parent_id=question.pk)
    request_review(actor=olga, session=first, reviewers=["ben"], note="before we merge", team_id=team.pk)
    tag = create_tag(actor=olga, team=team, name="parser", colour="blue")
    create_tag(actor=ben, team=team, name="docs")
    for session in sessions[:2]:
        apply_tag(actor=olga, session=session, tag=tag)
    pin_session(actor=olga, session=sessions[2])
    archive_session(actor=olga, session=sessions[5])
    save_filter(actor=olga, name="parser work", query="parser", team=team)
    create_hook(
        actor=olga,
        name="team channel",
        url="https://hooks.example.com/piweb",
        events=["mention", "review.requested"],
        team_id=team.pk,
    )
    create_hook(
        actor=ben, name="my reviews", url="https://hooks.example.com/ben", events=["review.requested"]
    )
    token = ApiToken.objects.create(user=olga)[1]
    ApiToken.objects.create(user=ben)
    return {
        "token": token,
        "link": link.raw_token,
        "team": [s.pk for s in sessions],
        "load": {str(s.pk): s.leaf_entry_id for s in load},
        "census": census(),
    }


def census() -> dict[str, Any]:
    """How many rows of each kind the team made, and the entries of each of its own sessions (the load
    writes elsewhere): what an upgrade must keep."""
    from django.apps import apps
    from django.db.models import Count

    def count(app: str, model: str) -> int:
        manager = apps.get_model(app, model)._base_manager
        return int(manager.count())

    kinds = [
        ("auth", "User"),
        ("sessions_app", "ApiToken"),
        ("sessions_app", "ShareLink"),
        ("sessions_app", "SessionShare"),
        ("teams", "Team"),
        ("teams", "TeamMembership"),
        ("discussion", "Comment"),
        ("reviews", "Review"),
        ("reviews", "Reviewer"),
        ("organize", "Tag"),
        ("organize", "SessionTag"),
        ("organize", "Pin"),
        ("organize", "Archived"),
        ("organize", "SavedFilter"),
        ("hooks", "Hook"),
        ("providers", "LLMProvider"),
    ]
    entry = apps.get_model("sessions_app", "Entry")._base_manager
    per_session = (
        entry.filter(session__pi_id__startswith="team-")
        .values_list("session__pi_id")
        .annotate(n=Count("id"))
        .order_by("session__pi_id")
    )
    return {
        **{f"{app}.{model}": count(app, model) for app, model in kinds},
        "labels": entry.filter(type="label").count(),
        "team entries": dict(per_session),
    }


def served(token: str, link: str, session_id: str) -> dict[str, int]:
    """Whether the old release's API token and share link still open the session."""
    from django.test import Client
    from django.test.utils import setup_test_environment

    setup_test_environment()
    api = Client().get(f"/api/sessions/{session_id}/", HTTP_AUTHORIZATION=f"Bearer {token}")
    page = Client().get(f"/s/{link}/")
    return {"api": api.status_code, "link": page.status_code}


def main(argv: list[str]) -> object:
    django.setup()
    if argv[0] == "seed":
        return seed()
    if argv[0] == "census":
        return {"census": census(), **({"served": served(*argv[1:4])} if len(argv) > 1 else {})}
    raise SystemExit(f"unknown step {argv[0]!r}")


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1:]), default=str))
