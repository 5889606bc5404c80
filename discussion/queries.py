"""The read side of discussions, always through a viewer's grant: a path or frozen link sees only the
comments on the entries in its scope, and a frozen link only those written before it was made.

A session page asks for counts of the nodes it draws and for one node's threads when it is opened, so a
session with many comments opens as fast as one without.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from django.contrib.auth import get_user_model
from django.db.models import Count, Q, QuerySet

from discussion.domain.text import snippet
from discussion.models import Comment, CommentRevision, Notification
from documents import rendering
from sessions_app.facade import Access, ChatSession, link_scope

__all__ = [
    "MAX_SEARCH_HITS",
    "as_of",
    "comment_counts",
    "comment_hits",
    "export_threads",
    "frozen_at",
    "inbox_of",
    "serialize_comment",
    "threads_of",
    "unread_count",
    "visible_comments",
]

MAX_SEARCH_HITS = 50


def frozen_at(grant: Access) -> datetime | None:
    """Return the moment a frozen link shows, or None for a live view."""
    return grant.link.created_at if grant.link is not None and grant.link.frozen_seq is not None else None


def visible_comments(grant: Access) -> QuerySet[Comment]:
    """Return the session's comments this viewer may see (for a frozen link, use ``as_of`` on the rows)."""
    query = Comment.objects.filter(session=grant.session)
    if grant.restricted:
        query = query.filter(entry_id__in=link_scope.scoped_entries(grant).values("entry_id"))
    cutoff = frozen_at(grant)
    if cutoff is not None:
        # A frozen link shows the session as it was when the link was made: later threads are not part of it.
        query = query.filter(created_at__lte=cutoff)
    return query


def as_of(rows: list[Comment], grant: Access) -> list[Comment]:
    """Give a frozen link the comments as they read at its moment: the text before later edits, a thread
    resolved later still open. A comment deleted later stays deleted: its author took it back."""
    cutoff = frozen_at(grant)
    if cutoff is None:
        return rows
    later = [r.pk for r in rows if r.edited_at is not None and r.edited_at > cutoff]
    revisions: dict[int, list[CommentRevision]] = {}
    for revision in CommentRevision.objects.filter(comment_id__in=later).order_by("replaced_at", "pk"):
        revisions.setdefault(revision.comment_id, []).append(revision)
    for row in rows:
        history = revisions.get(row.pk, [])
        then = next((r for r in history if r.replaced_at > cutoff), None)
        if then is not None:
            row.body, row.html, row.mentions = then.body, then.html, list(then.mentions)
            earlier = [r.replaced_at for r in history if r.replaced_at <= cutoff]
            row.edited_at = earlier[-1] if earlier else None
        if row.resolved_at is not None and row.resolved_at > cutoff:
            row.resolved_at, row.resolved_by = None, ""
    return rows


def comment_counts(grant: Access, entry_ids: Iterable[str] | None = None, *, open_only: bool = False) -> dict:
    """Return ``{entryId: {"comments": n, "open": threads still open}}`` for commented entries.

    ``entry_ids`` limits the answer to those entries (the nodes a page draws); ``open_only`` to entries
    with an open thread (the tree's "open threads" filter).
    """
    query = visible_comments(grant)
    if entry_ids is not None:
        query = query.filter(entry_id__in=list(entry_ids))
    cutoff = frozen_at(grant)
    unresolved = Q(resolved_at__isnull=True)
    if cutoff is not None:
        unresolved |= Q(resolved_at__gt=cutoff)
    rows = (
        query.values("entry_id")
        .annotate(
            comments=Count("pk", filter=Q(deleted_at__isnull=True)),
            open=Count("pk", filter=Q(parent__isnull=True, deleted_at__isnull=True) & unresolved),
        )
        .order_by()
    )
    if open_only:
        rows = rows.filter(open__gt=0)
    return {r["entry_id"]: {"comments": r["comments"], "open": r["open"]} for r in rows if r["comments"]}


