"""Children come out in the order V8's sort gives them, whichever Python runs piweb."""

from __future__ import annotations

import functools
import math
import random

from pitree.jssort import js_sort


def by_time(a: tuple[str, float], b: tuple[str, float]) -> float:
    return a[1] - b[1]  # NaN for an unreadable time, as in JavaScript


def test_an_unreadable_time_keeps_its_place_after_the_pairs_v8_compares() -> None:
    # Found by the differential run: an empty timestamp (NaN) after a later and an earlier child.
    # V8 compares the NaN child only with the middle one, finds it "equal" and leaves it last.
    children = [("late", 36_063_000.0), ("midnight", 0.0), ("unreadable", math.nan)]
    assert [name for name, _ in js_sort(children, by_time)] == ["midnight", "late", "unreadable"]


def test_a_descending_run_with_an_unreadable_time_in_it() -> None:
    children = [("c", 3.0), ("b", 2.0), ("x", math.nan), ("a", 1.0)]
    # Run c>b is descending; x compares equal to b (ends the run); then binary insertion places x and a.
    assert [name for name, _ in js_sort(children, by_time)] == ["a", "b", "c", "x"]


def test_a_consistent_comparator_gives_the_stable_sort() -> None:
    rng = random.Random(7)
    for size in (0, 1, 2, 5, 63, 64, 65, 200, 1000):
        items = [(f"i{k}", float(rng.randint(0, 20))) for k in range(size)]
        expected = sorted(items, key=functools.cmp_to_key(lambda a, b: int(a[1] - b[1])))
        assert js_sort(items, by_time) == expected
