"""Record each stored assistant message's cost and path sums, and add it to its session's day totals.

The receiver of ``entries_stored`` for assistant messages: it runs in the transaction that stored them,
so costs commit or roll back with their entries, whatever the write path (append, run, sync, import).
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from functools import partial
from typing import Any

import orjson
from django.db import connection, transaction
from django.db.models import Sum
from django.utils import timezone

from costs.domain import Charge, Price, Source, charge_message, day_of
from costs.models import MessageCost, UsageDay
from pitree.jsjson import parse_json
from providers.facade import LLMProvider
from sessions_app.facade import ChatSession, Entry, Segment, bump_revision

__all__ = ["ACTS_ON", "current_prices", "reconcile_session", "record", "recount_session"]

ACTS_ON = (("message", "assistant"),)
COST_BATCH = 5000  # cost rows held before they are written

_DayKey = tuple[date, str, bool]  # a day row's day, model and whether it holds a fork's copies


@dataclass(frozen=True, slots=True)
class _Stored:
    seq: int
    segment: int | None
    depth: int | None
    timestamp: str
    message: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class _Sums:
    cost: float = 0.0
    tokens: int = 0
    messages: int = 0


def current_prices() -> dict[str, Price]:
    """Return the configured price of each "provider/model" (the first record with a price wins)."""
    prices: dict[str, Price] = {}
    rows = LLMProvider.objects.order_by("pk").values_list(
        "provider", "model_id", "cost_input", "cost_output", "cost_cache_read", "cost_cache_write"
    )
    for provider, model, *rates in rows:
        price = Price(input=rates[0], output=rates[1], cache_read=rates[2], cache_write=rates[3])
        name = f"{provider}/{model}" if provider else model
        if price.is_set and name not in prices:
            prices[name] = price
    return prices


def record(
    sender: Any,
    *,
    session: ChatSession,
    first_seq: int,
    last_seq: int,
    rows: Sequence[Entry] | None,
    **_: Any,
) -> None:
    """Store the cost of the batch's assistant messages (receiver of ``entries_stored``)."""
    if rows is not None:
        ordered = sorted(
            (r for r in rows if r.type == "message" and r.role == "assistant"), key=lambda r: r.seq
        )
        found: Iterable[_Stored | None] = (_from_row(r) for r in ordered)
    else:
        found = _read(session, first_seq, last_seq)
    days = _priced(session, found, partial(_insert, session), earlier=first_seq > 0)
    if days:
        _merge_days(session, days)


def _priced(
    session: ChatSession,
    found: Iterable[_Stored | None],
    write: Callable[[list[tuple[Any, ...]]], None],
    *,
    earlier: bool,
) -> dict[_DayKey, UsageDay]:
    """Write the cost rows of the found messages, which come in seq order, and return their day totals.

    Each message is charged as it is read, and its row written with the next ``COST_BATCH``: an import
    brings thousands (their rows held 12 MB of a 100k-entry import's memory)."""
    prices = _LazyPrices()
    today = timezone.now().date()
    walker = _PathWalker(session, earlier=earlier)
    costs: list[tuple[Any, ...]] = []
    days: dict[_DayKey, UsageDay] = {}
    copies = session.copied_entries
    for item in found:
        if item is None:
            continue
        charge = charge_message(item.message, prices)
        day = _day(item, today)
        before = walker.before(item.segment, item.depth)
        sums = _Sums(before.cost + charge.cost, before.tokens + charge.tokens, before.messages + 1)
        costs.append(_cost_row(item.seq, item.segment, item.depth, charge, day, sums))
        walker.add(item.segment, item.depth, sums)
        _add_day(days, session, day, charge, copied=item.seq < copies)
        if len(costs) >= COST_BATCH:
            write(costs)
            costs = []
    if costs:
        write(costs)
    return days


_COST_COLUMNS = (
    ("seq", "int"),
    ("segment", "int"),
    ("depth", "int"),
    ("model", "text"),
    ("day", "date"),
    ("input", "bigint"),
    ("output", "bigint"),
    ("cache_read", "bigint"),
    ("cache_write", "bigint"),
    ("cost", "float8"),
    ("source", "text"),
    ("path_cost", "float8"),
    ("path_tokens", "bigint"),
    ("path_messages", "int"),
)  # the column types are kept for readers; COPY takes them from the table


