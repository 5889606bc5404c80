"""What other apps may use of ``sessions_app``: they import from here and nowhere else in it.

Re-exports only; the names live in the modules named below. ``make lint`` keeps other apps to this module.
"""

from __future__ import annotations

from sessions_app import access, conditional, link_scope, services, signals, verbs
from sessions_app.access import Access, NotSignedIn, still_writable
from sessions_app.admin import DeletesThroughUseCase, LiveSessionRowsAdmin
from sessions_app.api.serializers import (
    ErrorSerializer,
    NavigateResultSerializer,
    NavigateSerializer,
    OperationSerializer,
    skipped_payload,
)
from sessions_app.api.views import LinkReadableView, SessionAPIView
from sessions_app.attribution import Author, author_of, run_author
from sessions_app.file_steps import rewritten as file_lines_rewritten
from sessions_app.list_filters import (
    FilterError,
    SessionFilter,
    register_leading_order,
    register_search_reader,
    register_session_filter,
    register_state,
)
from sessions_app.models import (
    ApiToken,
    ChatSession,
    Entry,
    EntrySearch,
    Segment,
    SessionShare,
    ShareLink,
    ToolUse,
)
from sessions_app.page_parts import (
    Badge,
    ListPart,
    PagePart,
    register_badges,
    register_list_part,
    register_page_part,
    session_team_ids,
    viewer_roles,
)
from sessions_app.queries import ContextView, EntryNotFound, context_for_leaf, find_entry, path_rows
from sessions_app.services import (
    AppendConflict,
    InvalidSessionFile,
    QuotaExceeded,
    append_entries,
    delete_session,
    set_leaf,
)
from sessions_app.services.errors import SharingRefused
from sessions_app.services.importing import import_jsonl, refresh_statistics
from sessions_app.services.rows import create_session_row
from sessions_app.services.sharing import find_link, share_by_team_defaults
from sessions_app.services.store import check_quotas, entry_store, line_bytes
from sessions_app.services.tool_index import refresh_calls
from sessions_app.signals import connect_entries_stored
from sessions_app.state_cache import bump_revision, cached, state_key
from sessions_app.text_search import register_extra_hits

__all__ = [
    "Access",
    "ApiToken",
    "AppendConflict",
    "Author",
    "Badge",
    "ChatSession",
    "ContextView",
    "DeletesThroughUseCase",
    "Entry",
    "EntryNotFound",
    "EntrySearch",
    "ErrorSerializer",
    "FilterError",
    "InvalidSessionFile",
    "LinkReadableView",
    "ListPart",
    "LiveSessionRowsAdmin",
    "NavigateResultSerializer",
    "NavigateSerializer",
    "NotSignedIn",
    "OperationSerializer",
    "PagePart",
    "QuotaExceeded",
    "Segment",
    "SessionAPIView",
    "SessionFilter",
    "SessionShare",
    "ShareLink",
    "SharingRefused",
    "ToolUse",
    "access",
    "append_entries",
    "author_of",
    "bump_revision",
    "cached",
    "check_quotas",
    "conditional",
    "connect_entries_stored",
    "context_for_leaf",
    "create_session_row",
    "delete_session",
    "entry_store",
    "file_lines_rewritten",
    "find_entry",
    "find_link",
    "import_jsonl",
    "line_bytes",
    "link_scope",
    "path_rows",
    "refresh_calls",
    "refresh_statistics",
    "register_badges",
    "register_extra_hits",
    "register_leading_order",
    "register_list_part",
    "register_page_part",
    "register_search_reader",
    "register_session_filter",
    "register_state",
    "run_author",
    "services",
    "session_team_ids",
    "set_leaf",
    "share_by_team_defaults",
    "signals",
    "skipped_payload",
    "state_key",
    "still_writable",
    "verbs",
    "viewer_roles",
]
