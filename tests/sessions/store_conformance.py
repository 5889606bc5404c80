"""One scenario of writes for the entry store's conformance test, run against any backend and database.

``run(store)`` stores the same inputs through ``store`` (appends of chains and branches, new roots,
verbatim lines, refusals, quotas, a whole file) and returns every row, segment and session counter it
left, with the answer to each refused write. The PostgreSQL test calls it in-process; the embedded
(SQLite) run calls it in a child process. Entry ids the server draws are replaced by their order of
appearance, so runs compare without depending on random ids.
"""

from __future__ import annotations

import json
import re
from typing import Any

from django.contrib.auth import get_user_model
from django.test import override_settings

from pitree.attribution import Author
from pitree.context_sums import tree_sums
from pitree.entries import entry_from_value
from sessions_app.models import ChatSession, Entry, EntrySums, Segment
from sessions_app.services.rows import create_session_row
from sessions_app.services.store import EntryStore

STAMP = "2026-01-02T03:04:05.000Z"
ROW_FIELDS = (
    "seq",
    "entry_id",
    "parent_id",
    "type",
    "role",
    "timestamp",
    "raw",
    "parent_seq",
    "depth",
    "segment",
    "compaction_seq",
    "model_seq",
    "thinking_seq",
    "search_text",
)
SEGMENT_FIELDS = ("index", "parent_index", "start_depth", "first_seq", "tip_seq", "tip_depth")
SESSION_FIELDS = (
    "leaf_entry_id",
    "leaf_seq",
    "next_seq",
    "next_segment",
    "entry_count",
    "message_count",
    "name",
    "stored_bytes",
)


def say(role: str, text: str, **fields: Any) -> dict[str, Any]:
    message: dict[str, Any] = {"role": role, "content": [{"type": "text", "text": text}], "timestamp": 1}
    if role == "assistant":
        usage = {"input": 40, "output": 9, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 49}
        message |= {"provider": "p", "model": "m", "stopReason": "stop", "usage": usage}
    return {"type": "message", "timestamp": STAMP, "message": message, **fields}


def steps() -> list[tuple[str, Any, dict[str, Any]]]:
    """The inputs: (kind, entries or lines, options), the same for every backend."""
    return [
        # A chain under the (empty) leaf: a root, the model anchor, a compaction.
        ("append", [say("user", "one", id="u1"), say("assistant", "two", id="a1")], {}),
        ("append", [{"type": "compaction", "id": "c1", "timestamp": STAMP, "summary": "s"}], {}),
        # Under the leaf again, with ids the server draws and a timestamp it fills in.
        ("append", [say("user", "drawn"), say("assistant", "drawn too")], {}),
        # A branch from an earlier entry: a new segment under u1's.
        ("append", [say("user", "branch", id="b1", parentId="u1"), say("assistant", "b", id="b2")], {}),
        # Two children of one parent in one batch (not a chain), then the leaf's child.
        (
            "append",
            [
                {"type": "thinking_level_change", "id": "t1", "parentId": "b2", "thinkingLevel": "high"},
                {"type": "model_change", "id": "m1", "parentId": "b2", "provider": "p", "modelId": "x"},
                say("user", "under m1", id="m2"),
            ],
            {},
        ),
        ("append", [{"type": "session_info", "id": "n1", "timestamp": STAMP, "name": "  Named  "}], {}),
        # A new root, then its chain; an entry with the expected leaf.
        ("append", [say("user", "root", id="r1", parentId=None), say("assistant", "r", id="r2")], {}),
        ("append", [say("user", "expected", id="e1")], {"expected_leaf": "r2"}),
        # Verbatim lines (sync, a re-import): a chain, a line whose parent is unknown, one without an id.
        (
            "lines",
            [
                json.dumps(say("user", "synced", id="s1", parentId="e1")),
                json.dumps(say("assistant", "synced", id="s2", parentId="s1")),
                json.dumps(say("user", "orphan", id="o1", parentId="nowhere")),
                json.dumps({"type": "custom", "timestamp": STAMP, "customType": "no-id"}),
                json.dumps(say("assistant", "sibling", id="s3", parentId="s1")),
            ],
            {},
        ),
        # Refusals: each changes nothing and answers the same everywhere.
        ("append", [say("user", "dup", id="u1")], {}),
        ("append", [say("user", "lost", parentId="nope")], {}),
        ("append", [say("user", "x", id="ok1"), say("user", "dup", id="a1")], {}),
        ("append", [say("user", "moved")], {"expected_leaf": "u1"}),
        ("append", [say("user", "x" * 10, id="i" * 256)], {}),
        ("append", [{"type": "custom", "customType": "c" * 256}], {}),
        ("append", [{"type": "label", "targetId": "u1", "label": "l" * 1001}], {}),
        ("lines", [json.dumps(say("user", "long", id="L" * 300))], {}),
        ("append", [say("user", "full")], {"max_entries": 5}),
        ("append", [say("user", "full", id="q1")], {"max_bytes": 10}),
        ("append", [say("user", "full", id="q1"), say("user", "full", id="q2")], {"max_bytes": 10}),
        ("lines", [json.dumps(say("user", "full", id="q3"))], {"max_entries": 5}),
        # Past a quota without checking it: the end of a run's turn.
        ("append", [say("assistant", "turn end", id="z1")], {"max_entries": 5, "quota": False}),
    ]


