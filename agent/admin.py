"""Admin audit of agent runs: who asked, what happened, and every recovery along the way."""

from __future__ import annotations

import json
from typing import Any

from django.contrib import admin
from django.utils.html import format_html

from agent.models import AgentRun
from sessions_app.facade import LiveSessionRowsAdmin


@admin.register(AgentRun)
class AgentRunAdmin(LiveSessionRowsAdmin):
    list_display = ("public_id", "session", "requested_by", "provider", "status", "recoveries", "created_at")
    list_filter = ("status",)
    search_fields = ("public_id", "prompt", "session__name", "session__pi_id", "requested_by__username")
    list_select_related = ("session", "requested_by", "provider")
    readonly_fields = [f.name for f in AgentRun._meta.fields if f.name != "id"] + ["recovery_log"]
    exclude = ("recovery_events",)

    def has_add_permission(self, request: Any) -> bool:
        return False

    @admin.display(description="recoveries")
    def recoveries(self, run: AgentRun) -> str:
        kinds = [str(e.get("kind")) for e in run.recovery_events or []]
        return ", ".join(kinds) or "—"

    @admin.display(description="recovery events")
    def recovery_log(self, run: AgentRun) -> str:
        return format_html("<pre>{}</pre>", json.dumps(run.recovery_events, indent=2, ensure_ascii=False))
