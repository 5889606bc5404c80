"""Where governance listens to sessions_app and discussion (which never import it)."""

from __future__ import annotations

from discussion.facade import signals as discussion_signals
from governance.link_open_log import record_link_open
from governance.policy import check_sharing
from governance.scanning import scan_after_commit, scan_comment
from sessions_app.facade import signals

signals.entries_committed.connect(scan_after_commit, dispatch_uid="governance-scan")
signals.sharing_requested.connect(check_sharing, dispatch_uid="governance-sharing-policy")
signals.link_opened.connect(record_link_open, dispatch_uid="governance-link-views")
discussion_signals.comment_written.connect(scan_comment, dispatch_uid="governance-scan-comments")
