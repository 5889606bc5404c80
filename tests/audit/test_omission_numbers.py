"""Token counters too large for the database are kept as unknown instead of failing the import."""

from __future__ import annotations

from audit.omissions import _number


def test_counters_outside_bigint_are_unknown() -> None:
    assert _number(1e21) is None
    assert _number(12345678901234567890) is None
    assert _number(float("inf")) is None
    assert _number(2**63 - 1) == 2**63 - 1
    assert _number(-(2**63)) == -(2**63)
    assert _number(1.9) == 1
    assert _number(True) is None
