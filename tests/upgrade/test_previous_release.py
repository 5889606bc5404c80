"""A database made by the previous release upgrades in place: the moved models keep their tables and rows.

The previous release's schema is the migration state before the apps were split (teams, the action log and
the providers lived in ``sessions_app`` and ``compaction_app``). The test migrates the test database back
to that state, writes rows as that release would, migrates forward, and checks that no table was copied
(same PostgreSQL file node) and that every row is read through the new apps.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.contenttypes.models import ContentType
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from actionlog.models import ActionLog
from providers.models import LLMProvider
from teams.models import Team, TeamInvitation, TeamMembership

PREVIOUS_RELEASE = [
    ("sessions_app", "0027_session_copied_entries"),
    ("compaction_app", "0004_refused_runs"),
    ("agent", "0004_run_edit_of"),
    ("discussion", "0001_initial"),
    ("governance", "0001_initial"),
    ("actionlog", None),
    ("teams", None),
    ("providers", None),
]
MOVED_TABLES = [
    "sessions_app_team",
    "sessions_app_teammembership",
    "sessions_app_teaminvitation",
    "sessions_app_actionlog",
    "compaction_app_llmprovider",
]

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(connection.vendor != "postgresql", reason="file nodes are PostgreSQL's"),
]


def _file_nodes() -> dict[str, int]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT relname, relfilenode FROM pg_class WHERE relname = ANY(%s)", [MOVED_TABLES])
        return dict(cursor.fetchall())


@pytest.fixture
def previous_release() -> Iterator[Any]:
    """The database as the previous release left it; migrated back to the newest state afterwards."""
    executor = MigrationExecutor(connection)
    executor.migrate(PREVIOUS_RELEASE)
    executor.loader.build_graph()
    yield executor.loader.project_state(
        [(app, name) for app, name in PREVIOUS_RELEASE if name is not None]
    ).apps
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())


def test_an_upgrade_moves_no_table_and_loses_no_row(previous_release: Any, django_user_model: Any) -> None:
    old = previous_release
    user_model = old.get_model("auth", "User")
    owner = user_model.objects.create(username="olga")
    guest = user_model.objects.create(username="gus")
    team = old.get_model("sessions_app", "Team").objects.create(name="Platform", default_share="viewer")
    old.get_model("sessions_app", "TeamMembership").objects.create(team=team, user=owner, role="owner")
    old.get_model("sessions_app", "TeamInvitation").objects.create(team=team, user=guest, role="editor")
    old.get_model("sessions_app", "ActionLog").objects.create(
        actor=owner, actor_name="olga", action="team_create", team=team, team_label="Platform"
    )
    # A team the identity provider created at a sign-in stays the provider's; a user's own does not.
    sso_team = old.get_model("sessions_app", "Team").objects.create(name="Engineering")
    old.get_model("sessions_app", "ActionLog").objects.create(
        actor_kind="system",
        actor_name="identity-provider",
        action="team_create",
        team=sso_team,
        team_label="Engineering",
    )
    old.get_model("compaction_app", "LLMProvider").objects.create(
        name="house", base_url="http://127.0.0.1:1/v1", model_id="m-1", provider="openai"
    )
    # Migrating back handed the content types (and so the permissions) back to the old apps.
    assert ContentType.objects.filter(app_label="sessions_app", model="team").count() == 1
    before = _file_nodes()
    assert set(before) == set(MOVED_TABLES)

    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())

    assert _file_nodes() == before
    moved = Team.objects.get(name="Platform")
    assert moved.default_share == "viewer"
    assert list(TeamMembership.objects.filter(team=moved).values_list("user__username", "role")) == [
        ("olga", "owner")
    ]
    assert list(TeamInvitation.objects.filter(team=moved).values_list("user__username", "role")) == [
        ("gus", "editor")
    ]
    assert list(ActionLog.objects.filter(team=moved).values_list("actor_name", "action")) == [
        ("olga", "team_create")
    ]
    assert Team.objects.get(name="Engineering").managed_by_provider and not moved.managed_by_provider
    assert LLMProvider.objects.get(name="house").model_id == "m-1"
    assert ContentType.objects.filter(app_label="teams", model="team").count() == 1
    assert not ContentType.objects.filter(app_label="sessions_app", model="team").exists()
