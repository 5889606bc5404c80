"""What a run tells the apps that listen (the audit), so the agent imports none of them."""

from django.dispatch import Signal

__all__ = ["abort_requested", "attempts_omitted", "run_closed"]

# A run appended ``context_edit`` entries that omit a failed attempt: ``edit_ids``, ``run``, ``why``.
# Sent inside the transaction that appends them, so a listener's rows commit with them.
attempts_omitted = Signal()

# A run ended and its row was saved: ``run``. Sent inside the transaction that saves it.
run_closed = Signal()

# Someone asked a run to stop: ``run``. Sent after the request commits (a run on a runner is told there).
abort_requested = Signal()
