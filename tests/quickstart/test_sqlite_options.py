"""The embedded SQLite database as `make run` configures it: readers never hold writers off.

The web process streams exports and tree pages while the worker writes run entries; with SQLite's
default rollback journal a reader that is still reading makes every writer wait, and after the busy
timeout the writer answers "database is locked".
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.backends.utils import CursorWrapper
from django.db.utils import ConnectionHandler

from piweb import config


@contextlib.contextmanager
def write_transaction(connection: BaseDatabaseWrapper) -> Iterator[CursorWrapper]:
    """What ``transaction.atomic()`` does on these connections: BEGIN in the configured mode, COMMIT."""
    connection.ensure_connection()
    connection.set_autocommit(False, force_begin_transaction_with_broken_autocommit=True)
    try:
        with connection.cursor() as cursor:
            yield cursor
        connection.commit()
    except BaseException:
        connection.rollback()
        raise
    finally:
        connection.set_autocommit(True)


@pytest.fixture
def connections(tmp_path: Path, django_db_blocker: Any) -> Iterator[ConnectionHandler]:
    """Two connections to one fresh SQLite file, configured as `make run` configures them."""
    settings = config.database_config({"PIWEB_DATA_DIR": str(tmp_path)}, base_dir=Path("/nowhere"))
    # A short busy timeout for the test: a writer that would be held off fails within a second.
    quick: dict[str, Any] = {**settings, "OPTIONS": {**settings["OPTIONS"], "timeout": 1}}
    handler = ConnectionHandler({"default": dict(quick), "worker": dict(quick)})
    # These connections are the test's own, not the test database pytest-django guards.
    with django_db_blocker.unblock():
        with handler["default"].cursor() as cursor:
            cursor.execute("CREATE TABLE entry (id INTEGER PRIMARY KEY, raw TEXT)")
            rows = [(f"line {i}",) for i in range(5000)]
            cursor.executemany("INSERT INTO entry (raw) VALUES (%s)", rows)
        yield handler
        handler.close_all()


def test_the_embedded_database_file_is_under_the_data_folder(tmp_path: Path) -> None:
    settings = config.database_config({"PIWEB_DATA_DIR": str(tmp_path)}, base_dir=Path("/nowhere"))
    assert settings["NAME"] == str(tmp_path.resolve() / "piweb.sqlite3")


def test_a_sqlite_database_url_gets_the_same_concurrency_options() -> None:
    settings = config.database_config(
        {"DATABASE_URL": "sqlite:////srv/piweb/db.sqlite3"}, base_dir=Path("/x")
    )
    assert settings["OPTIONS"]["transaction_mode"] == "IMMEDIATE"
    assert "journal_mode=WAL" in settings["OPTIONS"]["init_command"]


def test_a_writer_commits_while_a_long_read_is_still_open(connections: ConnectionHandler) -> None:
    web, worker = connections["default"], connections["worker"]
    reading = web.cursor()
    reading.execute("SELECT raw FROM entry ORDER BY id")
    assert reading.fetchone() == ("line 0",)  # the read is open: the rest is not fetched yet

    with write_transaction(worker) as cursor:
        cursor.execute("INSERT INTO entry (raw) VALUES (%s)", ["written during the read"])

    assert len(reading.fetchall()) == 4999  # the reader still sees its own snapshot
    reading.close()
    with web.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM entry")
        assert cursor.fetchone() == (5001,)


def test_two_writers_queue_for_the_lock_instead_of_failing(connections: ConnectionHandler) -> None:
    web = connections["default"]
    holding = threading.Event()

    def long_write() -> None:
        # Connections belong to one thread: this is the worker's own.
        worker = connections["worker"]
        with write_transaction(worker) as cursor:
            cursor.execute("INSERT INTO entry (raw) VALUES (%s)", ["worker"])
            holding.set()
            time.sleep(0.5)
        worker.close()

    thread = threading.Thread(target=long_write)
    thread.start()
    assert holding.wait(5)
    # The transaction starts while the other one holds the write lock and waits for it.
    with write_transaction(web) as cursor:
        cursor.execute("SELECT count(*) FROM entry")
        seen = cursor.fetchone()[0]
        cursor.execute("INSERT INTO entry (raw) VALUES (%s)", ["web"])
    thread.join()
    assert seen == 5001  # it began after the other writer committed, so it saw that row
