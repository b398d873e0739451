"""What the framework pause tests check, whatever the framework: a session `pay` in a
store given as a target, a ledger the tool syncs, a sweep that leaves a pause alone."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import forkserver
import turnlog
from turnlog import events as ev
from turnlog.core.fold import Fold
from turnlog.providers import PROVIDERS, render, validate
from turnlog.stores import open_store

SIGKILLED = -9
SESSION = "pay"


class Tally:
    """Counts over a module's campaign, for the closing note."""

    runs = kills = ran_twice = paused_changed = rejected_ran = 0


def run_program(program: str, *args: str) -> Any:
    """One process of a pause program; None when it was SIGKILLed."""
    done = forkserver.run(
        [sys.executable, program, *args], capture_output=True, text=True, timeout=120
    )
    if done.returncode == SIGKILLED:
        Tally.kills += 1
        return None
    assert done.returncode == 0, (args, done.stdout, done.stderr)
    return json.loads(done.stdout.splitlines()[-1])


def store_url(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    if kind == "jsonl":
        return str(tmp_path / "sessions")
    if kind == "sqlite":
        return f"sqlite:///{tmp_path / 's.db'}"
    url: str = request.getfixturevalue("postgres_url")
    schema = f"fwpause{os.getpid()}_{abs(hash(str(tmp_path))) % 10**8}"
    return f"{url}{'&' if '?' in url else '?'}schema={schema}"


def events_of(store: str) -> list[ev.Event]:
    opened, _ = open_store(store)
    return list(opened.iter_events(SESSION))


def swept(store: str) -> subprocess.CompletedProcess[str]:
    """`turnlog sweep --revive` over the store; a paused session is left byte for byte."""
    paused = turnlog.inspect(store, SESSION).status == "paused"
    before = [ev.to_builtins(e) for e in events_of(store)]
    done = forkserver.run(
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
    """The turn is closed, every call answered once, every export valid."""
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


def paused_and_swept(store: str) -> None:
    """The session reads paused, owes nothing, and a sweep leaves it."""
    found = turnlog.inspect(store, SESSION)
    assert found.status == "paused", (found.status, found.owed_calls, found.reason)
    assert found.owed_calls == ()
    assert [(a.call_id, a.name, a.kind) for a in found.awaiting] == [("c1", "pay", "approval")]
    done = swept(store)
    assert "paused: waiting for approval of pay (c1)" in done.stdout + done.stderr


def paused_in_one_process(step: Callable[..., Any], store: str, ledger: Path, *args: str) -> None:
    """The run pauses, and its process is killed while it waits; a sweep leaves it."""
    Tally.runs += 1
    assert step("run", store, ledger, *args, kill="waiting") is None
    paused_and_swept(store)


def print_tally(name: str) -> None:
    print(
        f"\n{name}: runs={Tally.runs} kills={Tally.kills} ran_twice={Tally.ran_twice} "
        f"paused_changed={Tally.paused_changed} rejected_ran={Tally.rejected_ran}",
        file=sys.stderr,
    )
    # Each module counts its own campaign.
    Tally.runs = Tally.kills = Tally.ran_twice = Tally.paused_changed = Tally.rejected_ran = 0


def paused_then_decided(
    step: Callable[..., Any], store: str, ledger: Path, decision: str, how: str
) -> Any:
    """Pause in one process (killed while it waits; a sweep leaves it) and
    resume with `decision` in another, both run `how` (the program's last
    argument); the ledger says whether pay ran: once if approved, never if
    declined. Returns the resumed process's output."""
    Tally.runs += 1
    assert step("run", store, ledger, "approve", "waiting", how) is None
    paused_and_swept(store)
    done = step("resume", store, ledger, decision, "none", how)
    assert done["status"] == "finished", done
    (answer,) = results_of(check_valid(store), "c1")
    if decision == "approve":
        assert charges(ledger) == 1 and answer.content == "paid bob 5"
    else:
        Tally.rejected_ran += charges(ledger)
        assert charges(ledger) == 0 and answer.rule == "A1"
    return done


def program_step(program: str) -> Callable[..., Any]:
    """A framework pause program's step: `step(name, store, ledger, decision,
    kill, *how)` runs one process of it."""

    def step(
        name: str,
        store: str,
        ledger: Path,
        decision: str = "approve",
        kill: str = "none",
        *how: str,
    ) -> Any:
        return run_program(program, name, store, str(ledger), decision, kill, *how)

    return step