def serialize_comment(comment: Comment, viewer_id: int | None = None) -> dict[str, Any]:
    """Return a comment as the API shows it: a deleted one keeps its place, not its text."""
    deleted = comment.deleted_at is not None
    body: dict[str, Any] = {
        "id": comment.pk,
        "entryId": comment.entry_id,
        "threadId": comment.root_id,
        "parentId": comment.parent_id,
        "author": comment.author_name,
        "body": "" if deleted else comment.body,
        "html": "" if deleted else (comment.html or rendering.render_markdown(comment.body)),
        "mentions": [] if deleted else list(comment.mentions),
        "createdAt": comment.created_at.isoformat(),
        "editedAt": comment.edited_at.isoformat() if comment.edited_at else None,
        "deleted": deleted,
        "mine": viewer_id is not None and comment.author_id == viewer_id and not deleted,
    }
    if comment.parent_id is None:
        body["resolved"] = comment.resolved_at is not None
        body["resolvedBy"] = comment.resolved_by or None
        body["resolvedAt"] = comment.resolved_at.isoformat() if comment.resolved_at else None
    return body


def threads_of(grant: Access, entry_id: str, viewer_id: int | None = None) -> list[dict[str, Any]]:
    """Return the threads on one entry, oldest first, each root with its replies in order."""
    rows = list(visible_comments(grant).filter(entry_id=entry_id).order_by("created_at", "pk"))
    return _threads(as_of(rows, grant), viewer_id)


def _threads(rows: list[Comment], viewer_id: int | None) -> list[dict[str, Any]]:
    threads: dict[int, dict[str, Any]] = {}
    for row in rows:
        if row.parent_id is None:
            threads[row.pk] = {**serialize_comment(row, viewer_id), "replies": []}
    for row in rows:
        if row.parent_id is not None and row.parent_id in threads:
            threads[row.parent_id]["replies"].append(serialize_comment(row, viewer_id))
    return list(threads.values())


def export_threads(grant: Access) -> list[dict[str, Any]]:
    """Return every visible thread of the session, by entry then time (the export on request)."""
    rows = list(visible_comments(grant).order_by("entry_id", "created_at", "pk"))
    return _threads(as_of(rows, grant), None)


def comment_hits(grant: Access, text: str) -> list[dict[str, Any]]:
    """Return the visible comments whose text holds ``text`` (case-insensitive), newest first."""
    words = text.strip()
    if not words:
        return []
    live = visible_comments(grant).filter(deleted_at__isnull=True)
    cutoff = frozen_at(grant)
    if cutoff is None:
        rows = list(live.filter(body__icontains=words).order_by("-created_at", "-pk")[:MAX_SEARCH_HITS])
    else:
        # Through a frozen link a comment edited later is searched in the words it had then.
        unchanged = live.filter(Q(edited_at__isnull=True) | Q(edited_at__lte=cutoff), body__icontains=words)
        changed = as_of(list(live.filter(edited_at__gt=cutoff)), grant)
        needle = words.casefold()
        rows = [*unchanged, *(c for c in changed if needle in c.body.casefold())]
        rows = sorted(rows, key=lambda c: (c.created_at, c.pk), reverse=True)[:MAX_SEARCH_HITS]
    return [
        {
            "id": c.pk,
            "entryId": c.entry_id,
            "threadId": c.root_id,
            "author": c.author_name,
            "snippet": snippet(c.body),
        }
        for c in rows
    ]


def inbox_of(user: Any) -> QuerySet[Notification]:
    """Return the user's inbox lines on sessions they can still read (a lost share hides its lines)."""
    readable = ChatSession.objects.visible_to(user).values("pk")
    return Notification.objects.filter(recipient=user, session__in=readable)


def unread_count(user_id: int) -> int:
    """Return how many of the user's inbox lines are unread."""
    # Every page's header asks: most people have nothing unread, which the inbox index answers alone.
    if not Notification.objects.filter(recipient_id=user_id, read_at__isnull=True).exists():
        return 0
    user = get_user_model().objects.filter(pk=user_id, is_active=True).first()
    return inbox_of(user).filter(read_at__isnull=True).count() if user is not None else 0
