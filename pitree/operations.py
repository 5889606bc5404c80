"""Tree operations: navigation, branch summaries, context edits, labels, names and forks.

Every function here is pure: it reads a ``SessionTree`` and returns the entries to append (as dicts
in Pi's written key order: ``type``, ``id``, ``parentId``, ``timestamp``, then the payload) and/or
the new leaf. Nothing is mutated; the caller appends and moves the leaf.
"""

from __future__ import annotations

import re
import secrets
import time
import uuid
from collections.abc import Container, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pitree.entries import Entry
from pitree.jsjson import UNDEFINED
from pitree.jsonl import CURRENT_VERSION, generate_entry_id
from pitree.messages import content_text
from pitree.timestamps import now_iso
from pitree.tree import SessionTree, js_trim

__all__ = [
    "FORK_MODES",
    "BranchedSession",
    "ForkMode",
    "ForkPlan",
    "NavigationPlan",
    "NavigationResult",
    "TreeOperationError",
    "apply_navigation",
    "branch_summary_entry",
    "check_branch_target",
    "context_edit_entry",
    "copy_for_fork",
    "create_branched_session",
    "fork_plan",
    "label_entry",
    "new_session_id",
    "plan_navigation",
    "session_info_entry",
]

EDITABLE_MESSAGE_ROLES = frozenset({"user", "assistant", "toolResult"})
ForkMode = Literal["path", "path+siblings", "subtree"]
FORK_MODES: tuple[ForkMode, ...] = ("path", "path+siblings", "subtree")
_ABSENT: Any = object()


class TreeOperationError(Exception):
    """An operation Pi refuses, with Pi's message."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def _not_found(entry_id: object) -> TreeOperationError:
    return TreeOperationError(f"Entry {entry_id} not found")


def new_session_id() -> str:
    """Return a fresh UUIDv7 (time-ordered) session id."""
    millis = time.time_ns() // 1_000_000
    value = (millis & ((1 << 48) - 1)) << 80
    value |= 0x7 << 76
    value |= secrets.randbits(12) << 64
    value |= 0b10 << 62
    value |= secrets.randbits(62)
    return str(uuid.UUID(int=value))


def _base(entry_type: str, entry_id: str, parent_id: str | None, timestamp: str | None) -> dict[str, Any]:
    return {"type": entry_type, "id": entry_id, "parentId": parent_id, "timestamp": timestamp or now_iso()}


# -- navigation ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class NavigationPlan:
    """Where the leaf goes when navigating to ``target_id``; ``changed`` is False for the same leaf."""

    old_leaf_id: str | None
    target_id: str
    new_leaf_id: str | None
    editor_text: str | None  # the target's text, for a user message or custom_message target
    changed: bool


def plan_navigation(tree: SessionTree, old_leaf_id: str | None, target_id: str) -> NavigationPlan:
    """Return the new leaf for navigating to ``target_id``; raise for an unknown target."""
    if target_id == old_leaf_id:
        return NavigationPlan(
            old_leaf_id=old_leaf_id,
            target_id=target_id,
            new_leaf_id=old_leaf_id,
            editor_text=None,
            changed=False,
        )
    target = tree.get(target_id)
    if target is None:
        raise _not_found(target_id)
    new_leaf: str | None = target.id
    editor_text: str | None = None
    if target.type == "message" and target.role == "user":
        new_leaf = target.parent_id
        editor_text = content_text(target.message.get("content"), "")
    elif target.type == "custom_message":
        new_leaf = target.parent_id
        editor_text = content_text(target.get("content"), "")
    return NavigationPlan(
        old_leaf_id=old_leaf_id,
        target_id=target_id,
        new_leaf_id=new_leaf,
        editor_text=editor_text,
        changed=True,
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class NavigationResult:
    """The entries a navigation appends and the leaf afterwards."""

    entries: list[dict[str, Any]]
    leaf_id: str | None
    summary_entry: dict[str, Any] | None


def apply_navigation(
    tree: SessionTree,
    plan: NavigationPlan,
    *,
    summary: str | None = None,
    details: Any = _ABSENT,
    from_hook: bool = False,
    usage: Any = _ABSENT,
    label: str | None = None,
) -> NavigationResult:
    """Return what navigating appends: an optional branch summary, then an optional label, in order."""
    if not plan.changed:
        return NavigationResult(entries=[], leaf_id=plan.old_leaf_id, summary_entry=None)
    taken: set[str] = set(tree.by_id)
    entries: list[dict[str, Any]] = []
    summary_entry: dict[str, Any] | None = None
    leaf = plan.new_leaf_id
    if summary:
        summary_entry = branch_summary_entry(
            leaf,
            plan.old_leaf_id,
            summary,
            details=details,
            from_hook=from_hook,
            usage=usage,
            taken_ids=taken,
        )
        entries.append(summary_entry)
        taken.add(summary_entry["id"])
        leaf = summary_entry["id"]
    if label:
        target = summary_entry["id"] if summary_entry is not None else plan.target_id
        entry = _label(leaf, target, label, taken)
        entries.append(entry)
        leaf = entry["id"]
    return NavigationResult(entries=entries, leaf_id=leaf, summary_entry=summary_entry)


def branch_summary_entry(
    parent_id: str | None,
    from_id: str | None,
    summary: str,
    *,
    details: Any = _ABSENT,
    from_hook: Any = _ABSENT,
    usage: Any = _ABSENT,
    taken_ids: Container[str],
    timestamp: str | None = None,
) -> dict[str, Any]:
    """Return the ``branch_summary`` entry ``branchWithSummary`` appends under ``parent_id``.

    ``from_id`` is the leaf being left; a null leaf is written as ``"root"``. The caller checks that
    ``parent_id`` exists. Omitted optional fields are not written, as JavaScript drops ``undefined``.
    """
    entry = _base("branch_summary", generate_entry_id(taken_ids), parent_id, timestamp)
    entry["fromId"] = from_id if from_id is not None else "root"
    entry["summary"] = summary
    for key, value in (("details", details), ("usage", usage), ("fromHook", from_hook)):
        if value is not _ABSENT and value is not None:
            entry[key] = value
    return entry


def check_branch_target(tree: SessionTree, branch_from_id: str | None) -> None:
    """Raise unless ``branch_from_id`` is null or an existing entry."""
    if branch_from_id is not None and branch_from_id not in tree.by_id:
        raise _not_found(branch_from_id)


# -- appenders -------------------------------------------------------------------------------------


def context_edit_entry(
    tree: SessionTree, leaf_id: str | None, target_id: str, replacement: Any, *, timestamp: str | None = None
) -> dict[str, Any]:
    """Return the ``context_edit`` entry to append under ``leaf_id``, checked in Pi's order."""
    if replacement is not None and not (
        isinstance(replacement, Mapping) and isinstance(replacement.get("content"), str | list)
    ):
        raise TreeOperationError("Context edit replacement must be null or contain string/array content")
    target = tree.get(target_id)
    if target is None:
        raise _not_found(target_id)
    if target_id not in {e.id for e in tree.path(leaf_id)}:
        raise TreeOperationError(f"Entry {target_id} is not on the active branch")
    editable = target.type == "custom_message" or (
        target.type == "message" and target.role in EDITABLE_MESSAGE_ROLES
    )
    if not editable:
        raise TreeOperationError(f"Entry {target_id} does not contribute editable model content")
    written: dict[str, Any] | None = None
    if replacement is not None:
        content = replacement["content"]
        if (
            isinstance(content, str)
            and target.type == "message"
            and target.role in ("assistant", "toolResult")
        ):
            content = [{"type": "text", "text": content}]
        written = {"content": content}
    entry = _base("context_edit", generate_entry_id(tree.by_id), leaf_id, timestamp)
    entry["targetId"] = target_id
    entry["replacement"] = written
    return entry


