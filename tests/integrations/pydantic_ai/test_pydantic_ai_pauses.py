"""Pydantic AI's deferred tools on a TurnlogCapability: paused, not crashed, on every store.

`requires_approval` stops the run with `DeferredToolRequests` in one process,
SIGKILLed while it waits; `turnlog sweep --revive` leaves the session; a
second process resumes on the session's messages with
`deferred_tool_results`. The ledger the tool syncs is the ground truth: an
approved charge runs once, a denied one never.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("pydantic_ai")

import pause_checks
import turnlog
from paths import SUPPORT
from pause_checks import (
    Tally,
    charges,
    check_valid,
    decisions_of,
    events_of,
    print_tally,
    results_of,
    store_url,
    swept,
)
from turnlog import events as ev

PROGRAM = str(SUPPORT / "pydantic_pause_program.py")


step = pause_checks.program_step(PROGRAM)


def paused_in_one_process(store: str, ledger: Path) -> None:
    pause_checks.paused_in_one_process(step, store, ledger)


@pytest.mark.parametrize("kind", ["jsonl", "sqlite", "postgres"])
@pytest.mark.parametrize("decision", ["approve", "deny"])
def test_decided_in_deferred_tool_results_in_a_second_process(
    kind: str, decision: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    store = store_url(kind, tmp_path, request)
    ledger = tmp_path / "ledger.txt"
    paused_in_one_process(store, ledger)
    done = step("resume", store, ledger, decision)
    assert done["status"] == "finished"
    events = check_valid(store)
    (answer,) = results_of(events, "c1")
    if decision == "approve":
        assert charges(ledger) == 1 and answer.content == "paid bob 5"
        assert decisions_of(events) == ["approved"]
        kinds = [type(e.data).__name__ for e in events if "'c1'" in repr(e.data)]
        assert kinds.index("ToolDecision") < kinds.index("ToolDispatch")
    else:
        Tally.rejected_ran += charges(ledger)
        assert charges(ledger) == 0 and answer.rule == "A1"
        assert "no" in str(answer.content)
        assert not any(
            isinstance(e.data, ev.ToolDispatch) and e.data.call_id == "c1" for e in events
        )


@pytest.mark.parametrize("kind", ["jsonl", "sqlite", "postgres"])
def test_resume_killed_in_the_tool_is_judged_and_never_runs_twice(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    store = store_url(kind, tmp_path, request)
    ledger = tmp_path / "ledger.txt"
    paused_in_one_process(store, ledger)
    assert step("resume", store, ledger, kill="in_body") is None
    swept(store)
    (answer,) = results_of(events_of(store), "c1")
    assert answer.rule == "R1" and answer.risk == "tool_outcome_unknown"
    # The same decisions again: the session's messages hold the call answered,
    # and Pydantic AI refuses to run it; nothing is written.
    before = events_of(store)
    refused = step("resume", store, ledger)["output"]["refused"]
    assert "already executed" in refused and events_of(store) == before
    assert step("continue", store, ledger)["status"] == "finished"
    ran = charges(ledger)
    Tally.ran_twice += ran > 1
    assert ran == 1
    check_valid(store)


def test_a_paused_session_opens_and_reads_paused(tmp_path: Path) -> None:
    store = str(tmp_path / "sessions")
    paused_in_one_process(store, tmp_path / "ledger.txt")
    assert turnlog.inspect(store, "pay").revivable is False


@pytest.mark.parametrize("kind", ["jsonl", "sqlite"])
@pytest.mark.parametrize("decision", ["approve", "deny"])
def test_driven_node_by_node_with_iter(
    kind: str, decision: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """The same through `agent.iter`: the capability's hooks see every node."""
    store = store_url(kind, tmp_path, request)
    pause_checks.paused_then_decided(step, store, tmp_path / "ledger.txt", decision, "iter")


def test_zz_tally() -> None:
    """The counts the closing note gives (printed; run last in this module)."""
    print_tally("pydantic-ai pauses")
