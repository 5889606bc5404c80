"""File operations seen in a conversation: which paths were read, written or edited.

The accumulator keeps first-seen order (what a summary's ``details`` and the oracle list); the
derived lists are sorted by UTF-16 code units, as JavaScript's default sort orders strings.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from pitree.jsjson import js_number, js_stringify

__all__ = [
    "FileOps",
    "OrderedPaths",
    "compute_file_lists",
    "extract_file_ops_from_message",
    "format_file_operations",
    "js_sort_key",
]


class OrderedPaths:
    """A set of paths that remembers insertion order."""

    __slots__ = ("_items",)

    def __init__(self, items: Iterable[Any] = ()) -> None:
        self._items: dict[Any, None] = dict.fromkeys(items)

    def add(self, item: Any) -> None:
        self._items.setdefault(item, None)

    def update(self, items: Iterable[Any]) -> None:
        for item in items:
            self._items.setdefault(item, None)

    def __contains__(self, item: object) -> bool:
        try:
            return item in self._items
        except TypeError:  # unhashable values from hand-written details never match a path
            return False

    def __iter__(self) -> Iterator[Any]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, OrderedPaths):
            return list(self) == list(other)
        if isinstance(other, list | tuple):
            return list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"OrderedPaths({list(self._items)!r})"


@dataclass(slots=True)
class FileOps:
    """Mutable accumulator of file paths by operation, in first-seen order."""

    read: OrderedPaths = field(default_factory=OrderedPaths)
    written: OrderedPaths = field(default_factory=OrderedPaths)
    edited: OrderedPaths = field(default_factory=OrderedPaths)

    def add_call(self, name: Any, arguments: Any) -> None:
        """Record one tool call if it is a read, write or edit with a non-empty string path."""
        if not isinstance(arguments, Mapping):
            return
        path = arguments.get("path")
        if not isinstance(path, str) or not path:
            return
        if name == "read":
            self.read.add(path)
        elif name == "write":
            self.written.add(path)
        elif name == "edit":
            self.edited.add(path)

    def seed(self, details: Any) -> None:
        """Add an earlier summary's ``details`` lists: read stays read, modified counts as edited."""
        if not isinstance(details, Mapping):
            return
        read_files = details.get("readFiles")
        if isinstance(read_files, list):
            self.read.update(_hashable(read_files))
        modified = details.get("modifiedFiles")
        if isinstance(modified, list):
            self.edited.update(_hashable(modified))

    def as_dict(self) -> dict[str, list[Any]]:
        return {"read": list(self.read), "written": list(self.written), "edited": list(self.edited)}


def _hashable(items: list[Any]) -> list[Any]:
    # Lists and objects in hand-written details cannot be set members; JSON text stands in for them.
    return [i if not isinstance(i, list | dict) else js_stringify(i) for i in items]


def extract_file_ops_from_message(message: Mapping[str, Any], ops: FileOps) -> None:
    """Add the file operations of one message: assistant tool calls and a tool result's nested calls."""
    role = message.get("role")
    if role == "assistant":
        content = message.get("content")
        if not isinstance(content, list):
            return
        for block in content:
            if isinstance(block, Mapping) and block.get("type") == "toolCall":
                ops.add_call(block.get("name"), block.get("arguments"))
    elif role == "toolResult":
        nested = message.get("nestedCalls")
        calls = nested.get("calls") if isinstance(nested, Mapping) else None
        if isinstance(calls, list):
            for call in calls:
                if isinstance(call, Mapping):
                    ops.add_call(call.get("name"), call.get("arguments"))


def _js_string(value: Any) -> str:
    """Return ``String(value)`` closely enough to order values the way ``Array.prototype.sort`` does."""
    if isinstance(value, str):
        return value
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return js_number(value)
    return str(value)


def js_sort_key(value: Any) -> bytes:
    """Return a key that orders strings by UTF-16 code units, JavaScript's default sort order."""
    return _js_string(value).encode("utf-16-be", errors="surrogatepass")


def compute_file_lists(ops: FileOps) -> tuple[list[Any], list[Any]]:
    """Return (readFiles, modifiedFiles): reads that were never modified, and everything edited or written."""
    modified = OrderedPaths(ops.edited)
    modified.update(ops.written)
    read_files = sorted((p for p in ops.read if p not in modified), key=js_sort_key)
    return read_files, sorted(modified, key=js_sort_key)


def format_file_operations(read_files: Iterable[Any], modified_files: Iterable[Any]) -> str:
    """Return the file-list tags appended to a summary, or "" when both lists are empty."""
    sections: list[str] = []
    read_list = [_js_string(p) for p in read_files]
    modified_list = [_js_string(p) for p in modified_files]
    if read_list:
        sections.append("<read-files>\n" + "\n".join(read_list) + "\n</read-files>")
    if modified_list:
        sections.append("<modified-files>\n" + "\n".join(modified_list) + "\n</modified-files>")
    if not sections:
        return ""
    return "\n\n" + "\n\n".join(sections)
