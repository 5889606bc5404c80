"""Storage steps shared by the use cases: the session row and the one storability check of its values.

Entry rows are written by the entry store (``store.py``) alone.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pitree.jsjson import js_stringify
from pitree.placement import check_fields
from pitree.storable import NOT_STORABLE, Unstorable, storable_text
from sessions_app.models import ChatSession
from sessions_app.services.errors import InvalidSessionFile

__all__ = ["check_storable", "create_session_row"]


def create_session_row(
    *, owner: Any, header: dict[str, Any], header_raw: str = "", filename: str
) -> ChatSession:
    """Create the session row for a Pi header (written as Pi writes it unless the verbatim line is given).

    The header's id is capped like an entry's (it is indexed with the owner).
    """
    try:
        check_fields(header, "the session header")
    except Unstorable as exc:
        raise InvalidSessionFile(str(exc)) from exc
    version = header.get("version")

    def text(key: str) -> str | None:
        value = header.get(key)
        return value if isinstance(value, str) else None

    return ChatSession.objects.create(
        owner=owner,
        pi_id=header["id"],
        header_raw=header_raw or js_stringify(header),
        version=version if isinstance(version, int) and not isinstance(version, bool) else 3,
        cwd=text("cwd") or "",
        pi_timestamp=text("timestamp") or "",
        parent_session=text("parentSession"),
        source_filename=filename,
        files_changed=0,  # kept from here on (sessions stored before are counted by reconcile)
    )


# -- what PostgreSQL text can hold ----------------------------------------------------------------------


def check_storable(values: Iterable[Any], where: str) -> None:
    """Refuse strings PostgreSQL text cannot hold (``domain.storable``): every write path's one message."""
    for value in values:
        if isinstance(value, str) and not storable_text(value):
            raise InvalidSessionFile(f"{where}: a string {NOT_STORABLE}")
