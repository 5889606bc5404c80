"""The import and export management commands."""

from __future__ import annotations

from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from sessions_app.models import ChatSession
from tests.factories import HEADER, session_file, small_tree

pytestmark = pytest.mark.django_db


def test_import_folder_reports_each_file_and_keeps_going(tmp_path: Path, user: Any) -> None:
    owner = user("alice")
    nested = tmp_path / "--w--"
    nested.mkdir()
    (nested / "good.jsonl").write_bytes(session_file(small_tree()))
    (nested / "bad.jsonl").write_bytes(b'{"type":"message"}\n')
    (tmp_path / "other.jsonl").write_bytes(session_file([], {**HEADER, "id": "other"}))
    out, err = StringIO(), StringIO()
    call_command("import_pi_sessions", str(tmp_path), "--user", "alice", stdout=out, stderr=err)
    assert "good.jsonl: created session" in out.getvalue() and "appended 6" in out.getvalue()
    assert "bad.jsonl: error:" in err.getvalue() and "1 file(s) could not be imported" in err.getvalue()
    assert ChatSession.objects.filter(owner=owner).count() == 2
    again = StringIO()
    call_command("import_pi_sessions", str(nested / "good.jsonl"), "--user", "alice", stdout=again)
    assert "updated session" in again.getvalue() and "appended 0" in again.getvalue()


def test_import_needs_an_existing_user(tmp_path: Path, db: None) -> None:
    with pytest.raises(CommandError, match="No user named 'nobody'"):
        call_command("import_pi_sessions", str(tmp_path), "--user", "nobody")


def test_export_by_pi_id_or_pk_to_a_file(tmp_path: Path, user: Any) -> None:
    user("bob")
    source = tmp_path / "s.jsonl"
    source.write_bytes(session_file(small_tree()))
    call_command("import_pi_sessions", str(source), "--user", "bob", stdout=StringIO())
    session = ChatSession.objects.get()
    for key in ("sess-1", str(session.pk)):
        target = tmp_path / f"out-{key}.jsonl"
        call_command("export_pi_session", key, "-o", str(target), stderr=StringIO())
        assert target.read_bytes() == source.read_bytes()
    with pytest.raises(CommandError, match="No session"):
        call_command("export_pi_session", "missing")
