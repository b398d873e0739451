"""LangGraph approvals through the turnlog tool wrapper: paused, not crashed, on every store.

A tool the wrapper pauses (`pauses={"pay": "approval"}`) stops the graph on
the wrapper's own `interrupt()`, before its dispatch, in one process; a
sweep leaves the session; a second process resumes the thread from its
checkpoint with `Command(resume=...)`. The ledger the tool syncs is the
ground truth: an approved charge runs once, a declined one never.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("langgraph.checkpoint.sqlite")

import pause_checks
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

PROGRAM = str(SUPPORT / "langgraph_pause_program.py")


step = pause_checks.program_step(PROGRAM)


def paused_in_one_process(store: str, ledger: Path) -> None:
    pause_checks.paused_in_one_process(step, store, ledger)


@pytest.mark.parametrize("kind", ["jsonl", "sqlite", "postgres"])
@pytest.mark.parametrize("decision", ["approve", "deny"])
def test_resumed_with_a_decision_in_a_second_process(
    kind: str, decision: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    store = store_url(kind, tmp_path, request)
    ledger = tmp_path / "ledger.txt"
    paused_in_one_process(store, ledger)
    done = step("resume", store, ledger, decision)
    assert done["status"] == "finished" and done["waits"] == []
    events = check_valid(store)
    (answer,) = results_of(events, "c1")
    if decision == "approve":
        assert charges(ledger) == 1 and answer.content == "paid bob 5"
        assert decisions_of(events) == ["approved"]
        kinds = [type(e.data).__name__ for e in events if "'c1'" in repr(e.data)]
        assert kinds.index("ToolPaused") < kinds.index("ToolDecision") < kinds.index("ToolDispatch")
    else:
        Tally.rejected_ran += charges(ledger)
        assert charges(ledger) == 0 and answer.rule == "A1"
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
    # The thread resumed from its checkpoint again: LangGraph runs the tool
    # step again, and the wrapper hands it the log's answer instead.
    assert step("resume", store, ledger)["status"] == "finished"
    ran = charges(ledger)
    Tally.ran_twice += ran > 1
    assert ran == 1
    check_valid(store)


def test_a_resume_value_that_is_not_a_decision_is_refused(tmp_path: Path) -> None:
    store = str(tmp_path / "sessions")
    ledger = tmp_path / "ledger.txt"
    paused_in_one_process(store, ledger)
    before = events_of(store)
    done = step("resume", store, ledger, "text")
    assert done["status"] == "paused" and "is not True or False" in done["refused"]
    assert events_of(store) == before and charges(ledger) == 0


@pytest.mark.parametrize("kind", ["jsonl", "sqlite"])
@pytest.mark.parametrize("decision", ["approve", "deny"])
def test_on_asyncio_paused_in_one_process_resumed_in_another(
    kind: str, decision: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """The same through `ainvoke` and the wrapper's `awrap`."""
    store = store_url(kind, tmp_path, request)
    done = pause_checks.paused_then_decided(step, store, tmp_path / "ledger.txt", decision, "async")
    assert done["waits"] == []


def test_zz_tally() -> None:
    """The counts the closing note gives (printed; run last in this module)."""
    print_tally("langgraph pauses")
