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

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("agents")

import turnlog
from paths import TESTS
from turnlog import events as ev
from turnlog.core.fold import Fold
from turnlog.providers import PROVIDERS, render, validate
from turnlog.stores import open_store

PROGRAM = str(TESTS / "agents_pause_program.py")
SIGKILLED = -9


class Tally:
    runs = kills = ran_twice = approvals_lost = paused_changed = rejected_ran = 0


def step(name: str, store: str, ledger: Path, hooks: str, kill: str = "none") -> Any:
    done = subprocess.run(
        [sys.executable, PROGRAM, name, store, str(ledger), hooks, kill],
        capture_output=True,
        text=True,
        timeout=120,
    )
    if done.returncode == SIGKILLED:
        Tally.kills += 1
        return None
    assert done.returncode == 0, (name, kill, done.stdout, done.stderr)
    return json.loads(done.stdout.splitlines()[-1])


def store_url(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    if kind == "jsonl":
        return str(tmp_path / "sessions")
    if kind == "sqlite":
        return f"sqlite:///{tmp_path / 's.db'}"
    url: str = request.getfixturevalue("postgres_url")
    schema = f"sdkpause{os.getpid()}_{abs(hash(tmp_path.name)) % 10**8}"
    return f"{url}{'&' if '?' in url else '?'}schema={schema}"


def events_of(store: str) -> list[ev.Event]:
    opened, _ = open_store(store)
    return list(opened.iter_events("pay"))


def swept(store: str) -> subprocess.CompletedProcess[str]:
    """`turnlog sweep --revive` over the store; a paused session is left byte for byte."""
    paused = turnlog.inspect(store, "pay").status == "paused"
    before = [ev.to_builtins(e) for e in events_of(store)]
    done = subprocess.run(
        [sys.executable, "-m", "turnlog", "sweep", "--store", store, "--revive"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    if paused:
        changed = [ev.to_builtins(e) for e in events_of(store)] != before
        Tally.paused_changed += changed
        assert not changed
    return done


def charges(ledger: Path) -> int:
    return ledger.read_text().split().count("c1") if ledger.exists() else 0


def check_valid(store: str) -> list[ev.Event]:
    events = events_of(store)
    state = Fold(events).state
    assert state.open_turn is None, [e.type for e in events]
    for provider in PROVIDERS:
        assert validate(provider, render(provider, state.messages)) == [], provider
    results = Counter(e.data.call_id for e in events if isinstance(e.data, ev.ToolResult))
    assert all(count == 1 for count in results.values()), results
    return events


def results_of(events: list[ev.Event], call_id: str) -> list[ev.ToolResult]:
    return [
        e.data for e in events if isinstance(e.data, ev.ToolResult) and e.data.call_id == call_id
    ]


def decisions_of(events: list[ev.Event]) -> list[str]:
    return [e.data.decision for e in events if isinstance(e.data, ev.ToolDecision)]


def paused_in_one_process(store: str, ledger: Path, hooks: str) -> None:
    """The run pauses, and its process is killed while it waits; a sweep leaves it."""
    Tally.runs += 1
    assert step("run", store, ledger, hooks, "waiting") is None
    found = turnlog.inspect(store, "pay")
    assert found.status == "paused", (found.status, found.owed_calls, found.reason)
    assert found.owed_calls == ()
    assert [(a.call_id, a.name, a.kind) for a in found.awaiting] == [("c1", "pay", "approval")]
    done = swept(store)
    assert "paused: waiting for approval of pay (c1)" in done.stdout + done.stderr


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
        done = subprocess.run(
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
    print(
        f"\nagents pauses: runs={Tally.runs} kills={Tally.kills} ran_twice={Tally.ran_twice} "
        f"paused_changed={Tally.paused_changed} rejected_ran={Tally.rejected_ran}",
        file=sys.stderr,
    )
