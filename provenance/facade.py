"""What other apps may use of ``provenance``: they import from here and nowhere else in it.

Re-exports only; the names live in the modules named below. ``make lint`` keeps other apps to this module.
"""

from __future__ import annotations

from provenance.recording import refresh_entry
from provenance.services import GitState, RunCommits, note_workspace, record_run_commits

__all__ = ["GitState", "RunCommits", "note_workspace", "record_run_commits", "refresh_entry"]
