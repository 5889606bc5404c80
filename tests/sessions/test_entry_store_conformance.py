"""Both entry-store backends store the same inputs into the same rows, segments and counters, and refuse
the same writes with the same answers: the PostgreSQL backend (its one-round-trip chains) and the
portable one on PostgreSQL, and the portable one in the embedded mode (SQLite, in a child process)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.db import connection

from sessions_app.services.leaf_append import PostgresStore
from sessions_app.services.store import PortableStore, entry_store
from tests import procs
from tests.sessions.store_conformance import run

pytestmark = pytest.mark.django_db(transaction=True)

if connection.vendor != "postgresql":
    pytest.skip("the suite's database is PostgreSQL; SQLite runs in a child process", allow_module_level=True)

SCRIPT = r"""
import json
import django
django.setup()
from django.core.management import call_command
call_command("migrate", verbosity=0)
from sessions_app.services.store import PortableStore, entry_store
from tests.sessions.store_conformance import run
assert type(entry_store()) is PortableStore
print(json.dumps(run(entry_store())))
"""


def run_embedded(tmp_path: Path) -> dict[str, Any]:
    return dict(procs.run_embedded(SCRIPT, tmp_path))


def test_the_backend_is_chosen_by_the_database_vendor() -> None:
    assert type(entry_store()) is PostgresStore


def test_both_backends_store_the_same_rows_on_postgresql_and_sqlite(tmp_path: Path) -> None:
    chain = run(PostgresStore())
    portable = run(PortableStore())
    embedded = run_embedded(tmp_path)
    for name, other in (("portable on PostgreSQL", portable), ("portable on SQLite", embedded)):
        for part in ("session", "copy"):
            for table in ("rows", "segments", "counters", "sums"):
                mine, theirs = chain[part][table], other[part][table]
                assert len(mine) == len(theirs), (name, part, table)
                for a, b in zip(mine, theirs, strict=True):
                    assert a == b, (name, part, table)
        assert chain["answers"] == other["answers"], name
    # The running sums every backend wrote equal the domain's fold over the stored rows, and a whole
    # file gets the same sums as the appends that built it.
    for result in (chain, portable, embedded):
        for part in ("session", "copy"):
            assert result[part]["sums"] == result[part]["fresh"]
            assert len(result[part]["sums"]) == 19  # every entry in the tree (one line has no id)
    assert chain["copy"]["sums"] == chain["session"]["sums"]
    assert any(s[4] is not None for s in chain["session"]["sums"])  # usage anchors were recorded
    answers = chain["answers"]
    # What the scenario refused, and why: the refusals name the entry and the field.
    stored = [2, 1, 2, 2, 3, 1, 2, 1, 5]
    assert answers[:9] == [f"stored {n}" for n in stored]
    assert answers[9] == "InvalidEntries: entry 0: id 'u1' already exists in this session"
    assert answers[10] == "InvalidEntries: entry 0: parent 'nope' is not an entry of this session"
    assert answers[11] == "InvalidEntries: entry 1: id 'a1' already exists in this session"
    assert answers[12].startswith("AppendConflict: ")
    assert answers[13] == "InvalidSessionFile: entry 0: 'id' is longer than 255 characters"
    assert answers[14] == "InvalidSessionFile: entry 0: 'customType' is longer than 255 characters"
    assert answers[15] == "InvalidSessionFile: entry 0: 'label' is longer than 1000 characters"
    assert answers[16] == "InvalidSessionFile: line 1: 'id' is longer than 255 characters"
    assert answers[17].startswith("QuotaExceeded: The session holds 19 entries; 1 more would pass")
    assert answers[18].startswith("QuotaExceeded: Storing these entries (")
    assert answers[19].startswith("QuotaExceeded: Storing these entries (")
    assert answers[20].startswith("QuotaExceeded: The session holds 19 entries")
    assert answers[21] == "stored 1"
    rows = chain["session"]["rows"]
    assert len(rows) == 20 and chain["session"]["counters"][4] == 20
    # A whole file lands where its appends did (its segments are numbered in tree order instead).
    segment = 9
    assert [r[:segment] + r[segment + 1 : -1] for r in chain["copy"]["rows"]] == [
        r[:segment] + r[segment + 1 : -1] for r in rows
    ]
    # Every row names who wrote it, on every backend (compared above): the user, their device, or the
    # importer of verbatim lines; a copy keeps the author it was told to keep and is the copier's else.
    authors = [r[-1] for r in rows]
    assert set(authors) == {"writer", "writer via laptop", "imported by writer"}
    assert [r[-1] for r in chain["copy"]["rows"]] == [authors[0]] + ["copier"] * (len(rows) - 1)


def test_the_chain_statements_fit_psycopgs_statement_cache() -> None:
    # Past 4096 characters psycopg converts the statement again on every append (CPU under no lock,
    # but on every writer's path): keep the one-round-trip statement within its cache.
    from psycopg._queries import MAX_CACHED_STATEMENT_LENGTH

    from sessions_app.services.leaf_append import _STATEMENTS

    assert max(len(sql) for sql in _STATEMENTS.values()) <= MAX_CACHED_STATEMENT_LENGTH
