"""Summaries are written by the worker that made them: compactions and branch summaries name it."""

from __future__ import annotations

from typing import Any

import pytest

from compaction_app import tasks
from compaction_app.models import CompactionRun
from compaction_app.services import request_compaction, start_branch_summary
from sessions_app.models import Entry
from tests.compaction.test_tasks import _tree
from tests.factories import conversation, store

pytestmark = pytest.mark.django_db


def _author_of(session: Any, entry_type: str) -> str:
    row = Entry.objects.select_related("author").get(session=session, type=entry_type)
    assert row.author is not None
    return row.author.to_domain().label()


def test_a_compaction_is_the_compaction_workers(owner: Any, django_capture_on_commit_callbacks: Any) -> None:
    session = store(owner, conversation(8))
    with django_capture_on_commit_callbacks(execute=False):
        run = request_compaction(session=session, actor=owner)
    assert tasks.run_compaction(run.pk) == "succeeded"
    assert _author_of(session, "compaction") == "compaction-worker"
    # The imported entries stay the importer's.
    imported = Entry.objects.filter(session=session, type="message").select_related("author").first()
    assert imported is not None and imported.author is not None and imported.author.imported


def test_a_branch_summary_is_the_compaction_workers(
    owner: Any, django_capture_on_commit_callbacks: Any
) -> None:
    session = store(owner, _tree(), pi_id="sess-tree")
    with django_capture_on_commit_callbacks(execute=False):
        operation = start_branch_summary(session=session, target_id="a2", actor=owner)
    tasks.run_branch_summary(CompactionRun.objects.get(operation_id=operation).pk)
    assert _author_of(session, "branch_summary") == "compaction-worker"
