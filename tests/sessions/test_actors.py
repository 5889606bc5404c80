"""Every write names its actor: leaving it out is an error, never a write the server lets through."""

from __future__ import annotations

import inspect
from typing import Any

import pytest

from accounts_app import api_tokens
from actionlog.models import ActionLog
from agent import services as agent_services
from compaction_app import services as compaction_services
from core.actors import LinkActor, SystemActor
from sessions_app import access, services
from sessions_app.models import Entry
from sync import services as sync_services
from teams import services as team_services
from tests.factories import session_file, small_tree

pytestmark = pytest.mark.django_db

WRITES = [
    services.append_entries,
    services.set_label,
    services.rename_session,
    services.delete_session,
    services.create_session,
    services.set_leaf,
    services.navigate_without_summary,
    services.fork_session,
    services.clone_session,
    services.set_compaction_settings,
    services.share_with_team,
    services.unshare_with_team,
    services.create_share_link,
    services.revoke_share_link,
    team_services.create_team,
    team_services.invite_member,
    team_services.accept_invitation,
    team_services.decline_invitation,
    team_services.change_role,
    team_services.remove_member,
    api_tokens.create_api_token,
    api_tokens.revoke_api_token,
    services.import_jsonl,
    services.import_stream,
    sync_services.sync_lines,
    services.purge_session,
    services.purge_deleted_sessions,
    services.delete_owner,
    services.export_session,
    compaction_services.request_compaction,
    compaction_services.compact_session,
    compaction_services.start_branch_summary,
    compaction_services.summarize_and_navigate,
    compaction_services.cancel_operation,
    compaction_services.fail_run,
    agent_services.abort_run,
]


@pytest.mark.parametrize("use_case", WRITES, ids=lambda f: f.__name__)
def test_the_actor_is_a_required_typed_parameter(use_case: Any) -> None:
    parameter = inspect.signature(use_case).parameters["actor"]
    assert parameter.default is inspect.Parameter.empty
    assert parameter.annotation == "Actor"


@pytest.fixture
def stored(user: Any) -> Any:
    return services.import_jsonl(actor=user("ada"), data=session_file(small_tree())).session


def test_leaving_the_actor_out_is_a_type_error_and_writes_nothing(stored: Any) -> None:
    before = Entry.objects.filter(session=stored).count()
    with pytest.raises(TypeError):
        services.append_entries(session=stored, entries=[{"type": "custom", "customType": "x"}])  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        services.set_label(session=stored, target_id="u1", label="x", actor=None)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        access.authorize(None, stored, access.WRITE)  # type: ignore[arg-type]
    assert Entry.objects.filter(session=stored).count() == before


def test_a_link_holder_reads_its_own_session_and_never_writes(stored: Any, user: Any) -> None:
    link = services.create_share_link(session=stored, actor=stored.owner)
    holder = LinkActor(link)
    assert access.authorize(holder, stored, access.READ).via_link
    with pytest.raises(access.Forbidden):
        services.rename_session(session=stored, name="mine now", actor=holder)
    other = services.import_jsonl(actor=user("bob"), data=session_file(small_tree())).session
    with pytest.raises(access.NotVisible):
        access.authorize(holder, other, access.READ)
    services.revoke_share_link(link=link, actor=stored.owner)
    with pytest.raises(access.NotVisible):
        access.authorize(holder, stored, access.READ)


def test_a_system_actor_acts_for_the_server_and_is_named_in_the_log(stored: Any) -> None:
    worker = SystemActor("maintenance")
    services.rename_session(session=stored, name="tidied", actor=worker)
    stored.refresh_from_db()
    assert stored.name == "tidied"
    logged = ActionLog.objects.get(action="rename")
    assert (logged.actor, logged.actor_kind, logged.actor_name) == (None, "system", "maintenance")


def test_sessions_and_teams_belong_to_people_not_to_workers(stored: Any, user: Any) -> None:
    with pytest.raises(access.NotSignedIn):
        services.create_session(actor=SystemActor("maintenance"), cwd="/w")
    with pytest.raises(access.NotSignedIn):
        team_services.create_team(actor=SystemActor("maintenance"), name="bots")
    with pytest.raises(access.Forbidden):  # a user never imports into someone else's account
        services.import_jsonl(actor=stored.owner, owner=user("bob"), data=session_file(small_tree()))
