"""Search by work: which sessions touched a path, used a tool or ran a command, from the index of work.

The terms are the domain's (``pitree.work_query``); the rows are ``ToolUse``, kept at write time, so a
search reads the index and never a session's entries. A row counts once its call has a result, and a
failed ``read``/``edit``/``write`` is no touch (``pitree.tool_uses``). Callers pass the sessions the
viewer may read: nothing outside them is read, counted or named.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from django.db.models import F, Q, Window
from django.db.models.functions import RowNumber

from pitree.work_query import PathPattern, WorkQuery
from sessions_app import text_search
from sessions_app.models import ChatSession, Entry, ToolUse
from sessions_app.tree_overview import tree_order

__all__ = ["WorkHit", "first_matching", "hits_of", "matching_sessions", "session_hits"]

SNIPPET_CHARS = 200
PROBE_CHUNK = 64  # sessions probed at a time, newest first, before a rare query is looked up at once
RARE_SHARE = 8
_GLOB_START = re.compile(r"[*?\[]")


@dataclass(frozen=True, slots=True)
class WorkHit:
    """A tool use that matches: where its result is (the node to open) and what it did."""

    session_id: int
    seq: int
    entry_id: str | None
    role: str
    snippet: str


def _path_q(pattern: PathPattern) -> Q:
    column = "absolute" if pattern.absolute else "path"
    if pattern.match == "exact":
        return Q(**{column: pattern.text})
    if pattern.match == "prefix":
        return Q(**{f"{column}__startswith": pattern.text})
    # The literal start of a glob (``src/`` of ``src/**/*.py``) lets the index narrow the rows first.
    literal = pattern.text[: _GLOB_START.search(pattern.text).start()]  # type: ignore[union-attr]
    # (A glob without "/" matches a name in any folder: it has no start to narrow by.)
    narrowed = Q(**{f"{column}__startswith": literal}) if literal and "/" in pattern.text else Q()
    return narrowed & Q(**{f"{column}__regex": pattern.regex})


def _conditions(query: WorkQuery) -> list[Q]:
    """Each condition some row of a session must meet (see ``pitree.work_query``)."""
    tools = Q(tool__in=query.tools) if query.tools else Q()
    out = [_path_q(p) & tools for p in query.paths]
    out += [Q(tool="bash", command__contains=c) for c in query.commands]
    if query.tools and not query.paths:
        out.append(tools)
    return out


def _counted() -> Q:
    # A call with its result; a failed bash command still ran, a failed file tool touched nothing.
    return Q(result_seq__isnull=False) & (Q(failed=False) | Q(tool="bash"))


def matching_sessions(session_ids: Sequence[int], query: WorkQuery) -> set[int]:
    """Return which of ``session_ids`` meet every work term of ``query``."""
    ids = list(session_ids)
    found: set[int] | None = None
    for condition in _conditions(query):
        if not ids:
            break
        rows = ToolUse.objects.filter(_counted(), condition, session_id__in=ids)
        matched = set(rows.values_list("session_id", flat=True).distinct())
        found = matched if found is None else found & matched
        ids = [pk for pk in ids if pk in found]
    return found or set()


def first_matching(session_ids: Sequence[int], query: WorkQuery, *, enough: int) -> list[int]:
    """Return the first ``enough`` of ``session_ids`` (in their order) that meet every work term.

    A common pattern (``path:*.py``) matches in many sessions: the first sessions answer, and the rows
    of the others are never read. When few of the first sessions match, the rest are looked up at once
    (an exact path or a folder through the path index).
    """
    ids = list(session_ids)
    first = ids[:PROBE_CHUNK]
    matched = matching_sessions(first, query)
    found = [pk for pk in first if pk in matched]
    rest = ids[PROBE_CHUNK:]
    if len(found) >= enough or not rest:
        return found[:enough]
    # Rare (fewer than one first session in eight): one look over every other session; else chunks, each
    # expected to add several sessions, until there are enough.
    if RARE_SHARE * len(found) < len(first):
        matched = matching_sessions(rest, query)
        return (found + [pk for pk in rest if pk in matched])[:enough]
    for start in range(0, len(rest), PROBE_CHUNK):
        chunk = rest[start : start + PROBE_CHUNK]
        matched = matching_sessions(chunk, query)
        found += [pk for pk in chunk if pk in matched]
        if len(found) >= enough:
            break
    return found[:enough]


def hits_of(session_ids: Sequence[int], query: WorkQuery, per_session: int) -> dict[int, list[WorkHit]]:
    """Return each session's newest ``per_session + 1`` uses matching any of the query's terms (one past
    the shown ones says whether there are more)."""
    conditions = _conditions(query)
    if not conditions or not session_ids:
        return {}
    anyone = Q()
    for condition in conditions:
        anyone |= condition
    # One statement for every listed session: each session's rows ranked newest first, the first few kept.
    rows = (
        ToolUse.objects.filter(_counted(), anyone, session_id__in=list(session_ids))
        .annotate(
            rank=Window(
                RowNumber(), partition_by=F("session_id"), order_by=[F("result_seq").desc(), F("id").desc()]
            )
        )
        .filter(rank__lte=per_session + 1)
        .order_by("session_id", "rank")
        .values_list("session_id", "result_seq", "result_entry_id", "call_id", "tool", "path", "command")
    )
    out: dict[int, list[WorkHit]] = {}
    for pk, seq, entry_id, call_id, tool, path, command in rows:
        if seq is None:
            continue  # never: only answered calls count
        role = "toolResult" if call_id else "bashExecution"
        out.setdefault(pk, []).append(WorkHit(pk, seq, entry_id, role, _snippet(tool, path, command)))
    return out


def _snippet(tool: str, path: str, command: str) -> str:
    if command:
        return f"$ {command}"[:SNIPPET_CHARS]
    return f"{tool} {path}".strip()[:SNIPPET_CHARS]


def session_hits(session: ChatSession, query: WorkQuery, *, by_time: bool = True) -> list[int]:
    """Return the result seqs of every use in ``session`` matching a term of ``query``, in the tree's
    drawing order (``by_time`` as ``text_search.session_hits``); none unless the session meets every
    term, its words included. Scope is not applied here (``link_scope.scoped_hits`` does)."""
    if not matching_sessions([session.pk], query):
        return []
    if query.text and not text_search.session_hits(session, query.text, by_time=by_time).seqs:
        return []
    anyone = Q()
    for condition in _conditions(query):
        anyone |= condition
    found = ToolUse.objects.filter(_counted(), anyone, session=session).values_list("result_seq", flat=True)
    seqs = {seq for seq in found if seq is not None}
    rows = Entry.objects.filter(session=session, seq__in=seqs, segment__isnull=False).values_list(
        "seq", "segment", "depth"
    )
    order = tree_order(session, by_time=by_time)
    keyed = []
    for seq, segment, depth in rows:
        if segment is None or depth is None:
            continue  # outside the tree (the filter leaves none)
        key = order.key(segment, depth)
        if key is not None:
            keyed.append((key, seq))
    return [seq for _, seq in sorted(keyed)]
