"""Record who wrote each entry: the author of a write, from its explicit actor, as a stored row.

The entry store writes the author's row id beside every entry it stores (``Entry.author``); the use
cases say who the author is (``author_of``), adapters add what only they know (the API token a sync
device pushed with, the run a worker writes for).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, overload

from django.db import IntegrityError, transaction

from core.actors import Actor, LinkActor, SystemActor, user_of
from pitree.attribution import Author
from sessions_app.models import EntryAuthor

__all__ = ["Author", "author_of", "author_pk", "byline", "describe", "run_author"]


def author_of(actor: Actor, *, token: Any = None, imported: bool = False) -> Author:
    """Return the author of a write by ``actor``; ``token`` is the API token a request came with."""
    if isinstance(actor, SystemActor):
        return Author(kind="system", name=actor.name, imported=imported)
    if isinstance(actor, LinkActor):
        return Author(kind="link", name="link visitor", via=actor.link.token_prefix or "", imported=imported)
    user = user_of(actor)
    if user is None:
        return Author(kind="link", name="link visitor", imported=imported)
    if token is not None and getattr(token, "user_id", None) == user.pk:
        name = getattr(token, "name", "") or f"token {getattr(token, 'public_id', '')}"
        return Author(kind="device", name=user.get_username(), user_id=user.pk, via=name, imported=imported)
    return Author(kind="user", name=user.get_username(), user_id=user.pk, imported=imported)


def run_author(run: Any) -> Author:
    """Return the author of what a run writes: the run, and the user who started it."""
    user = run.requested_by
    return Author(
        kind="run",
        name=user.get_username() if user is not None else "",
        user_id=run.requested_by_id,
        via=str(run.public_id),
    )


def byline(author: Author) -> str:
    """How an entry's card names its author: "by alice", but "run started by alice" and "imported by …"
    read on their own (the page's ``authorText`` says the same)."""
    label = author.label()
    return label if author.imported or author.kind == "run" else f"by {label}"


def author_pk(author: Author) -> int:
    """Return the stored row of ``author``, writing it the first time (in its own savepoint)."""
    key = author.key()
    found = EntryAuthor.objects.filter(key=key).values_list("pk", flat=True).first()
    if found is not None:
        return int(found)
    try:
        with transaction.atomic():
            return int(
                EntryAuthor.objects.create(
                    key=key,
                    kind=author.kind,
                    name=author.name,
                    user_id=author.user_id,
                    via=author.via,
                    imported=author.imported,
                ).pk
            )
    except IntegrityError:  # another writer stored the same author first
        return int(EntryAuthor.objects.get(key=key).pk)


def describe(rows: Iterable[EntryAuthor]) -> dict[int, dict[str, Any]]:
    """Return the API's view of each author row, by its id."""
    return {row.pk: as_json(row) for row in rows}


@overload
def as_json(row: EntryAuthor) -> dict[str, Any]: ...
@overload
def as_json(row: None) -> None: ...
@overload
def as_json(row: EntryAuthor | None) -> dict[str, Any] | None: ...


def as_json(row: EntryAuthor | None) -> dict[str, Any] | None:
    """Return an author as the API shows it on an entry (a link holder's token is never named)."""
    if row is None:
        return None
    author = row.to_domain()
    return {
        "kind": author.kind,
        "name": author.name if author.kind != "link" else "",
        "userId": author.user_id,
        "via": author.via if author.kind in ("device", "run") else "",
        "imported": author.imported,
        "label": author.label(),
    }
