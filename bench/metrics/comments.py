"""Opening a session with 10k comments against the same session without any.

The page asks for comment counts of the rows it draws and for the selected entry's threads only, so the
comments must not slow the first screen: the row compares both sessions' first screen plus those two
comment reads, measured in-process like ``db_open``.
"""

from __future__ import annotations

import random
import statistics
from typing import Any, cast

from bench import generate
from bench.django_env import bench_user
from bench.metrics import Context, Result, metric, ratio_at_most
from bench.metrics.db import _RenamedLines, load_session, open_first_screen, require_db, session_pk
from bench.metrics.inmemory import median_ms

COMMENTS = 10_000
ROWS_DRAWN = 60  # the rows a tree panel draws at once, with its overscan


def _commented_copy(ctx: Context, size: str) -> int:
    """Import a second copy of the session and give it COMMENTS comments spread over its entries."""
    key = f"commented:{size}"
    if key in ctx.state:
        return cast(int, ctx.state[key])
    from discussion.models import Comment
    from sessions_app.models import Entry
    from sessions_app.services import import_stream

    spec = generate.standard_spec(size)
    path = ctx.session(spec).path
    owner = bench_user()
    result = import_stream(
        actor=owner, stream=cast(Any, _RenamedLines(path, f"{path.name}+comments")), filename=path.name
    )
    session = result.session
    ids = list(
        Entry.objects.filter(session=session).exclude(entry_id=None).values_list("entry_id", flat=True)
    )
    rng = random.Random(25)
    roots: list[Comment] = []
    # A thread on every entry near the leaf (what the first screen shows), the rest anywhere.
    near_leaf = ids[-ROWS_DRAWN:]
    for i in range(COMMENTS // 4):
        entry = near_leaf[i % len(near_leaf)] if i < len(near_leaf) * 2 else rng.choice(ids)
        roots.append(
            Comment(session=session, entry_id=entry, author=owner, author_name="bench", body=f"thread {i}")
        )
    Comment.objects.bulk_create(roots, batch_size=2000)
    replies = [
        Comment(
            session=session,
            entry_id=root.entry_id,
            parent=root,
            author=owner,
            author_name="bench",
            body=f"reply {n} to {root.pk}",
        )
        for root in roots
        for n in range(3)
    ]
    Comment.objects.bulk_create(replies, batch_size=2000)
    from django.db import connection

    with connection.cursor() as cursor:
        # What autovacuum does soon after a bulk load; without it the planner guesses from an empty table.
        cursor.execute(f"ANALYZE {Comment._meta.db_table}")
    ctx.state[key] = session.pk
    return session.pk


def _drawn(pk: int) -> list[str]:
    """Return the ids of the rows a tree panel draws first: the newest entries, around the leaf."""
    from sessions_app.models import Entry

    session = load_session(pk)
    leaf = session.leaf_seq or 0
    rows = Entry.objects.filter(session=session, seq__gt=leaf - ROWS_DRAWN).exclude(entry_id=None)
    return list(rows.values_list("entry_id", flat=True))


def _comment_reads(grant: Any, drawn: list[str]) -> None:
    """What the comment module asks for at open: counts of the drawn rows and the leaf's threads."""
    from discussion.queries import comment_counts, threads_of

    comment_counts(grant, drawn)
    threads_of(grant, grant.session.leaf_entry_id, None)


def _open(pk: int, drawn: list[str]) -> None:
    """The first screen as db_open builds it, then the comment reads."""
    from sessions_app.access import Access

    open_first_screen(pk)
    _comment_reads(Access(load_session(pk), True), drawn)


@metric("comments_open")
def comments_open(ctx: Context) -> list[Result]:
    """Open a session with 10k comments and the same session without comments."""
    require_db(ctx)
    from sessions_app.access import Access

    size = "10k"
    plain, commented = session_pk(ctx, size), _commented_copy(ctx, size)
    repeat = 10 if ctx.quick else 30
    plain_rows, commented_rows = _drawn(plain), _drawn(commented)
    # Alternate the two so a busy machine slows both alike; each value is the median of its rounds.
    withouts, withs = [], []
    for _ in range(3):
        withouts.append(median_ms(lambda: _open(plain, plain_rows), repeat=repeat))
        withs.append(median_ms(lambda: _open(commented, commented_rows), repeat=repeat))
    without, with_comments = statistics.median(withouts), statistics.median(withs)
    grant = Access(load_session(commented), True)
    reads = median_ms(lambda: _comment_reads(grant, commented_rows), repeat=repeat)
    return [
        ratio_at_most(
            f"open session {size} with {COMMENTS // 1000}k comments",
            with_comments,
            "ms",
            baseline=without,
            limit=1.15,
            against=f"the same session without comments ({without:.1f} ms)",
            note=f"first screen + counts for {ROWS_DRAWN} drawn rows + the leaf's threads; comments on "
            f"every drawn row, {COMMENTS // 4} threads of 4",
        ),
        Result(
            metric=f"comment reads at open ({COMMENTS // 1000}k comments)",
            value=reads,
            unit="ms",
            goal="reference",
            note="counts of the drawn rows (one grouped query) and the selected entry's threads, rendered",
        ),
    ]
