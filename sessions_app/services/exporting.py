"""Export a session as the Pi JSONL file it was imported from (or the part a share link shows).

The download resumes in Pi where piweb stands: at the session's leaf, or at a node the user picked. Pi
resumes a file at its last line. When that line is not the wanted leaf (the leaf was moved in piweb
without a new entry, a fork copied a whole subtree, or the user continues from another node), one
``custom`` marker line under the leaf is added to the download. It is not stored: when Pi continues the
file and ``piweb-sync push`` sends it back, the marker arrives as an ordinary entry.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from django.db import transaction

from .. import access, link_scope
from ..actors import Actor
from ..domain.jsjson import js_stringify
from ..domain.leaf_marker import deterministic_id, leaf_marker
from ..models import ChatSession, Entry
from .actions import Action, record_action
from .errors import InvalidEntries

__all__ = [
    "export_at_leaf",
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
