"""The embedded mode (SQLite) reads a branched session as PostgreSQL does: the tree overview, the context
page from running sums, and an entry found by id; and an import leaves the planner statistics that make
SQLite probe the id index instead of walking the whole session."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sessions_app import context_reads, services
from sessions_app.api.serializers import context_page_payload
from sessions_app.tree_overview import build_tree_overview
from tests import procs
from tests.factories import session_file
from tests.ui.test_browser_tree import nested_branches

SCRIPT = r"""
import json
import django
django.setup()
from django.core.management import call_command
call_command("migrate", verbosity=0)
from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import connection
from tests.embedded.test_reads_sqlite import answers

assert settings.DATABASES["default"]["ENGINE"].endswith("sqlite3")
owner = get_user_model().objects.create_user("ada", password="pw")
out = answers(owner)
with connection.cursor() as cursor:
    cursor.execute("SELECT tbl FROM sqlite_stat1")
    out["analyzed"] = sorted({row[0] for row in cursor.fetchall()})
    cursor.execute(
        "EXPLAIN QUERY PLAN SELECT id FROM sessions_app_entry WHERE session_id = 1 AND entry_id = 'n0'"
    )
    out["plan"] = " ".join(str(row[-1]) for row in cursor.fetchall())
print(json.dumps(out))
"""


def answers(owner: Any) -> dict[str, Any]:
    """What a reader sees of one branched session: the overview, and the context page at a few entries."""
    session = services.import_jsonl(actor=owner, data=session_file(nested_branches(40))).session
    pages = {}
    for leaf in ("n0", "alta7", "n39", session.leaf_entry_id):
        page = context_reads.context_page(session, leaf, head=2, tail=3)
        assert page is not None
        pages[leaf] = context_page_payload(page, 100_000)
    return {"overview": build_tree_overview(session), "pages": pages}


@pytest.mark.django_db
def test_sqlite_reads_as_postgresql_does(user: Any, tmp_path: Path) -> None:
    embedded = procs.run_embedded(SCRIPT, tmp_path)
    mine = json.loads(json.dumps(answers(user())))
    assert embedded["overview"] == mine["overview"]
    assert embedded["pages"] == mine["pages"]
    # The import analyzed the entry tables, so an id is found through its index.
    assert {"sessions_app_entry", "sessions_app_entrysums"} <= set(embedded["analyzed"])
    assert "entry_session_id_idx" in embedded["plan"]
