"""Running sums along a path: the context's token estimate at any entry from a few rows.

Every entry in the tree carries, for its path root→itself, the sum of Pi's per-message estimates (all
messages, and the non-system ones), the number of messages, and the seq of the newest assistant message
whose usage can anchor an estimate. A compaction adds nothing: only the newest compaction on a path
produces messages, so the reader adds that one's messages itself. The sums of a stretch of the path are
then the difference of two rows' sums; context edits, the system prompt and the messages a compaction's
kept range skips are applied from the few entries that carry them (``context_totals``).

The result equals the full projection's ``estimate_projected_context_tokens`` (a differential test holds
them together). The one shape it declines, returning None so the caller projects in full, is a context
edit that targets the anchoring message or something after it, which only a hand-made file holds.

Pure Python: no framework imports.
"""

from __future__ import annotations

from array import array
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, overload

from pitree.entries import Entry
from pitree.projection import entry_to_messages, project_entry
from pitree.tokens import (
    SetAsideUsage,
    TokenEstimate,
    assistant_usage,
    calculate_context_tokens,
    current_system_message,
    estimate_tokens,
)

__all__ = [
    "ROOT",
    "ContextFacts",
    "ContextTotals",
    "OwnColumns",
    "OwnSums",
    "PathSums",
    "Placed",
    "above",
    "chain_sums",
    "context_messages",
    "context_totals",
    "fold",
    "own_sums",
    "tree_sums",
]


@dataclass(frozen=True, slots=True)
class OwnSums:
    """What one entry adds to its path's sums."""

    tokens: int  # estimates of its non-system messages
    all_tokens: int  # estimates of all its messages
    messages: int
    usage: bool  # an assistant message whose usage can anchor an estimate


@dataclass(frozen=True, slots=True)
class PathSums:
    """The sums over a path root→entry, the entry included."""

    tokens: int
    all_tokens: int
    messages: int
    usage_seq: int | None


ROOT = PathSums(0, 0, 0, None)


def _tokens(message: Any) -> int:
    return estimate_tokens(message) if isinstance(message, Mapping) else 0


def _is_system(message: Any) -> bool:
    return isinstance(message, Mapping) and message.get("role") == "system"


def _plain(messages: Sequence[Any]) -> int:
    return sum(_tokens(m) for m in messages if not _is_system(m))


class OwnColumns(Sequence[OwnSums]):
    """Many entries' own sums, a column of machine integers each: an object per entry held 8 MB of a
    100k-entry import's scan."""

    __slots__ = ("all_tokens", "messages", "tokens", "usage")

    def __init__(self) -> None:
        self.tokens = array("q")
        self.all_tokens = array("q")
        self.messages = array("q")
        self.usage = bytearray()

    def append(self, own: OwnSums) -> None:
        self.tokens.append(own.tokens)
        self.all_tokens.append(own.all_tokens)
        self.messages.append(own.messages)
        self.usage.append(own.usage)

    def __len__(self) -> int:
        return len(self.tokens)

    @overload
    def __getitem__(self, pos: int) -> OwnSums: ...
    @overload
    def __getitem__(self, pos: slice) -> list[OwnSums]: ...
    def __getitem__(self, pos: int | slice) -> OwnSums | list[OwnSums]:
        if isinstance(pos, slice):
            return [self[i] for i in range(*pos.indices(len(self)))]
        return OwnSums(self.tokens[pos], self.all_tokens[pos], self.messages[pos], bool(self.usage[pos]))


def own_sums(entry: Entry) -> OwnSums:
    """Return what ``entry`` adds to the sums of every path through it."""
    if entry.type == "compaction":
        return OwnSums(0, 0, 0, False)
    messages = entry_to_messages(entry)
    usage = (
        entry.type == "message"
        and isinstance(entry.message, Mapping)
        and assistant_usage(entry.message) is not None
    )
    # Each message estimated once (an import scans every entry; the estimate is most of its cost).
    tokens = [_tokens(m) for m in messages]
    plain = sum(t for t, m in zip(tokens, messages, strict=True) if not _is_system(m))
    return OwnSums(plain, sum(tokens), len(messages), usage)


def fold(parent: PathSums, own: OwnSums, seq: int) -> PathSums:
    """Return the sums of an entry at ``seq`` under a parent whose sums are ``parent``."""
    return PathSums(
        parent.tokens + own.tokens,
        parent.all_tokens + own.all_tokens,
        parent.messages + own.messages,
        seq if own.usage else parent.usage_seq,
    )


