"""Session write use cases, one module per use case.

Each public function validates its input, checks the actor's right through ``access``, writes in one
transaction with its action-log row, and announces the change only after commit. Adapters (REST views,
pages, consumers, tasks, the sync endpoint, management commands) parse input and call one of them.
The names below are the public surface; the modules' other names are steps of these use cases.
"""

from __future__ import annotations

from sessions_app.services.appending import append_entries
from sessions_app.services.branching import ForkOutcome, clone_session, fork_session
from sessions_app.services.errors import (
    AppendConflict,
    InvalidEntries,
    InvalidSessionFile,
    QuotaExceeded,
    SharingRefused,
    TeamConflict,
)
from sessions_app.services.exporting import (
    DOCUMENT_FORMATS,
    DOCUMENT_SCOPES,
    Document,
    export_at_leaf,
    export_document,
    export_filename,
    export_jsonl,
    export_session,
)
from sessions_app.services.importing import ImportResult, import_jsonl, import_stream
from sessions_app.services.labels import set_label
from sessions_app.services.lifecycle import create_session, delete_owner, delete_session, rename_session
from sessions_app.services.navigation import NavigationOutcome, navigate_without_summary, set_leaf
from sessions_app.services.purging import purge_deleted_sessions, purge_session
from sessions_app.services.session_settings import set_compaction_settings
from sessions_app.services.sharing import (
    InvalidSharing,
    create_share_link,
    revoke_share_link,
    share_with_team,
    unshare_with_team,
)

__all__ = [
    "DOCUMENT_FORMATS",
    "DOCUMENT_SCOPES",
    "AppendConflict",
    "Document",
    "ForkOutcome",
    "ImportResult",
    "InvalidEntries",
    "InvalidSessionFile",
    "InvalidSharing",
    "NavigationOutcome",
    "QuotaExceeded",
    "SharingRefused",
    "TeamConflict",
    "append_entries",
    "clone_session",
    "create_session",
    "create_share_link",
    "delete_owner",
    "delete_session",
    "export_at_leaf",
    "export_document",
    "export_filename",
    "export_jsonl",
    "export_session",
    "fork_session",
    "import_jsonl",
    "import_stream",
    "navigate_without_summary",
    "purge_deleted_sessions",
    "purge_session",
    "rename_session",
    "revoke_share_link",
    "set_compaction_settings",
    "set_label",
    "set_leaf",
    "share_with_team",
    "unshare_with_team",
]