def _insert(session: ChatSession, costs: list[tuple[Any, ...]]) -> None:
    """Insert the rows; on PostgreSQL by COPY (an import brings thousands)."""
    names = [name for name, _ in _COST_COLUMNS]
    if connection.vendor != "postgresql" or len(costs) < 50:
        rows = [MessageCost(session=session, **dict(zip(names, row, strict=True))) for row in costs]
        MessageCost.objects.bulk_create(rows, batch_size=2000)
        return
    table = MessageCost._meta.db_table
    statement = f"COPY {table} (session_id, {', '.join(names)}) FROM STDIN"
    with connection.cursor() as cursor, cursor.cursor.copy(statement) as copy:
        for row in costs:
            copy.write_row((session.pk, *row))


def recount_session(session_pk: int) -> int:
    """Record a session's costs again from its entries at today's prices; return its assistant messages.

    For prices set or changed after messages without a recorded cost were stored. Holds SELECT FOR
    UPDATE on the session row, as the entry store does while it appends, so no batch lands in between.
    """
    with transaction.atomic():
        session = ChatSession.objects.select_for_update().filter(pk=session_pk).first()
        if session is None:
            return 0
        MessageCost.objects.filter(session=session).delete()
        UsageDay.objects.filter(session=session).delete()
        if session.next_seq:
            record(None, session=session, first_seq=0, last_seq=session.next_seq - 1, rows=None)
        bump_revision(session.pk)  # answers cached for the old costs must not be served again
        return MessageCost.objects.filter(session=session).count()


def reconcile_session(sender: Any, *, session_id: int, **_: Any) -> str | None:
    """Recount a session whose cost or day rows do not match its assistant messages (receiver of
    ``bookkeeping_checked``): the previous release stored messages without them during an upgrade, and
    the path sums of messages stored after those are short too. Return "costs" when it recounted."""
    messages = Entry.objects.filter(session_id=session_id, type="message", role="assistant").count()
    recorded = MessageCost.objects.filter(session_id=session_id).count()
    days = UsageDay.objects.filter(session_id=session_id).aggregate(n=Sum("messages"))["n"] or 0
    if messages == recorded == days:
        return None
    recount_session(session_id)
    return "costs"


def _from_row(row: Entry) -> _Stored | None:
    payload = parse_json(row.raw)
    message = payload.get("message") if isinstance(payload, dict) else None
    if not isinstance(message, dict):
        return None
    return _Stored(row.seq, row.segment, row.depth, row.timestamp, message)


def _read(session: ChatSession, first_seq: int, last_seq: int) -> Iterable[_Stored | None]:
    """Read a bulk-stored range's assistant messages."""
    table = Entry._meta.db_table
    query = f"""
        SELECT seq, segment, depth, timestamp, raw FROM {table}
         WHERE session_id = %s AND seq BETWEEN %s AND %s AND type = 'message' AND role = 'assistant'
         ORDER BY seq
    """
    # A batch at a time (an import's tens of thousands held 8 MB in one result); the rows' costs are
    # written between two batches. The lines are parsed here: PostgreSQL took three times as long to
    # hand over only what a charge reads (parsing each line as jsonb) as to hand over the lines.
    with connection.chunked_cursor() as cursor:
        cursor.execute(query, [session.pk, first_seq, last_seq])
        while batch := cursor.fetchmany(2000):
            for seq, segment, depth, stamp, raw in batch:
                value = _loads(raw)
                message = value.get("message") if isinstance(value, dict) else None
                yield (
                    _Stored(seq, segment, depth, stamp or "", message) if isinstance(message, dict) else None
                )


def _loads(raw: str) -> Any:
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:  # what JSON.parse accepts beyond orjson (a lone surrogate)
        return parse_json(raw)


def _day(item: _Stored, today: date) -> date:
    day = day_of(item.timestamp) or day_of(item.message.get("timestamp"))
    try:
        return date.fromisoformat(day) if day else today
    except ValueError:
        return today


def _cost_row(
    seq: int, segment: int | None, depth: int | None, charge: Charge, day: date, sums: _Sums
) -> tuple[Any, ...]:
    """Return the row's values in ``_COST_COLUMNS`` order (no model instance: imports bring thousands)."""
    return (
        seq,
        segment if segment is not None else -1,
        depth if depth is not None else -1,
        charge.model[:512],
        day,
        charge.input,
        charge.output,
        charge.cache_read,
        charge.cache_write,
        charge.cost,
        charge.source.value,
        sums.cost,
        sums.tokens,
        sums.messages,
    )


def _add_day(
    days: dict[_DayKey, UsageDay], session: ChatSession, day: date, charge: Charge, *, copied: bool
) -> None:
    key = (day, charge.model[:512], copied)
    row = days.get(key)
    if row is None:
        row = days[key] = UsageDay(session=session, day=day, model=key[1], copied=copied)
    row.input += charge.input
    row.output += charge.output
    row.cache_read += charge.cache_read
    row.cache_write += charge.cache_write
    row.cost += charge.cost
    row.messages += 1
    row.unpriced += charge.source == Source.UNPRICED


