"""``sessiontool project FILE [LEAF|null]``: load a session and print its projection for a leaf."""

from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import Any

from compaction_app.sessiontool.common import (
    NotASession,
    estimate_view,
    llm_view,
    load_case,
    projection_messages,
)
from pitree.messages import convert_to_llm
from pitree.projection import project
from pitree.session import LoadedSession
from pitree.tokens import estimate_context_tokens, estimate_projected_context_tokens
from pitree.tree import SessionTree
from pitree.tree_listing import tree_listing

__all__ = ["load_view", "projection_view", "run"]


def load_view(session: LoadedSession) -> dict[str, Any]:
    """Describe what loading found: header, counts, leaf, labels, name and tree shape."""
    loaded = session.file
    tree = session.tree
    header = loaded.header or {}
    view_header = {"version": header.get("version"), "id": header.get("id"), "cwd": header.get("cwd")}
    if "parentSession" in header:
        view_header["parentSession"] = header.get("parentSession")
    labels, stamps = tree.labels()
    out: dict[str, Any] = {
        "header": view_header,
        "rawHeaderVersion": 1 if loaded.raw_version is None else loaded.raw_version,
        "fileEffect": loaded.file_effect,
        "parsedLineCount": loaded.parsed_line_count,
        "entryCount": tree.entry_count(),
        "fileLeafId": tree.last_leaf_id(),
        "labels": [[k, v] for k, v in labels.items()],
        "labelTimestamps": [[k, v] for k, v in stamps.items()],
        "sessionName": tree.session_name(),
        "tree": _tree_view(tree),
    }
    if loaded.migrated:
        lines = [loaded.header_raw] + [line.raw for line in loaded.entries]
        out["rewrittenFile"] = lines
    return out


def _tree_view(tree: SessionTree) -> dict[str, Any]:
    """Roots and children as Pi lists them; with a parent cycle (Pi never answers) the cut tree."""
    entries = tree.entries
    listing = tree_listing(entries)
    if listing.cycle:
        roots, children = tree.roots(), tree.children_in_tree_order()
    else:
        roots, children = listing.roots, listing.children

    def shown(pos: int) -> Any:
        payload = entries[pos].payload
        return payload.get("id") if isinstance(payload, dict) else None

    return {
        "roots": [shown(p) for p in roots],
        "children": [[shown(p), [shown(c) for c in cs]] for p, cs in children],
    }


def projection_view(session: LoadedSession, leaf_id: str | None) -> dict[str, Any]:
    """Describe the path, context entries, messages and estimates for one leaf."""
    tree = session.tree
    path = tree.path(leaf_id)
    projection = project(path)
    estimate = estimate_context_tokens(projection.messages)
    projected_estimate = estimate_projected_context_tokens(projection, path)
    return {
        "effectiveLeafId": leaf_id,
        "path": [e.id for e in path],
        "contextEntries": [pe.entry.id for pe in projection.entries],
        "projected": [
            {"id": pe.entry.id, "type": pe.entry.type, "messages": len(pe.messages)}
            for pe in projection.entries
        ],
        "messages": projection_messages(projection),
        "llm": [llm_view(m) for m in convert_to_llm(projection.messages)],
        "thinkingLevel": projection.thinking_level,
        "model": projection.model,
        "estimateContextTokens": estimate_view(estimate),
        "estimateProjectedContextTokens": estimate_view(projected_estimate),
    }


def _initialized_view() -> dict[str, Any]:
    return {
        "load": {
            "header": {"version": 3, "id": str(uuid.uuid4()), "cwd": os.getcwd()},
            "rawHeaderVersion": None,
            "fileEffect": "initialized",
            "parsedLineCount": 1,
            "entryCount": 0,
            "fileLeafId": None,
            "labels": [],
            "labelTimestamps": [],
            "sessionName": None,
            "tree": {"roots": [], "children": []},
        },
        "leafArg": None,
        **_empty_projection(),
    }


def _empty_projection() -> dict[str, Any]:
    empty = {"tokens": 0, "usageTokens": 0, "trailingTokens": 0, "lastUsageIndex": None}
    return {
        "effectiveLeafId": None,
        "path": [],
        "contextEntries": [],
        "projected": [],
        "messages": [],
        "llm": [],
        "thinkingLevel": "off",
        "model": None,
        "estimateContextTokens": empty,
        "estimateProjectedContextTokens": dict(empty),
    }


def run(args: list[str]) -> object:
    if not args:
        return {"error": "usage: project FILE [LEAF|null]"}
    path = args[0]
    if Path(path).exists() and Path(path).stat().st_size == 0:
        return _initialized_view()
    try:
        session = load_case(path)
    except NotASession as exc:
        return {"error": str(exc), "fileEffect": "none"}
    explicit_null = len(args) > 1 and args[1] == "null"
    leaf_arg = args[1] if len(args) > 1 and not explicit_null else None
    leaf = session.tree.resolve_leaf(leaf_arg, explicit_null=explicit_null)
    return {
        "load": load_view(session),
        "leafArg": None if explicit_null else (leaf_arg or leaf),
        **projection_view(session, leaf),
    }