def label_entry(
    tree: SessionTree, leaf_id: str | None, target_id: str, label: str | None, *, timestamp: str | None = None
) -> dict[str, Any]:
    """Return the ``label`` entry to append under ``leaf_id``; an empty label clears the target's."""
    if target_id not in tree.by_id:
        raise _not_found(target_id)
    return _label(leaf_id, target_id, label, tree.by_id, timestamp)


def _label(
    parent_id: str | None,
    target_id: str,
    label: str | None,
    taken: Container[str],
    timestamp: str | None = None,
) -> dict[str, Any]:
    entry = _base("label", generate_entry_id(taken), parent_id, timestamp)
    entry["targetId"] = target_id
    if label:
        entry["label"] = label
    return entry


_LINE_BREAKS = re.compile(r"[\r\n]+")


def session_info_entry(
    tree: SessionTree, leaf_id: str | None, name: str, *, timestamp: str | None = None
) -> dict[str, Any]:
    """Return the ``session_info`` entry naming the session; line breaks become spaces."""
    cleaned = js_trim(_LINE_BREAKS.sub(" ", name))
    if not cleaned:
        raise TreeOperationError("Session name cannot be empty")
    entry = _base("session_info", generate_entry_id(tree.by_id), leaf_id, timestamp)
    entry["name"] = cleaned
    return entry


# -- fork and clone --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class BranchedSession:
    """A new session's header and entries; ``leaf_id`` is where its next append goes."""

    header: dict[str, Any]
    entries: list[dict[str, Any]]
    leaf_id: str | None

    @property
    def has_conversation(self) -> bool:
        """Return whether Pi would write the file now (it holds a user or assistant message)."""
        return any(
            e.get("type") == "message"
            and isinstance(e.get("message"), dict)
            and e["message"].get("role") in ("user", "assistant")
            for e in self.entries
        )


def _header(
    cwd: Any, parent_session: str | None, session_id: str | None, timestamp: str | None
) -> dict[str, Any]:
    header: dict[str, Any] = {
        "type": "session",
        "version": CURRENT_VERSION,
        "id": session_id or new_session_id(),
        "timestamp": timestamp or now_iso(),
        "cwd": cwd,
    }
    if parent_session is not None:
        header["parentSession"] = parent_session
    return header