def chain_sums(entries: Sequence[Entry], parent: PathSums, first_seq: int) -> list[PathSums]:
    """Return the sums of a chain (each entry under the one before) stored from ``first_seq`` on."""
    out: list[PathSums] = []
    for offset, entry in enumerate(entries):
        parent = fold(parent, own_sums(entry), first_seq + offset)
        out.append(parent)
    return out


def tree_sums(
    entries: Sequence[Entry], parents: Sequence[int], own: Sequence[OwnSums] | None = None
) -> list[PathSums | None]:
    """Return every entry's sums given each position's parent position (-1: a root), parents first.

    Lines outside the tree (no id) get None. Positions are the seqs a whole-session insert stores.
    ``own`` gives each entry's share when it was measured already (entries whose payload was dropped).
    """
    n = len(entries)
    # Children as linked lists in two integer arrays (a dict of lists cost about 12 MB at 100k entries).
    first_kid, next_kid = array("i", [-1]) * n, array("i", [-1]) * n
    stack: list[int] = []
    for pos in range(n):
        if entries[pos].id is None:
            continue
        up = parents[pos]
        if up == -1:
            stack.append(pos)
        else:
            next_kid[pos], first_kid[up] = first_kid[up], pos
    out: list[PathSums | None] = [None] * n
    while stack:  # an entry's sums need its parent's only, so any order from the roots down will do
        pos = stack.pop()
        up = parents[pos]
        above = ROOT if up == -1 else out[up]
        assert above is not None
        out[pos] = fold(above, own[pos] if own is not None else own_sums(entries[pos]), pos)
        kid = first_kid[pos]
        while kid != -1:
            stack.append(kid)
            kid = next_kid[kid]
    return out


# -- reading a context from sums -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Placed:
    """A stored entry with its depth on the path being read."""

    depth: int
    entry: Entry


@dataclass(frozen=True, slots=True)
class ContextFacts:
    """The few rows a context's totals need.

    ``start_depth`` is where the context's path range begins (the compaction's first kept entry, the
    compaction itself when that entry is not on the path, or 0); ``above_start`` the sums of the entry
    just above it (``ROOT`` at the root). ``edits`` and ``systems`` are the ``context_edit`` entries and
    the system-message entries of the path from ``start_depth`` to the leaf; ``targets`` the entries of
    that range whose id an edit names.
    """

    leaf_depth: int
    leaf: PathSums
    compaction: Placed | None
    start_depth: int
    above_start: PathSums
    usage: tuple[Placed, PathSums] | None
    edits: Sequence[Placed]
    systems: Sequence[Placed]
    targets: Sequence[Placed]


@dataclass(frozen=True, slots=True)
class ContextTotals:
    estimate: TokenEstimate
    message_count: int
    plain_tokens: int  # the non-system messages' estimates, as the breakdown counts them
    system_messages: list[dict[str, Any]]  # the system messages in context, in order
    edits: dict[str, Entry]  # the edit in force per target id
    # The reported usage the estimate sets aside (why the gauge can drop); ``set_aside_known`` is False
    # for the rare shape where the sums cannot tell which usage the projection would show.
    set_aside: SetAsideUsage | None = None
    set_aside_known: bool = True


def above(sums: PathSums, entry: Entry) -> PathSums:
    """Return the sums of the entry just above one whose own sums are ``sums``."""
    own = own_sums(entry)
    return PathSums(
        sums.tokens - own.tokens, sums.all_tokens - own.all_tokens, sums.messages - own.messages, None
    )


def last_edits(edits: Sequence[Placed]) -> dict[str, Entry]:
    """Return the last edit per target along the path (the one the projection applies)."""
    out: dict[str, Entry] = {}
    for placed in sorted(edits, key=lambda p: p.depth):
        target = placed.entry.get("targetId")
        if isinstance(target, str):
            out[target] = placed.entry
    return out


def _in_context(placed: Placed, facts: ContextFacts) -> bool:
    """Whether a path entry of the range produces messages in the context (before edits)."""
    entry = placed.entry
    compaction = facts.compaction
    if entry.type == "compaction":
        return compaction is not None and placed.depth == compaction.depth
    if compaction is not None and placed.depth < compaction.depth:
        return not (entry.type == "message" and entry.role == "system")
    return True


def _messages(placed: Placed, facts: ContextFacts, edits: Mapping[str, Entry]) -> list[dict[str, Any]]:
    if not _in_context(placed, facts):
        return []
    entry = placed.entry
    return project_entry(entry, edits.get(entry.id) if entry.id is not None else None)


