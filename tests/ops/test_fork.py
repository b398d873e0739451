"""Fork: a closed prefix with lineage; never half a turn."""

from __future__ import annotations

import pytest

import turnlog
from builders import (
    assistant,
    call,
    dispatch,
    number,
    result,
    step_end,
    step_start,
    turn_end,
    turn_start,
)
from turnlog import events as ev
from turnlog.core.fold import fold
from turnlog.ops.fork import fork
from turnlog.ops.recover import plan

LOG = number(
    [
        ev.UserMessage(content="hi"),
        turn_start(1),
        step_start(1, 1),
        assistant(call("a")),
        dispatch("a"),
        result("a"),
        step_end(1, 1),
        turn_end(1, 1),
        ev.UserMessage(content="more"),
        turn_start(2),
        assistant(call("b")),
    ]
)


def test_prefix_fold_equals_fork_fold() -> None:
    forked = fork(LOG, 8, session_id="child")
    assert [e.seq for e in forked] == list(range(9))
    assert forked[1:] == LOG[1:9]
    header = forked[0].data
    assert isinstance(header, ev.Session)
    assert header.session_id == "child"
    assert header.parent == ev.Parent(session_id="s1", seed_length=9)
    assert header.created_at is None  # not the parent's: fork is pure, the caller stamps it
    stamped = fork(LOG, 8, session_id="c2", created_at="2026-12-01T00:00:00Z")
    assert stamped[0].data.created_at == "2026-12-01T00:00:00Z"  # type: ignore[union-attr]
    assert fold(forked).messages == fold(LOG[:9]).messages


@pytest.mark.parametrize("at", [2, 3, 4, 5, 6, 7, 10, 11])
def test_boundary_inside_a_turn_is_refused_with_its_start(at: int) -> None:
    with pytest.raises(turnlog.errors.ForkBoundaryError) as info:
        fork(LOG, at, session_id="child")
    start = 2 if at < 8 else 10
    assert f"seq {start}" in str(info.value)


def test_turn_start_counts_as_inside_its_turn() -> None:
    with pytest.raises(turnlog.errors.ForkBoundaryError, match="seq 2"):
        fork(LOG, 2, session_id="child")
    fork(LOG, 1, session_id="child")


@pytest.mark.parametrize("at", [-1, 12, 100])
def test_out_of_range_refused(at: int) -> None:
    with pytest.raises(turnlog.errors.ForkBoundaryError, match="outside the log"):
        fork(LOG, at, session_id="child")


def test_recover_then_fork() -> None:
    repaired = [*LOG, *plan(LOG).events]
    forked = fork(repaired, repaired[-1].seq, session_id="child")
    assert fold(forked).open_turn is None
    assert len(forked) == len(repaired)