def create_branched_session(
    tree: SessionTree,
    leaf_id: str,
    *,
    cwd: Any,
    parent_session: str | None,
    session_id: str | None = None,
    timestamp: str | None = None,
) -> BranchedSession:
    """Return a new session holding the path to ``leaf_id``, as Pi's ``createBranchedSession`` builds it.

    Label entries on the path are dropped and the rest re-chained; a compaction whose
    ``firstKeptEntryId`` named a dropped label points at the next kept entry instead. Then every
    resolved label (from all branches) whose target was kept is re-created with its original timestamp.
    """
    path = tree.path(leaf_id)
    if not path:
        raise _not_found(leaf_id)
    kept: list[Entry] = []
    pending_labels: list[str] = []
    label_successor: dict[str, str] = {}
    for entry in path:
        if entry.type == "label":
            pending_labels.append(entry.id or "")
            continue
        for label_id in pending_labels:
            label_successor[label_id] = entry.id or ""
        pending_labels.clear()
        kept.append(entry)

    entries: list[dict[str, Any]] = []
    previous: str | None = None
    for entry in kept:
        copy = {**entry.payload, "parentId": previous}
        if entry.type == "compaction":
            first_kept = copy.get("firstKeptEntryId")
            if first_kept != entry.id and isinstance(first_kept, str) and first_kept in label_successor:
                copy["firstKeptEntryId"] = label_successor[first_kept]
        entries.append(copy)
        previous = entry.id

    kept_ids = {e.id for e in kept if e.id is not None}
    taken = set(kept_ids)
    labels, stamps = tree.labels()
    for target_id, label in labels.items():
        if target_id not in kept_ids:
            continue
        stamp = stamps.get(target_id, UNDEFINED)
        made = _label(previous, target_id, label, taken, None)
        made["timestamp"] = stamp  # the original label time, not now (null stays null)
        if stamp is UNDEFINED:
            del made["timestamp"]
        taken.add(made["id"])
        entries.append(made)
        previous = made["id"]
    return BranchedSession(
        header=_header(cwd, parent_session, session_id, timestamp), entries=entries, leaf_id=previous
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class ForkPlan:
    """The leaf a fork copies up to (None: a new empty session) and the text for the editor."""

    target_leaf_id: str | None
    selected_text: str | None


def fork_plan(tree: SessionTree, entry_id: str, position: Literal["before", "at"] = "before") -> ForkPlan:
    """Return what forking at ``entry_id`` copies: before a user message, or at any entry."""
    entry = tree.get(entry_id)
    if entry is None:
        raise TreeOperationError("Invalid entry ID for forking")
    if position == "at":
        return ForkPlan(target_leaf_id=entry.id, selected_text=None)
    if entry.type != "message" or entry.role != "user":
        raise TreeOperationError("Invalid entry ID for forking")
    content = entry.message.get("content")
    selected = content if isinstance(content, str) else content_text(content, "")
    return ForkPlan(target_leaf_id=entry.parent_id, selected_text=selected)


def copy_for_fork(
    tree: SessionTree,
    leaf_id: str | None,
    *,
    mode: ForkMode = "path",
    cwd: Any,
    parent_session: str | None,
    session_id: str | None = None,
    timestamp: str | None = None,
) -> BranchedSession:
    """Return the forked session for one of piweb's copy modes.

    ``path`` is Pi's ``createBranchedSession``. The other modes keep entries verbatim (ids, parents,
    labels) in file order: ``path+siblings`` adds the whole subtree of every other child of an entry
    above the leaf; ``subtree`` adds everything below the leaf. The new leaf is ``leaf_id``.
    A null leaf gives an empty session, as forking before a root user message does.
    """
    if leaf_id is None:
        return BranchedSession(
            header=_header(cwd, parent_session, session_id, timestamp), entries=[], leaf_id=None
        )
    if mode == "path":
        return create_branched_session(
            tree, leaf_id, cwd=cwd, parent_session=parent_session, session_id=session_id, timestamp=timestamp
        )
    if mode not in FORK_MODES:
        raise TreeOperationError(f"Unknown fork mode {mode}")
    path = tree.path_positions(leaf_id)
    if not path:
        raise _not_found(leaf_id)
    kids = tree.children()
    on_path = set(path)
    chosen: set[int] = set(path)
    if mode == "subtree":
        starts: Iterable[int] = kids.get(path[-1], ())
    else:
        starts = [c for p in path[:-1] for c in kids.get(p, ()) if c not in on_path]
    stack = list(starts)
    while stack:
        pos = stack.pop()
        if pos in chosen:
            continue
        chosen.add(pos)
        stack.extend(kids.get(pos, ()))
    entries: list[dict[str, Any]] = []
    for pos in sorted(chosen):
        payload = tree.entries[pos].payload
        parent = tree.parent[pos]
        # A parent outside the copy (an orphan's dangling link, a broken cycle) would dangle: make it a root.
        if parent == -1 or parent not in chosen:
            payload = {**payload, "parentId": None}
        entries.append(dict(payload))
    return BranchedSession(
        header=_header(cwd, parent_session, session_id, timestamp), entries=entries, leaf_id=leaf_id
    )
