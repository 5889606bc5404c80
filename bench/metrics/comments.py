"""Opening a session with 10k comments against the same session without any.

The page asks for comment counts of the rows it draws and for the selected entry's threads only, so the
comments must not slow the first screen: the row compares both sessions' first screen plus those two
comment reads, measured in-process like ``db_open``.
"""

from __future__ import annotations

import random
import time
from typing import Any, cast

from bench import generate
from bench.django_env import bench_user
from bench.metrics import Context, Result, metric, ratio_at_most
from bench.metrics.db import _RenamedLines, load_session, open_first_screen, require_db
from bench.metrics.inmemory import median_ms

COMMENTS = 10_000
ROWS_DRAWN = 60  # the rows a tree panel draws at once, with its overscan


def _copy(ctx: Context, size: str) -> int:
    """Import a copy of the session of its own, for this row alone."""
    from sessions_app.services import import_stream

    path = ctx.session(generate.standard_spec(size)).path
    result = import_stream(
        actor=bench_user(), stream=cast(Any, _RenamedLines(path, f"{path.name}+comments")), filename=path.name
    )
    return result.session.pk


def _add_comments(pk: int) -> None:
    """Give the session COMMENTS comments: a thread on each of the newest entries, the rest anywhere."""
    from django.db import connection

    from discussion.models import Comment
    from documents.rendering import render_markdown
    from sessions_app.models import Entry

    session = load_session(pk)
    owner = bench_user()
    ids = list(
        Entry.objects.filter(session=session).exclude(entry_id=None).values_list("entry_id", flat=True)
    )
    rng = random.Random(25)
    near_leaf = ids[-ROWS_DRAWN:]
    roots = [
        Comment(
            session=session,
            entry_id=near_leaf[i % len(near_leaf)] if i < len(near_leaf) * 2 else rng.choice(ids),
            author=owner,
            author_name="bench",
            body=f"thread {i}",
            html=render_markdown(f"thread {i}"),
        )
        for i in range(COMMENTS // 4)
    ]
    Comment.objects.bulk_create(roots, batch_size=2000)
    replies = [
        Comment(
            session=session,
            entry_id=root.entry_id,
            parent=root,
            author=owner,
            author_name="bench",
            body=f"reply {n} to {root.pk}",
            html=render_markdown(f"reply {n} to {root.pk}"),
        )
        for root in roots
        for n in range(3)
    ]
    Comment.objects.bulk_create(replies, batch_size=2000)
    with connection.cursor() as cursor:
        # What autovacuum does soon after a bulk load; without it the planner guesses from an empty table.
        cursor.execute(f"ANALYZE {Comment._meta.db_table}")


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
    # One session measured before and after its comments are added: two imports of one file differ by
    # more than the comments could (their rows' placement), so a second copy is no fair baseline.
    pk = _copy(ctx, size)
    repeat = 10 if ctx.quick else 30
    drawn = _drawn(pk)

    # Each value is the best of its rounds' medians: the least disturbed by other work on the machine.
    def best(fn: Any) -> float:
        return min(median_ms(fn, repeat=repeat) for _ in range(5))

    # Both sides settle after their load (the import, then the comments) and read the pages once first.
    time.sleep(2)
    best(lambda: open_first_screen(pk))
    screen_before = best(lambda: open_first_screen(pk))
    whole_before = best(lambda: _open(pk, drawn))
    _add_comments(pk)
    time.sleep(2)
    best(lambda: open_first_screen(pk))
    screen_after = best(lambda: open_first_screen(pk))
    whole_after = best(lambda: _open(pk, drawn))
    grant = Access(load_session(pk), True)
    reads = median_ms(lambda: _comment_reads(grant, drawn), repeat=repeat)
    how = f"comments on every drawn row, {COMMENTS // 4} threads of 4"
    return [
        ratio_at_most(
            f"open session {size} with {COMMENTS // 1000}k comments (first screen)",
            screen_after,
            "ms",
            baseline=screen_before,
            limit=1.15,
            against="the same session before its comments",
            note=f"header, leaf, tree and the branch's newest entries, as db_open builds them; {how}",
        ),
        ratio_at_most(
            f"open session {size} with {COMMENTS // 1000}k comments + the page's comment reads",
            whole_after,
            "ms",
            baseline=whole_before,
            limit=1.5,
            against="the same before its comments",
            note=f"first screen, then counts for {ROWS_DRAWN} drawn rows and the leaf's threads "
            "(requests the page sends after drawing)",
        ),
        Result(
            metric=f"comment reads at open ({COMMENTS // 1000}k comments)",
            value=reads,
            unit="ms",
            goal="reference",
            note="counts of the drawn rows (one grouped query) and the selected entry's threads",
        ),
    ]
