"""Who wrote an entry, as piweb records it beside the line (never inside it: export stays byte-exact).

An author is one of: a user (in the browser or through the API), a sync device (a user's API token,
named), a share link's holder, a run (and the user who started it) or a part of the server (a worker,
a command). An import is the importer's, marked as imported. A copy made by a fork or a clone keeps the
author of each entry it copies; what the copy creates itself (re-created labels) is the copier's.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

__all__ = ["KINDS", "Author"]

KINDS = ("user", "device", "link", "run", "system")


@dataclass(frozen=True, slots=True, kw_only=True)
class Author:
    """One author. ``user_id`` is the person behind it (the user, the device's or the run's owner)."""

    kind: str
    name: str  # the username, kept when the user is deleted; a worker's or command's name
    user_id: int | None = None
    via: str = ""  # the device (token) name, the run's public id, the link's token prefix
    imported: bool = False

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown author kind {self.kind!r}")

    def key(self) -> str:
        """Return the identity of this author: equal authors share one stored row."""
        text = "\x1f".join(
            [
                self.kind,
                self.name,
                "" if self.user_id is None else str(self.user_id),
                self.via,
                str(self.imported),
            ]
        )
        return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()

    def label(self) -> str:
        """Return how the entry card names the author."""
        if self.kind == "device":
            text = f"{self.name} via {self.via}" if self.via else self.name
        elif self.kind == "run":
            text = f"run started by {self.name}" if self.name else "run"
        elif self.kind == "link":
            text = "link visitor"
        else:
            text = self.name
        return f"imported by {text}" if self.imported else text
