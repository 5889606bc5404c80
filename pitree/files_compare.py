"""Two branches compared by their work: which files each changed after they parted, and how.

Both sides are ``pitree.files`` walks of the paths root → each node. The entries the two paths share (from
the root to their common ancestor) appear in both walks with the same ids, so a change whose entry is in
the other side's walk too was made before the branches parted: it is neither side's own. What is left is
each side's own work, classified per file (by absolute path): changed only on the left, only on the right,
or on both. Reads are not changes and are left out.

When both sides know a file's whole text at their node (``FileTouch.content``), the comparison also gives
the line diff from the left's text to the right's: how the two branches' versions of the file differ,
rather than only what each did to it.
"""

from __future__ import annotations

from dataclasses import dataclass

from pitree.files import BranchFiles, Change, ChangeTotals, FileTouch, Hunk, line_diff

__all__ = ["ComparedFile", "FilesComparison", "Side", "compare_files"]

# A text diff between the two versions is skipped above this size: difflib is quadratic at worst.
CONTENT_DIFF_CHARS = 400_000


@dataclass(frozen=True)
class Side(ChangeTotals):
    """One side's own changes to a file (oldest first), and what it knows of the file at its node."""

    touch: FileTouch
    changes: list[Change]

    @property
    def last_position(self) -> int:
        return self.changes[-1].position if self.changes else -1


@dataclass(frozen=True)
class ComparedFile:
    path: str  # as shown by the side that changed it (the left when both did)
    absolute: str
    left: Side | None
    right: Side | None
    # Left's text → right's text, when both are known and differ; None when not known (or too long).
    content_diff: tuple[int, int, list[Hunk]] | None = None
    same_content: bool | None = None  # None: not known on both sides


@dataclass(frozen=True)
class FilesComparison:
    only_left: list[ComparedFile]  # each list: the most recently changed first
    only_right: list[ComparedFile]
    both: list[ComparedFile]
    shared_changes: int  # changes made before the branches parted (on both paths)


def _own(files: BranchFiles, shared: set[str]) -> dict[str, Side]:
    own: dict[str, Side] = {}
    for touch in files.files:
        changes = [c for c in touch.changes if c.entry_id not in shared]
        if changes:
            own[touch.absolute] = Side(touch, changes)
    return own


def _change_ids(files: BranchFiles) -> set[str]:
    return {c.entry_id for touch in files.files for c in touch.changes}


def _with_contents(path: str, absolute: str, left: Side, right: Side) -> ComparedFile:
    a, b = left.touch.content, right.touch.content
    if a is None or b is None:
        return ComparedFile(path, absolute, left, right)
    if a == b:
        return ComparedFile(path, absolute, left, right, None, True)
    diff = line_diff(a, b) if len(a) + len(b) <= CONTENT_DIFF_CHARS else None
    return ComparedFile(path, absolute, left, right, diff, False)


def compare_files(left: BranchFiles, right: BranchFiles) -> FilesComparison:
    """Return the files each side changed after the two branches parted, by side."""
    left_ids, right_ids = _change_ids(left), _change_ids(right)
    shared = left_ids & right_ids
    mine, theirs = _own(left, shared), _own(right, shared)
    only_left = [ComparedFile(s.touch.path, k, s, None) for k, s in mine.items() if k not in theirs]
    only_right = [ComparedFile(s.touch.path, k, None, s) for k, s in theirs.items() if k not in mine]
    both = [_with_contents(s.touch.path, k, s, theirs[k]) for k, s in mine.items() if k in theirs]

    def newest(item: ComparedFile) -> int:
        # Positions count along each side's own path from the root, so the two are comparable.
        return max(s.last_position for s in (item.left, item.right) if s is not None)

    for found in (only_left, only_right, both):
        found.sort(key=newest, reverse=True)
    return FilesComparison(only_left, only_right, both, len(shared))
