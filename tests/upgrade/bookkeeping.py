"""What a user and an operator see of a session's bookkeeping, for comparing an upgraded session with a
fresh import of the same lines: quota bytes, the context panel's sums, each answer's cost with its path
totals, the usage pages' day and model totals."""

from __future__ import annotations

from typing import Any

from audit.models import SessionUsage
from costs.models import MessageCost, UsageDay
from sessions_app.models import ChatSession, EntrySums


def bookkeeping(session_id: int) -> dict[str, Any]:
    return {
        "stored_bytes": ChatSession.with_deleted.get(pk=session_id).stored_bytes,
        "sums": list(
            EntrySums.objects.filter(session_id=session_id)
            .order_by("seq")
            .values_list("seq", "tokens", "all_tokens", "messages", "usage_seq")
        ),
        "costs": list(
            MessageCost.objects.filter(session_id=session_id)
            .order_by("seq")
            .values_list("seq", "model", "day", "input", "output", "cost", "path_cost", "path_tokens")
        ),
        "days": sorted(
            UsageDay.objects.filter(session_id=session_id).values_list(
                "day", "model", "copied", "input", "output", "cost", "messages"
            )
        ),
        "usage": sorted(
            SessionUsage.objects.filter(session_id=session_id).values_list(
                "model", "input", "output", "cost", "messages"
            )
        ),
    }
