"""A loaded session: the file's header and load report plus the tree index over its entries."""

from __future__ import annotations

from dataclasses import dataclass

from pitree.entries import Entry, entry_from_value
from pitree.jsonl import LoadedFile, load_text
from pitree.tree import SessionTree

__all__ = ["LoadedSession", "load_session", "session_from_entries"]


@dataclass(slots=True)
class LoadedSession:
    file: LoadedFile
    tree: SessionTree

    @property
    def entries(self) -> list[Entry]:
        return list(self.tree.entries)


def load_session(text: str) -> LoadedSession:
    """Load a session file's text; check ``file.valid`` before using the tree."""
    loaded = load_text(text)
    entries = [entry_from_value(seq, line.value) for seq, line in enumerate(loaded.entries)]
    return LoadedSession(loaded, SessionTree(entries))


def session_from_entries(entries: list[Entry]) -> SessionTree:
    """Index entries that are already in append order."""
    return SessionTree(entries)