def run(store: EntryStore) -> dict[str, Any]:
    users = get_user_model().objects
    owner = users.create_user(f"conformance-{users.count()}")  # each run on its own quota
    session = create_session_row(
        owner=owner, header={"type": "session", "version": 3, "id": "conf", "cwd": "/c"}, filename=""
    )
    answers: list[str] = []
    # Who wrote what is recorded beside each row: appends alternate between a user and their device.
    authors = [Author(kind="user", name="writer"), Author(kind="device", name="writer", via="laptop")]
    for step, (kind, items, options) in enumerate(steps()):
        limits = {
            "PIWEB_MAX_IMPORT_ENTRIES": options.get("max_entries", 0),
            "PIWEB_MAX_STORED_BYTES_PER_USER": options.get("max_bytes", 0),
        }
        try:
            with override_settings(**limits):
                if kind == "append":
                    kwargs = {k: v for k, v in options.items() if k in ("expected_leaf", "quota")}
                    rows = store.append(session, items, author=authors[step % 2], **kwargs)
                else:
                    from django.db import transaction

                    with transaction.atomic():
                        locked = ChatSession.objects.select_for_update().get(pk=session.pk)
                        entries = [entry_from_value(0, json.loads(text)) for text in items]
                        rows = store.append_lines(
                            locked,
                            entries,
                            items,
                            where=lambda i: f"line {i + 1}",
                            author=Author(kind="user", name="writer", imported=True),
                            quota=options.get("quota", True),
                        )
            answers.append(f"stored {len(rows)}")
        except Exception as exc:
            answers.append(f"{type(exc).__name__}: {exc}")
    # A whole file, as an import or a fork stores it.
    copy = create_session_row(owner=owner, header={"type": "session", "id": "copy"}, filename="")
    stored = list(Entry.objects.filter(session=session).order_by("seq"))
    store.insert_all(
        copy,
        [row.to_domain() for row in stored],
        [(row.raw, row.timestamp, row.search_text) for row in stored],
        size=sum(len(row.raw.encode()) for row in stored),
        # A copy keeps the first entry's author; the rest are the copier's.
        author=Author(kind="user", name="copier"),
        copied_authors={stored[0].entry_id: stored[0].author_id} if stored else {},
    )
    return normalize({"answers": answers, "session": dump(session), "copy": dump(copy)})


def dump(session: ChatSession) -> dict[str, Any]:
    session.refresh_from_db()
    return {
        "rows": [
            [*(getattr(row, f) for f in ROW_FIELDS), row.author.to_domain().label() if row.author else None]
            for row in Entry.objects.filter(session=session).select_related("author").order_by("seq")
        ],
        "segments": [
            [getattr(s, f) for f in SEGMENT_FIELDS]
            for s in Segment.objects.filter(session=session).order_by("index")
        ],
        "counters": [getattr(session, f) for f in SESSION_FIELDS],
        "sums": [
            [s.seq, s.tokens, s.all_tokens, s.messages, s.usage_seq]
            for s in EntrySums.objects.filter(session=session).order_by("seq")
        ],
        "fresh": fresh_sums(session),
    }


def fresh_sums(session: ChatSession) -> list[list[Any]]:
    """The running sums folded again from the stored rows, as the domain defines them."""
    rows = list(Entry.objects.filter(session=session).order_by("seq"))
    at = {row.seq: i for i, row in enumerate(rows)}
    parents = [at[r.parent_seq] if r.parent_seq is not None else -1 for r in rows]
    sums = tree_sums([r.to_domain() for r in rows], parents)
    return [
        [
            rows[i].seq,
            s.tokens,
            s.all_tokens,
            s.messages,
            s.usage_seq if s.usage_seq is None else rows[s.usage_seq].seq,
        ]
        for i, s in enumerate(sums)
        if s is not None
    ]


def normalize(result: dict[str, Any]) -> dict[str, Any]:
    """Replace the ids the server drew (8 hex characters) and the timestamps it filled in."""
    text = json.dumps(result)
    drawn: dict[str, str] = {}
    for found in re.findall(r'"([0-9a-f]{8})"', text):
        drawn.setdefault(found, f"drawn-{len(drawn)}")
    for value, name in drawn.items():
        text = text.replace(f'"{value}"', f'"{name}"').replace(f'\\"{value}\\"', f'\\"{name}\\"')
    text = re.sub(r"20\d\d-\d\d-\d\dT\d\d:\d\d:\d\d\.\d\d\dZ", "STAMP", text)
    return dict(json.loads(text))
