"""``manage.py pi_sync --server URL --token TOKEN [DIR]``: stream local Pi sessions into a piweb server."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from sessions_app.sync_client import SyncClient


class Command(BaseCommand):
    help = "Follow ~/.pi/agent/sessions/**/*.jsonl and push new lines to a piweb server."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("directory", nargs="?", default=str(Path.home() / ".pi" / "agent" / "sessions"))
        parser.add_argument("--server", required=True, help="piweb base URL, e.g. http://127.0.0.1:8000")
        parser.add_argument("--token", required=True, help="your API token (admin → Tokens, or /api/token/)")
        parser.add_argument("--state", default=str(Path.home() / ".pi" / "piweb-sync-state.json"))
        parser.add_argument("--interval", type=float, default=1.0, help="seconds between polls")
        parser.add_argument("--once", action="store_true", help="push what is new and exit")

    def handle(self, *args: Any, **options: Any) -> None:
        client = SyncClient(
            server=options["server"],
            token=options["token"],
            root=Path(options["directory"]),
            state_path=Path(options["state"]),
        )
        if options["once"]:
            self.stdout.write(f"{client.sync_once()} lines pushed")
            return
        stop = threading.Event()
        try:
            client.run(interval=options["interval"], stop=stop)
        except KeyboardInterrupt:
            stop.set()