_DAY_FIELDS = ("input", "output", "cache_read", "cache_write", "cost", "messages", "unpriced")


def _merge_days(session: ChatSession, days: dict[_DayKey, UsageDay]) -> None:
    """Add the batch's day totals to the stored ones, in one upsert (PostgreSQL and SQLite alike)."""
    table = UsageDay._meta.db_table
    names = ", ".join(_DAY_FIELDS)
    sets = ", ".join(f"{f} = {table}.{f} + excluded.{f}" for f in _DAY_FIELDS)
    one = "(%s, %s, %s, %s, " + ", ".join(["%s"] * len(_DAY_FIELDS)) + ")"
    rows = list(days.values())
    with connection.cursor() as cursor:
        for start in range(0, len(rows), 500):  # SQLite takes a bounded number of parameters
            chunk = rows[start : start + 500]
            params: list[Any] = []
            for row in chunk:
                params += [session.pk, row.day, row.model, row.copied]
                params += [getattr(row, f) for f in _DAY_FIELDS]
            values = ", ".join([one] * len(chunk))
            cursor.execute(
                f"INSERT INTO {table} (session_id, day, model, copied, {names}) VALUES {values} "
                f"ON CONFLICT (session_id, day, model, copied) DO UPDATE SET {sets}",
                params,
            )


class _LazyPrices(Mapping[str, Price]):
    """The configured prices, read only when a message has no recorded cost (most have one)."""

    def __init__(self) -> None:
        self._prices: dict[str, Price] | None = None

    def _loaded(self) -> dict[str, Price]:
        if self._prices is None:
            self._prices = current_prices()
        return self._prices

    def __getitem__(self, key: str) -> Price:
        return self._loaded()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._loaded())

    def __len__(self) -> int:
        return len(self._loaded())


class _PathWalker:
    """Find the path sums of an entry's nearest assistant ancestor, among this batch and stored rows.

    Within a segment a deeper entry is a later one, so this batch's rows in a segment lie below every
    stored row of it; leaving a segment continues in its parent segment above where it starts.
    """

    def __init__(self, session: ChatSession, *, earlier: bool) -> None:
        self.session = session
        self.earlier = earlier  # whether the session held entries before this batch
        self.batch: dict[int, tuple[list[int], list[_Sums]]] = {}
        self.segments: dict[int, tuple[int | None, int]] = {}

    def add(self, segment: int | None, depth: int | None, sums: _Sums) -> None:
        if segment is None or depth is None:
            return
        depths, values = self.batch.setdefault(segment, ([], []))
        depths.append(depth)
        values.append(sums)

    def before(self, segment: int | None, depth: int | None) -> _Sums:
        """Return the sums of the nearest assistant strictly above (segment, depth), or zeros."""
        if segment is None or depth is None:
            return _Sums()
        limit = depth - 1
        while True:
            found = self._in_segment(segment, limit)
            if found is not None:
                return found
            parent = self._parent(segment)
            if parent is None:
                return _Sums()
            segment, limit = parent

    def _in_segment(self, segment: int, limit: int) -> _Sums | None:
        depths, values = self.batch.get(segment, ((), ()))
        at = bisect.bisect_right(depths, limit)  # type: ignore[arg-type]
        if at:
            return values[at - 1]  # type: ignore[index]
        if not self.earlier:
            return None
        row = (
            MessageCost.objects.filter(session=self.session, segment=segment, depth__lte=limit)
            .order_by("-depth")
            .values_list("path_cost", "path_tokens", "path_messages")
            .first()
        )
        return _Sums(*row) if row is not None else None

    def _parent(self, segment: int) -> tuple[int, int] | None:
        """Return (parent segment, depth of the entry the segment hangs under), or None at a root."""
        if not self.earlier and not self.segments:
            # A whole import walks many segments: read them all at once.
            rows = Segment.objects.filter(session=self.session).values_list(
                "index", "parent_index", "start_depth"
            )
            self.segments = {index: (parent, start) for index, parent, start in rows}
        if segment not in self.segments:
            row = (
                Segment.objects.filter(session=self.session, index=segment)
                .values_list("parent_index", "start_depth")
                .first()
            )
            self.segments[segment] = row if row is not None else (None, 0)
        parent, start = self.segments[segment]
        return None if parent is None else (parent, start - 1)
