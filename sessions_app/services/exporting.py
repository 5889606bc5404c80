"""Export a session as the Pi JSONL file it was imported from (or the part a share link shows).

The download resumes in Pi where piweb stands: at the session's leaf, or at a node the user picked. Pi
resumes a file at its last line. When that line is not the wanted leaf (the leaf was moved in piweb
without a new entry, a fork copied a whole subtree, or the user continues from another node), one
``custom`` marker line under the leaf is added to the download. It is not stored: when Pi continues the
file and ``piweb-sync push`` sends it back, the marker arrives as an ordinary entry.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.utils.text import slugify

from actionlog.facade import record_action
from core.actors import Actor
from documents.export import DocumentInfo, html_document, markdown_document, tree_order
from pitree.jsjson import js_stringify, parse_json
from pitree.leaf_marker import deterministic_id, leaf_marker
from sessions_app import access, attribution, link_scope, queries, signals
from sessions_app.models import ChatSession, Entry, EntryAuthor
from sessions_app.services.errors import InvalidEntries
from sessions_app.verbs import Action

__all__ = [
    "DOCUMENT_FORMATS",
    "DOCUMENT_SCOPES",
    "Document",
    "document_filename",
    "export_at_leaf",
    "export_document",
    "export_filename",
    "export_jsonl",
    "export_session",
    "marker_for",
    "pi_session_path",
]


def export_session(*, grant: access.Access, actor: Actor, leaf: str | None = None) -> Iterable[bytes]:
    """Return the file this viewer may download (ending at ``leaf``), recording the export in the log."""
    # An unknown leaf is refused here, before anything is logged.
    lines = link_scope.scoped_export(grant) if grant.restricted else export_at_leaf(grant.session, leaf)
    with transaction.atomic():
        record_action(actor=actor, action=Action.EXPORT, session=grant.session, via_link=grant.via_link)
    return lines


DOCUMENT_FORMATS = {
    "markdown": ("md", "text/markdown; charset=utf-8"),
    "html": ("html", "text/html; charset=utf-8"),
}
DOCUMENT_SCOPES = ("branch", "tree")


@dataclass(frozen=True, slots=True)
class Document:
    """A readable export: its file name, media type and body (streamed)."""

    filename: str
    content_type: str
    body: Iterable[bytes]


def export_document(
    *, grant: access.Access, actor: Actor, format: str, scope: str, at: str | None = None
) -> Document:
    """Return the branch (root → ``at``, default this viewer's leaf) or the whole visible tree as
    Markdown or HTML, recording the export in the log.

    A link holder gets only what the link shows: ``at`` must be an entry the link sees (otherwise "not
    found", nothing logged) and the tree is the link's part of it.
    """
    if format not in DOCUMENT_FORMATS:
        raise InvalidEntries(f"format: choose one of jsonl, {', '.join(DOCUMENT_FORMATS)} (got {format!r})")
    if scope not in DOCUMENT_SCOPES:
        raise InvalidEntries(f"scope: choose one of {', '.join(DOCUMENT_SCOPES)} (got {scope!r})")
    session = grant.session
    leaf_id = at if at is not None else grant.leaf_id()
    rows: list[tuple[int, str, int | None]] = []  # seq, raw line, author row
    if scope == "branch":
        if leaf_id is not None:
            leaf = grant.entry(leaf_id)  # EntryNotFound (404) for an entry outside the viewer's scope
            rows = queries.path_rows(session, leaf, fields=("seq", "raw", "author_id"))
    else:
        if at is not None:
            raise InvalidEntries("at: only a branch export ends at an entry; leave it out with scope=tree")
        query = (
            link_scope.scoped_entries(grant) if grant.restricted else Entry.objects.filter(session=session)
        )
        shape = list(query.values_list("seq", "entry_id", "parent_id"))
        found = {seq: (seq, raw, author) for seq, raw, author in query.values_list("seq", "raw", "author_id")}
        rows = [found[seq] for seq in tree_order(shape)]
    parsed = [(seq, parse_json(raw), author) for seq, raw, author in rows]
    kept = [(seq, payload, author) for seq, payload, author in parsed if isinstance(payload, dict)]
    info = DocumentInfo(
        title=session.title,
        session_id=session.pi_id,
        cwd=session.cwd,
        scope=scope,
        # A tree marks the branch this viewer stands on.
        leaf_id=leaf_id,
        created=session.pi_timestamp,
        authors=_authors(kept),
        costs=_costs(session, kept),
    )
    payloads = (payload for _, payload, _ in kept)
    build = markdown_document if format == "markdown" else html_document
    extension, content_type = DOCUMENT_FORMATS[format]
    with transaction.atomic():
        record_action(
            actor=actor,
            action=Action.EXPORT,
            session=session,
            via_link=grant.via_link,
            format=format,
            scope=scope,
        )
    body = (piece.encode("utf-8", errors="surrogatepass") for piece in build(info, payloads))
    filename = document_filename(session.title, session.pi_id, scope=scope, extension=extension)
    return Document(filename=filename, content_type=content_type, body=body)


def document_filename(title: str, pi_id: str, *, scope: str, extension: str) -> str:
    """Name a readable export after the session's title, as a file name any system accepts
    (``cold-cache-investigation.html``); the whole tree says so (``….tree.html``)."""
    stem = (
        slugify(title, allow_unicode=True)[:80].strip("-_") or slugify(f"session {pi_id}")[:80] or "session"
    )
    return f"{stem}.tree.{extension}" if scope == "tree" else f"{stem}.{extension}"


def _authors(rows: list[tuple[int, dict[str, Any], int | None]]) -> dict[str, str]:
    """Each entry's author as its card on the page names it, by entry id."""
    wanted = {author for _, _, author in rows if author is not None}
    names = {row.pk: attribution.byline(row.to_domain()) for row in EntryAuthor.objects.filter(pk__in=wanted)}
    return {
        str(payload.get("id")): names[author]
        for _, payload, author in rows
        if author in names and payload.get("id")
    }


def _costs(session: ChatSession, rows: list[tuple[int, dict[str, Any], int | None]]) -> dict[str, float]:
    """What piweb charged each assistant message (recorded, or priced in the admin), by entry id."""
    assistant = {
        seq: str(payload.get("id"))
        for seq, payload, _ in rows
        if payload.get("type") == "message"
        and isinstance(payload.get("message"), dict)
        and payload["message"].get("role") == "assistant"
    }
    if not assistant:
        return {}
    charged: dict[str, float] = {}
    for _, answer in signals.costs_wanted.send(sender=ChatSession, session=session, seqs=list(assistant)):
        if isinstance(answer, dict):
            charged.update({assistant[seq]: cost for seq, cost in answer.items() if seq in assistant})
    return charged


def export_jsonl(session: ChatSession) -> Iterable[bytes]:
    """Yield the session file: the header line, then every entry's stored line, in append order."""
    yield (session.header_raw + "\n").encode("utf-8", errors="surrogatepass")
    rows = Entry.objects.filter(session=session).order_by("seq").values_list("raw", flat=True)
    for raw in rows.iterator(chunk_size=2000):
        yield (raw + "\n").encode("utf-8", errors="surrogatepass")


def export_filename(session: ChatSession) -> str:
    """Return the file name Pi gives this session: its header timestamp (``:`` and ``.`` as ``-``), id."""
    stamp = session.pi_timestamp.replace(":", "-").replace(".", "-")
    return f"{stamp}_{session.pi_id}.jsonl"


def pi_session_path(session: ChatSession) -> str:
    """The session's file as Pi names a fork's parent: a path, not a bare file name.

    A session synced from a Pi user's machine has its real path there (Pi's ``--resume`` nests a
    fork under the file whose path its ``parentSession`` names); any other is placed where
    ``piweb-sync pull`` writes it by default, under Pi's own folder for its working directory.
    """
    source = session.source_filename
    if source.endswith(".jsonl") and (source.startswith("/") or source[1:3] in (":\\", ":/")):
        return source
    cwd = session.cwd[1:] if session.cwd[:1] in ("/", "\\") else session.cwd
    folder = "--" + cwd.replace("/", "-").replace("\\", "-").replace(":", "-") + "--"
    return f"~/.pi/agent/sessions/{folder}/{export_filename(session)}"


def marker_for(session: ChatSession, leaf_id: str | None) -> str | None:
    """Return the marker line that makes ``leaf_id`` (default: the session's leaf) the file's last line."""
    leaf = leaf_id if leaf_id is not None else session.leaf_entry_id
    if leaf is None:
        return None
    if leaf_id is not None and not Entry.objects.filter(session=session, entry_id=leaf).exists():
        raise InvalidEntries(f"Entry {leaf} not found")
    last = Entry.objects.filter(session=session).order_by("-seq").values_list("entry_id", "timestamp").first()
    if last is None or last[0] == leaf:
        return None
    # Derived from what the download holds, so pulling the same node twice gives the same file.
    seed = f"{session.pi_id}:{leaf}:{session.next_seq}"
    taken = _TakenIds(session)
    entry_id = deterministic_id(seed, taken)
    return js_stringify(leaf_marker(entry_id, leaf, last[1] or None))


class _TakenIds:
    """Membership test against the session's ids, one query per candidate (candidates rarely collide)."""

    def __init__(self, session: ChatSession) -> None:
        self._session = session

    def __contains__(self, entry_id: object) -> bool:
        return Entry.objects.filter(session=self._session, entry_id=entry_id).exists()


def export_at_leaf(session: ChatSession, leaf_id: str | None = None) -> Iterable[bytes]:
    """The stored file, then the marker line when the wanted leaf is not its last line."""
    marker = marker_for(session, leaf_id)  # raised before the response starts

    def lines() -> Iterator[bytes]:
        yield from export_jsonl(session)
        if marker is not None:
            yield (marker + "\n").encode("utf-8", errors="surrogatepass")

    return lines()
