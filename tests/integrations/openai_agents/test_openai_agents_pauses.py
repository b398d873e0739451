"""The Agents SDK's human approval on a TurnlogSession: paused, not crashed, on every store.

The SDK's documented flow (`needs_approval`, `result.interruptions`, a
`RunState` saved as JSON, approved or rejected in another process, resumed
with `Runner.run(agent, state, session=session)`) in three processes, the
first SIGKILLed while it waits, `turnlog sweep --revive` run over the store
between them. The ledger the tool syncs is the ground truth: the approved
charge runs once, a rejected one never, and no paused session changes
under a sweep.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

import forkserver

pytest.importorskip("agents")

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
    run_program,
    store_url,
    swept,
)
from turnlog import events as ev

PROGRAM = str(SUPPORT / "agents_pause_program.py")


def step(name: str, store: str, ledger: Path, hooks: str, kill: str = "none") -> Any:
    return run_program(PROGRAM, name, store, str(ledger), hooks, kill)


def paused_in_one_process(store: str, ledger: Path, hooks: str) -> None:
    pause_checks.paused_in_one_process(step, store, ledger, hooks)


@pytest.mark.parametrize("kind", ["jsonl", "sqlite", "postgres"])
@pytest.mark.parametrize("hooks", ["hooks", "plain"])
def test_approved_in_a_second_process_runs_once_in_a_third(
    kind: str, hooks: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    store = store_url(kind, tmp_path, request)
    ledger = tmp_path / "ledger.txt"
    paused_in_one_process(store, ledger, hooks)
    step("approve", store, ledger, hooks)
    swept(store)
    assert step("resume", store, ledger, hooks) == {"status": "finished", "output": "done"}
    assert charges(ledger) == 1
    events = check_valid(store)
    (answer,) = results_of(events, "c1")
    assert answer.content == "paid bob 5" and answer.risk is None
    if hooks == "hooks":
        # Approved on the RunState, the call is dispatched write-ahead.
        assert decisions_of(events) == ["approved"]
        kinds = [type(e.data).__name__ for e in events if "c1" in str(e.data)]
        assert kinds.index("ToolDecision") < kinds.index("ToolDispatch") < kinds.index("ToolResult")
    else:
        # Without the hooks turnlog saw no tool start: the SDK delivered it.
        assert decisions_of(events) == ["delivered"]


@pytest.mark.parametrize("kind", ["jsonl", "sqlite", "postgres"])
@pytest.mark.parametrize("hooks", ["hooks", "plain"])
def test_rejected_never_runs(
    kind: str, hooks: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    store = store_url(kind, tmp_path, request)
    ledger = tmp_path / "ledger.txt"
    paused_in_one_process(store, ledger, hooks)
    step("reject", store, ledger, hooks)
    assert step("resume", store, ledger, hooks)["output"] == "done"
    Tally.rejected_ran += charges(ledger)
    assert charges(ledger) == 0
    events = check_valid(store)
    assert not any(isinstance(e.data, ev.ToolDispatch) and e.data.call_id == "c1" for e in events)
    (answer,) = results_of(events, "c1")
    assert answer.content == "Tool execution was not approved."  # the SDK's words, as saved


@pytest.mark.parametrize("kind", ["jsonl", "sqlite", "postgres"])
# Only the hooks see a tool end: a plain run has no "answered" instant.
@pytest.mark.parametrize(
    ("hooks", "kill"), [("hooks", "in_body"), ("hooks", "answered"), ("plain", "in_body")]
)
def test_resume_killed_is_judged_and_never_runs_twice(
    kind: str, hooks: str, kill: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    store = store_url(kind, tmp_path, request)
    ledger = tmp_path / "ledger.txt"
    paused_in_one_process(store, ledger, hooks)
    step("approve", store, ledger, hooks)
    assert step("resume", store, ledger, hooks, kill) is None
    assert charges(ledger) == 1
    swept(store)
    events = events_of(store)
    if hooks == "plain":
        # Without the hooks no tool start reached the log: it still reads
        # paused, and the run that dropped the pause says it may have run.
        assert turnlog.inspect(store, "pay").status == "paused"
        assert results_of(events, "c1") == []
    elif kill == "in_body":
        (answer,) = results_of(events, "c1")
        assert answer.risk == "tool_outcome_unknown" and answer.rule == "R1"
    else:
        (answer,) = results_of(events, "c1")
        assert answer.content == "paid bob 5"
    if hooks == "hooks":
        # The decided RunState again: refused before the tool can run.
        done = forkserver.run(
            [sys.executable, PROGRAM, "again", store, str(ledger), hooks, "none"],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode != 0 and "already answered" in done.stderr, done.stderr
    assert step("continue", store, ledger, hooks)["output"] == "carried on"
    ran = charges(ledger)
    Tally.ran_twice += ran > 1
    assert ran == 1
    (answer,) = results_of(check_valid(store), "c1")
    if hooks == "plain":
        assert answer.rule == "A3" and answer.risk == "tool_outcome_unknown"


@pytest.mark.parametrize("kind", ["jsonl", "sqlite"])
@pytest.mark.parametrize("hooks", ["hooks", "plain"])
def test_new_input_while_paused_settles_the_pause_as_not_run(
    kind: str, hooks: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """The SDK drops a call nobody decided when a new run starts on the
    session; the log says the wait ended without a decision (A2)."""
    store = store_url(kind, tmp_path, request)
    ledger = tmp_path / "ledger.txt"
    paused_in_one_process(store, ledger, hooks)
    assert step("continue", store, ledger, hooks)["output"] == "carried on"
    assert charges(ledger) == 0
    events = check_valid(store)
    (answer,) = results_of(events, "c1")
    assert answer.rule == "A3" and answer.risk == "tool_outcome_unknown"
    assert "a new run began" in str(answer.content)
    assert next(e.data.reason for e in events if isinstance(e.data, ev.TurnEnd)) == "expired"


def test_zz_tally() -> None:
    """The counts the closing note gives (printed; run last in this module)."""
    print_tally("agents pauses")
