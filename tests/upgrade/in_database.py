"""Steps of the upgrade test run in a child process on the database it upgrades (``DATABASE_URL``).

``python -m tests.upgrade.in_database <step> [args]``; each step prints one JSON line last:

- ``migrate-to <app> <migration>``: migrate to that state (back, when the database is newer);
- ``seed <sessions> <turns>``: a user, a priced model and that many sessions of ``turns`` questions and
  answers, imported by this release; prints their ids;
- ``compare <id>...``: import each session's stored lines again as a new session and print both
  sessions' bookkeeping (``tests/upgrade/bookkeeping.py``), by id.
"""

from __future__ import annotations

import json
import sys

import django


def main(argv: list[str]) -> object:
    django.setup()
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    step, args = argv[0], argv[1:]
    if step == "migrate-to":
        executor = MigrationExecutor(connection)
        executor.migrate([(args[0], args[1])])
        return "ok"
    from django.contrib.auth import get_user_model

    from core.actors import command
    from providers.models import LLMProvider
    from sessions_app import services
    from sessions_app.models import ChatSession, Entry
    from tests.factories import HEADER, conversation, session_file
    from tests.upgrade.bookkeeping import bookkeeping

    if step == "seed":
        owner = get_user_model().objects.create_user(username="olga", password="pw-for-tests")
        LLMProvider.objects.create(
            name="priced",
            base_url="http://127.0.0.1:1/v1",
            provider="p",
            model_id="m",
            cost_input=3,
            cost_output=15,
        )
        ids = []
        for n in range(int(args[0])):
            data = session_file(conversation(int(args[1])), {**HEADER, "id": f"seeded-{n}"})
            ids.append(services.import_jsonl(actor=command("seed"), owner=owner, data=data).session.pk)
        return ids
    if step == "compare":
        out: dict[str, object] = {}
        for pk in map(int, args):
            session = ChatSession.with_deleted.get(pk=pk)
            header = {**json.loads(session.header_raw), "id": f"{session.pi_id}-fresh"}
            lines = [json.dumps(header, separators=(",", ":"))]
            lines += list(Entry.objects.filter(session_id=pk).order_by("seq").values_list("raw", flat=True))
            data = ("\n".join(lines) + "\n").encode()
            fresh = services.import_jsonl(actor=command("compare"), owner=session.owner, data=data).session
            out[str(pk)] = [bookkeeping(pk), bookkeeping(fresh.pk)]
        return out
    raise SystemExit(f"unknown step {step!r}")


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1:]), default=str))
