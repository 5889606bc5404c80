"""A team with sessions shared with it, one session kept private, and people in and out of the team."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from rest_framework.test import APIClient

from sessions_app import services
from sessions_app.models import ChatSession
from teams.models import Team, TeamMembership
from tests.factories import FILES_HEADER, assistant_message, session_file, tool_turn, user_message

# The ISO week of the factories' timestamps (2026-01-02 is a Friday) and a range around it.
WEEK = "2025-12-29"
RANGE = {"from": "2025-12-01", "to": "2026-01-31"}


def answer(entry_id: str, parent: str, cost: float, ts: str = "2026-01-02T03:04:07.000Z") -> dict[str, Any]:
    usage = {"input": 100, "output": 10, "cacheRead": 0, "cacheWrite": 0, "cost": {"total": cost}}
    found = assistant_message(entry_id, parent, "ok", usage=usage)
    found["timestamp"] = ts
    return found


def worked(cost: float, path: str) -> list[dict[str, Any]]:
    """A session that asks, answers at ``cost``, writes ``path``, reads it and runs a command."""
    return [
        user_message("u1", None, "go"),
        answer("a1", "u1", cost),
        *tool_turn("c1", "a1", "write", {"path": path, "content": "x\n"}),
        *tool_turn("c2", "c1-r", "read", {"path": path}),
        *tool_turn("c3", "c2-r", "bash", {"command": "make test"}),
    ]


@dataclass(frozen=True, slots=True)
class Crew:
    olga: Any  # the team's owner
    eddie: Any  # an editor
    vera: Any  # a viewer
    oscar: Any  # in another team only
    team: Team
    shared: ChatSession  # olga's, shared with the team
    eddies: ChatSession  # eddie's, shared with the team
    private: ChatSession  # olga's, not shared

    def client(self, who: Any) -> APIClient:
        client = APIClient()
        client.force_authenticate(user=who)
        return client


def import_session(owner: Any, entries: list[dict[str, Any]], pi_id: str) -> ChatSession:
    data = session_file(entries, {**FILES_HEADER, "id": pi_id})
    return services.import_jsonl(actor=owner, data=data).session


@pytest.fixture
def crew(user: Callable[..., Any]) -> Crew:
    olga = user("olga", email="olga@example.test")
    eddie = user("eddie", email="eddie@example.test")
    vera = user("vera", email="vera@example.test")
    oscar = user("oscar", email="oscar@example.test")
    team = Team.objects.create(name="crew")
    TeamMembership.objects.create(team=team, user=olga, role=TeamMembership.Role.OWNER)
    TeamMembership.objects.create(team=team, user=eddie, role=TeamMembership.Role.EDITOR)
    TeamMembership.objects.create(team=team, user=vera, role=TeamMembership.Role.VIEWER)
    elsewhere = Team.objects.create(name="elsewhere")
    TeamMembership.objects.create(team=elsewhere, user=oscar, role=TeamMembership.Role.OWNER)
    shared = import_session(olga, worked(0.25, "src/shared.py"), "shared")
    eddies = import_session(eddie, worked(0.5, "src/eddie.py"), "eddies")
    private = import_session(olga, worked(4.0, "src/secret_plan.py"), "private")
    services.share_with_team(session=shared, team=team, access="editor", actor=olga)
    services.share_with_team(session=eddies, team=team, access="viewer", actor=eddie)
    return Crew(olga, eddie, vera, oscar, team, shared, eddies, private)


def raw_counts(team: Team) -> dict[str, Any]:
    """The team's numbers counted from the tables the rollup is kept from (not from the rollup)."""
    from django.db.models import Count, Sum

    from agent.models import AgentRun
    from costs.models import UsageDay
    from sessions_app.models import ChangedFile, Entry, SessionShare, ToolUse

    ids = list(SessionShare.objects.filter(team=team).values_list("session_id", flat=True))
    runs = AgentRun.objects.filter(session_id__in=ids, status__in=["succeeded", "failed", "aborted"])
    return {
        "sessions": len(ids),
        "answers": Entry.objects.filter(session_id__in=ids, type="message", role="assistant").count(),
        "runs": runs.count(),
        "failedRuns": runs.filter(status="failed").count(),
        "cost": UsageDay.objects.filter(session_id__in=ids, copied=False).aggregate(c=Sum("cost"))["c"] or 0,
        "toolCalls": ToolUse.objects.filter(session_id__in=ids).count(),
        "filesChanged": ChangedFile.objects.filter(session_id__in=ids).count(),
        "tools": dict(
            ToolUse.objects.filter(session_id__in=ids)
            .values("tool")
            .annotate(n=Count("pk"))
            .values_list("tool", "n")
        ),
    }