def context_totals(facts: ContextFacts) -> ContextTotals | None:
    """Return the context's estimate and counts, or None for a shape the sums do not cover."""
    edits = last_edits(facts.edits)
    compaction = facts.compaction
    own_c = entry_to_messages(compaction.entry) if compaction is not None else []
    plain = _plain(own_c) + facts.leaf.tokens - facts.above_start.tokens
    count = len(own_c) + facts.leaf.messages - facts.above_start.messages
    # System messages a compaction's kept range skips were counted in the path's sums.
    if compaction is not None:
        count -= sum(len(entry_to_messages(s.entry)) for s in facts.systems if s.depth < compaction.depth)
    seen: set[int] = set()
    for target in facts.targets:
        if target.entry.id not in edits or target.depth in seen or not _in_context(target, facts):
            continue
        seen.add(target.depth)
        before = entry_to_messages(target.entry)
        after = project_entry(target.entry, edits[target.entry.id])
        plain += _plain(after) - _plain(before)
        count += len(after) - len(before)
    systems = [m for m in _system_messages(facts, edits) if isinstance(m, dict)]
    usage = facts.usage
    if usage is not None:
        anchor, sums = usage
        # Usage recorded before the newest compaction or context edit is not trusted (Pi's rule).
        reset = max([compaction.depth if compaction is not None else -1, *(e.depth for e in facts.edits)])
        if anchor.depth > reset:
            if any(t.depth >= anchor.depth for t in facts.targets if t.entry.id in edits):
                return None
            message = anchor.entry.message
            used = calculate_context_tokens(message["usage"])
            trailing = facts.leaf.all_tokens - sums.all_tokens
            later = facts.leaf.messages - sums.messages
            estimate = TokenEstimate(used + trailing, used, trailing, count - 1 - later)
            return ContextTotals(estimate, count, plain, systems, edits)
    total = plain
    system = current_system_message(systems)
    if system is not None:
        total += estimate_tokens(system)
    aside, known = _set_aside(facts, edits)
    return ContextTotals(TokenEstimate(total, 0, total, None), count, plain, systems, edits, aside, known)


def _set_aside(facts: ContextFacts, edits: Mapping[str, Entry]) -> tuple[SetAsideUsage | None, bool]:
    """Return the usage an untrusted estimate set aside, and whether the sums could tell it.

    The newest usage on the path is the one the projection shows when it is in context untouched: after
    the start and not the target of an edit. Otherwise the caller asks the full projection.
    """
    if facts.usage is None:
        return None, True
    anchor, _ = facts.usage
    if anchor.depth < facts.start_depth or anchor.entry.id in edits:
        return None, False
    resets = [p for p in facts.edits]
    if facts.compaction is not None:
        resets.append(facts.compaction)
    reset = max(resets, key=lambda p: p.depth, default=None)
    message = anchor.entry.message
    return (
        SetAsideUsage(
            tokens=calculate_context_tokens(message["usage"]),
            entry_id=anchor.entry.id,
            reset_id=reset.entry.id if reset is not None else None,
            reset_type=reset.entry.type if reset is not None else None,
        ),
        True,
    )


def _system_messages(facts: ContextFacts, edits: Mapping[str, Entry]) -> list[Any]:
    out: list[Any] = []
    compaction = facts.compaction
    if compaction is not None:
        out.extend(m for m in _messages(compaction, facts, edits) if _is_system(m))
    for placed in sorted(facts.systems, key=lambda p: p.depth):
        out.extend(m for m in _messages(placed, facts, edits) if _is_system(m))
    return out


def context_messages(
    rows: Sequence[Placed], facts: ContextFacts, edits: Mapping[str, Entry]
) -> list[tuple[Placed, dict[str, Any]]]:
    """Return the context messages of path rows (in path order; the compaction's own come first)."""
    out: list[tuple[Placed, dict[str, Any]]] = []
    for placed in rows:
        if facts.compaction is not None and placed.depth == facts.compaction.depth:
            continue  # the compaction's messages open the context; the caller puts them first
        out.extend((placed, m) for m in _messages(placed, facts, edits))
    return out


def compaction_messages(facts: ContextFacts, edits: Mapping[str, Entry]) -> list[dict[str, Any]]:
    """Return the messages that open the context: the newest compaction's, after its edit."""
    if facts.compaction is None:
        return []
    return _messages(facts.compaction, facts, edits)
