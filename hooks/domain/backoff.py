"""When a failed delivery is tried again: exponential backoff with jitter, capped, until it gives up."""

from __future__ import annotations

import random
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Backoff:
    first: float = 30.0  # seconds before the second attempt
    most: float = 3600.0  # the longest wait between two attempts
    give_up: float = 86400.0  # a delivery still failing this long after its event is marked failed

    def delay(self, attempts: int, rng: random.Random | None = None) -> float:
        """Return the seconds to wait after ``attempts`` failed attempts (1 or more): ``first`` doubled
        per attempt up to ``most``, less up to a fifth at random, so hooks that failed together (one
        receiver down) are not all tried again in the same second."""
        base = min(self.most, self.first * 2 ** max(0, attempts - 1))
        jitter = (rng or random).uniform(0.0, 0.2)
        return base * (1.0 - jitter)

    def exhausted(self, age: float) -> bool:
        """Return whether a delivery whose event is ``age`` seconds old is past trying."""
        return age >= self.give_up
