"""Write the leaf down where Pi reads it: Pi resumes a file at its last line.

When piweb moves the leaf without adding an entry (navigation without a summary, a subtree fork, a pull
at another node), a ``custom`` entry under the new leaf makes that node the file's last line. Pi's
projection ignores ``custom`` entries, so the context at the marker is the context at the leaf.
"""

from __future__ import annotations

import hashlib
from collections.abc import Container
from typing import Any

from pitree.timestamps import now_iso

__all__ = ["LEAF_MARKER_TYPE", "deterministic_id", "leaf_marker"]

LEAF_MARKER_TYPE = "piweb.leaf"


def leaf_marker(entry_id: str, leaf_id: str, timestamp: str | None = None) -> dict[str, Any]:
    """Return the marker entry, keys in the order Pi writes a custom entry."""
    return {
        "type": "custom",
        "customType": LEAF_MARKER_TYPE,
        "data": {"leafId": leaf_id},
        "id": entry_id,
        "parentId": leaf_id,
        "timestamp": timestamp or now_iso(),
    }


def deterministic_id(seed: str, taken: Container[str]) -> str:
    """An 8-hex-digit id derived from ``seed`` (the same request gives the same file), avoiding ``taken``."""
    for attempt in range(100):
        candidate = hashlib.sha256(f"{seed}:{attempt}".encode()).hexdigest()[:8]
        if candidate not in taken:
            return candidate
    return hashlib.sha256(seed.encode()).hexdigest()[:32]
