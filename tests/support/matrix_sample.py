"""The sample of a wide test matrix that `make test` runs; the rest is marked slow."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pytest


def covering(items: Sequence[pytest.Item]) -> list[pytest.Item]:
    """Few cases of one parametrized test in which every value of every
    parameter appears at least once: greedily, the case that adds the most
    values not yet seen (the first such, in collection order)."""
    values = {item: _values(item) for item in items}
    seen: set[tuple[str, str]] = set()
    chosen: list[pytest.Item] = []
    while True:
        best = max(items, key=lambda item: len(values[item] - seen), default=None)
        if best is None or not values[best] - seen:
            return chosen
        chosen.append(best)
        seen |= values[best]


def _values(item: pytest.Item) -> frozenset[tuple[str, str]]:
    callspec = getattr(item, "callspec", None)
    if callspec is None:
        return frozenset()
    return frozenset((name, repr(value)) for name, value in callspec.params.items())


#: Why a test's matrix is wide, and the ids of the cases `make test` keeps
#: (None: a covering sample, see `covering`).
Sample = tuple[str, tuple[str, ...] | None]


def mark_beyond_samples(items: Sequence[pytest.Item], sampled: Mapping[str, Sample]) -> None:
    """Mark slow every case of a `sampled` test (by "path::function") that
    its sample leaves out, with the test's reason."""
    by_test: dict[str, list[pytest.Item]] = {}
    for item in items:
        test = item.nodeid.partition("[")[0]
        if test in sampled:
            by_test.setdefault(test, []).append(item)
    for test, cases in by_test.items():
        why, ids = sampled[test]
        if ids is None:
            kept = set(covering(cases))
        else:
            kept = {case for case in cases if _case_id(case) in ids}
            assert len(kept) == len(ids), f"{test}: no case {set(ids) - set(map(_case_id, cases))}"
        for case in cases:
            if case not in kept:
                case.add_marker(pytest.mark.slow(reason=why))


def _case_id(item: pytest.Item) -> str:
    return item.nodeid.partition("[")[2].removesuffix("]")
