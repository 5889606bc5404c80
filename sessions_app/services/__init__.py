"""Session write use cases, one module per use case.

Each public function validates its input, checks the actor's right through ``access``, writes in one
transaction with its action-log row, and announces the change only after commit. Adapters (REST views,
pages, consumers, tasks, the sync endpoint, management commands) parse input and call one of them.
The names below are the public surface; the modules' other names are steps of these use cases.
"""

from __future__ import annotations

from sessions_app.services.actions import Action, record_action
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
from sessions_app.services.sync import (
    Cursor,
    SyncConflict,
    SyncCursorMismatch,
    SyncResult,
    sync_lines,
    sync_state,
)
from sessions_app.services.teams import (
    accept_invitation,
    change_role,
    create_team,
    decline_invitation,
    invite_member,
    pending_invitations,
    remove_member,
    sent_invitations,
    set_team_default_share,
    sync_team_memberships,
    withdraw_invitation,
)
from sessions_app.services.tokens import create_api_token, revoke_api_token

__all__ = [
    "DOCUMENT_FORMATS",
    "DOCUMENT_SCOPES",
    "Action",
    "AppendConflict",
    "Cursor",
    "Document",
    "ForkOutcome",
    "ImportResult",
    "InvalidEntries",
    "InvalidSessionFile",
    "InvalidSharing",
    "NavigationOutcome",
    "QuotaExceeded",
    "SharingRefused",
    "SyncConflict",
    "SyncCursorMismatch",
    "SyncResult",
    "TeamConflict",
    "accept_invitation",
    "append_entries",
    "change_role",
    "clone_session",
    "create_api_token",
    "create_session",
    "create_share_link",
    "create_team",
    "decline_invitation",
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
    "invite_member",
    "navigate_without_summary",
    "pending_invitations",
    "purge_deleted_sessions",
    "purge_session",
    "record_action",
    "remove_member",
    "rename_session",
    "revoke_api_token",
    "revoke_share_link",
    "sent_invitations",
    "set_compaction_settings",
    "set_label",
    "set_leaf",
    "set_team_default_share",
    "share_with_team",
    "sync_lines",
    "sync_state",
    "sync_team_memberships",
    "unshare_with_team",
    "withdraw_invitation",
]
