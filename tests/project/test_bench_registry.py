"""The benchmark runner's target registry (bench/registry.py): targets find
their rows by id, and a target whose row is missing is missed, not skipped.
No timing here: the rows are made up."""

from __future__ import annotations

import sys
from typing import Any

import pytest

from paths import ROOT

sys.path.insert(0, str(ROOT / "bench"))

from registry import Target, check


def row(row_id: str, median: float, **extra: Any) -> dict[str, Any]:
    return {
        "id": row_id,
        "workload": "w",
        "subject": row_id,
        "median": median,
        "unit": "ms",
        **extra,
    }


def test_a_ratio_target_is_judged_against_its_baseline_by_id() -> None:
    target = Target(
        "t", "turnlog within 1.5x the floor", "a", "<=", 1.5, mode="ratio", baseline="b"
    )
    [verdict] = check([target], [row("a", 14.0), row("b", 10.0)])
    assert verdict.met
    assert verdict.value == pytest.approx(1.4)
    assert "`b` 10" in verdict.baseline_text


def test_a_speedup_and_a_paired_field() -> None:
    targets = [
        Target("fast", "2x faster", "a", ">=", 2.0, mode="speedup", baseline="peer"),
        Target("paired", "paired ratio", "d", "<=", 1.2, field="ratio", baseline="raw"),
    ]
    rows = [row("a", 10.0), row("peer", 15.0), row("d", 300.0, ratio=1.25), row("raw", 250.0)]
    fast, paired = check(targets, rows)
    assert not fast.met and fast.value == pytest.approx(1.5)
    assert not paired.met and paired.value == pytest.approx(1.25)


def test_a_missing_row_misses_the_target() -> None:
    """A row renamed (or dropped) no longer carries its target's id: the
    target is missed, so the run exits 1 instead of losing it silently."""
    target = Target("t", "x", "load.turnlog", "<=", 1.5, mode="ratio", baseline="load.floor")
    [verdict] = check([target], [row("load.turnlog.renamed", 1.0), row("load.floor", 1.0)])
    assert not verdict.met
    assert verdict.missing == ("load.turnlog",)
    assert "row missing" in verdict.measured


def test_a_missing_baseline_or_field_misses_the_target() -> None:
    targets = [
        Target("base", "x", "a", "<=", 2.0, mode="ratio", baseline="gone"),
        Target("field", "x", "a", "<=", 64.0, field="peak_rss_mb"),
    ]
    base, field = check(targets, [row("a", 1.0)])
    assert base.missing == ("gone",) and not base.met
    assert field.missing == ("a.peak_rss_mb",) and not field.met


def test_rows_and_targets_need_unique_ids() -> None:
    with pytest.raises(ValueError, match="share the id"):
        check([], [row("a", 1.0), row("a", 2.0)])
    with pytest.raises(ValueError, match="no id"):
        check([], [{"workload": "w", "subject": "s", "median": 1.0}])
    twice = Target("t", "x", "a", "<=", 1.0)
    with pytest.raises(ValueError, match="share the id"):
        check([twice, twice], [row("a", 1.0)])
    with pytest.raises(ValueError, match="needs a baseline"):
        Target("t", "x", "a", "<=", 1.0, mode="ratio")


def test_the_runner_registers_every_target_on_rows_it_makes() -> None:
    """Every target the full run registers names rows by id; the per-turn
    section registers one target per framework and length, and a slope."""
    import per_turn
    import report

    config = {
        "detect_largest": "1 GB",
        "marginal_lengths": [100, 10_000, 100_000],
        "turn_lengths": [100, 1_000, 10_000],
        "sweep_sessions": 10_000,
    }
    targets = report.register_targets(config)
    ids = [t.id for t in targets]
    assert len(ids) == len(set(ids))
    for framework in per_turn.COMPARABLE:
        for length in config["turn_lengths"]:
            assert f"turn.{framework}@{length}" in ids
        assert f"turn.{framework}.slope" in ids
    for restated in ("load.vs-floor", "load.vs-sqlite-session", "durable.always", "nondurable.mix"):
        assert restated in ids
    # With no rows at all, every target is missed: nothing passes by absence.
    assert not any(v.met for v in check(targets, []))


@pytest.mark.parametrize("peer_slope", [0.0, -3.0, float("nan")])
def test_a_ratio_over_a_non_positive_baseline_is_missed_not_met(peer_slope: float) -> None:
    target = Target("t", "grows no steeper", "a", "<=", 1.0, mode="ratio", baseline="b")
    [verdict] = check([target], [row("a", 2.0), row("b", peer_slope)])
    assert not verdict.met
    assert "non-positive" in verdict.measured


def test_a_target_with_an_unknown_mode_is_refused() -> None:
    with pytest.raises(ValueError, match="mode"):
        Target("t", "typo", "a", "<=", 1.0, mode="ration", baseline="b")  # type: ignore[arg-type]
