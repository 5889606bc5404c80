"""``Array.prototype.sort`` with a comparator, step for step as V8 runs it.

Pi orders a node's children with a time comparator that answers NaN for unreadable times; V8 reads NaN
as "equal", which makes the comparator inconsistent, so the order depends on which pairs the sort
happens to compare. Python's own ``sorted`` compares other pairs (and CPython 3.13 changed how it finds
descending runs), so the same input could come out in another order. This module fixes the pairs: V8's
run detection and binary insertion (all of the work for fewer than 64 items), then stable merges.
Merges skip V8's galloping, which only changes the answer for an inconsistent comparator on 64 or more
items at once.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

__all__ = ["js_sort"]


def js_sort[T](items: Sequence[T], compare: Callable[[T, T], float]) -> list[T]:
    """Return ``items`` sorted as ``items.slice().sort(compare)`` would be in V8 (NaN reads as 0)."""
    values = list(items)
    n = len(values)
    if n < 2:
        return values

    def cmp(x: T, y: T) -> float:
        result = compare(x, y)
        return 0 if result != result else result

    min_run = _min_run(n)
    runs: list[tuple[int, int]] = []
    low = 0
    while low < n:
        length = _count_and_make_run(values, low, n, cmp)
        if length < min_run:
            forced = min(min_run, n - low)
            _binary_insertion_sort(values, low, low + length, low + forced, cmp)
            length = forced
        runs.append((low, length))
        low += length
    while len(runs) > 1:
        merged: list[tuple[int, int]] = []
        for i in range(0, len(runs) - 1, 2):
            (a, la), (_, lb) = runs[i], runs[i + 1]
            values[a : a + la + lb] = _merge(values[a : a + la], values[a + la : a + la + lb], cmp)
            merged.append((a, la + lb))
        if len(runs) % 2:
            merged.append(runs[-1])
        runs = merged
    return values


def _min_run(n: int) -> int:
    extra = 0
    while n >= 64:
        extra |= n & 1
        n >>= 1
    return n + extra


def _count_and_make_run[T](values: list[T], low: int, high: int, cmp: Callable[[T, T], float]) -> int:
    """Length of the run starting at ``low``; a strictly descending run is reversed in place."""
    if low + 1 == high:
        return 1
    descending = cmp(values[low + 1], values[low]) < 0
    length = 2
    previous = values[low + 1]
    for idx in range(low + 2, high):
        order = cmp(values[idx], previous)
        if (order >= 0) if descending else (order < 0):
            break
        previous = values[idx]
        length += 1
    if descending:
        values[low : low + length] = values[low : low + length][::-1]
    return length


def _binary_insertion_sort[T](
    values: list[T], low: int, start: int, high: int, cmp: Callable[[T, T], float]
) -> None:
    for pos in range(start + 1 if low == start else start, high):
        pivot = values[pos]
        left, right = low, pos
        while left < right:
            mid = left + ((right - left) >> 1)
            if cmp(pivot, values[mid]) < 0:
                right = mid
            else:
                left = mid + 1
        values[left + 1 : pos + 1] = values[left:pos]
        values[left] = pivot


def _merge[T](left: list[T], right: list[T], cmp: Callable[[T, T], float]) -> list[T]:
    out: list[T] = []
    i = j = 0
    while i < len(left) and j < len(right):
        if cmp(right[j], left[i]) < 0:  # only a strictly smaller right item goes first: stable
            out.append(right[j])
            j += 1
        else:
            out.append(left[i])
            i += 1
    out.extend(left[i:])
    out.extend(right[j:])
    return out
