"""SIGKILL through the pause paths of both reference loops, on JSONL, SQLite and PostgreSQL.

Each cell: the run pauses in one process (killed at a point of its own, or
not), `turnlog sweep --revive` runs over the store, a second process
approves (or rejects), a third resumes (killed, or not), and after a crash
of the resume the store is swept and revived and the run carried on. The
ledger each tool syncs before it returns is the ground truth: no tool ran
twice, an approved call that no crash interrupted after its dispatch ran
once, a rejected call never ran, no paused session changed under sweep,
and every export is valid.
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

import forkserver
import turnlog
from paths import SUPPORT
from pause_program import KILL_POINTS
from turnlog import events as ev
from turnlog.core.fold import Fold
from turnlog.providers import PROVIDERS, render, validate
from turnlog.stores import open_store

PROGRAM = str(SUPPORT / "pause_program.py")
SIGKILLED = -9
MODES = ("sync", "async")


class Tally:
    runs = kills = ran_twice = approvals_lost = paused_changed = rejected_ran = 0


def program(*args: str) -> subprocess.CompletedProcess[str]:
    return forkserver.run(
        [sys.executable, PROGRAM, *args], capture_output=True, text=True, timeout=120
    )


def sweep(store: str) -> subprocess.CompletedProcess[str]:
    return forkserver.run(
        [sys.executable, "-m", "turnlog", "sweep", "--store", store, "--revive", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )


def step(name: str, store: str, ledger: Path, mode: str, kill: str) -> dict[str, Any] | None:
    done = program(name, store, str(ledger), mode, kill)
    if done.returncode == SIGKILLED:
        Tally.kills += 1
        return None
    assert done.returncode == 0, (name, kill, done.stdout, done.stderr)
    return json.loads(done.stdout.splitlines()[-1])  # type: ignore[no-any-return]


def stored_bytes(store: str) -> list[tuple[str, Any]]:
    opened, _ = open_store(store)
    return [(type(e.data).__name__, ev.to_builtins(e)) for e in opened.iter_events("pay")]


def swept_leaves_a_pause_alone(store: str) -> None:
    """`turnlog sweep --revive` over the store: a paused session is unchanged."""
    paused = turnlog.inspect(store, "pay").status == "paused"
    before = stored_bytes(store)
    done = sweep(store)
    assert done.returncode == 0, done.stderr
    if paused:
        changed = stored_bytes(store) != before
        Tally.paused_changed += changed
        assert not changed
        assert turnlog.inspect(store, "pay").status == "paused"


def store_url(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    if kind == "jsonl":
        return str(tmp_path / "sessions")
    if kind == "sqlite":
        return f"sqlite:///{tmp_path / 's.db'}"
    url: str = request.getfixturevalue("postgres_url")
    schema = f"pause{os.getpid()}_{abs(hash(tmp_path.name)) % 10**8}"
    return f"{url}{'&' if '?' in url else '?'}schema={schema}"


def check_final(store: str, ledger: Path, decision: str) -> None:
    opened, _ = open_store(store)
    events = list(opened.iter_events("pay"))
    state = Fold(events).state
    assert state.open_turn is None, [e.type for e in events]
    for provider in PROVIDERS:
        assert validate(provider, render(provider, state.messages)) == [], provider
    ran = Counter(ledger.read_text().split()) if ledger.exists() else Counter()
    Tally.ran_twice += any(count > 1 for count in ran.values())
    assert all(count == 1 for count in ran.values()), ran
    dispatched = {e.data.call_id for e in events if isinstance(e.data, ev.ToolDispatch)}
    results = Counter(e.data.call_id for e in events if isinstance(e.data, ev.ToolResult))
    assert all(count == 1 for count in results.values()), results
    if decision == "reject":
        Tally.rejected_ran += ran["pay"]
        assert ran["pay"] == 0 and "c1" not in dispatched
        (rejected,) = [
            e.data for e in events if isinstance(e.data, ev.ToolResult) and e.data.call_id == "c1"
        ]
        assert rejected.rule == "A1"
    else:
        # An approval is lost when the call never ran although no crash
        # struck after its dispatch: the dispatch is the one excuse.
        lost = ran["pay"] == 0 and "c1" not in dispatched
        Tally.approvals_lost += lost
        assert not lost, [e.type for e in events]
        if "c1" in dispatched and ran["pay"] == 0:
            (answer,) = [
                e.data
                for e in events
                if isinstance(e.data, ev.ToolResult) and e.data.call_id == "c1"
            ]
            assert answer.risk == "tool_outcome_unknown"


def campaign(
    kind: str,
    mode: str,
    run_kill: str,
    resume_kill: str,
    decision: str,
    tmp_path: Path,
    request: pytest.FixtureRequest,
) -> None:
    store = store_url(kind, tmp_path, request)
    ledger = tmp_path / "ledger.txt"
    Tally.runs += 1
    step("run", store, ledger, mode, run_kill)
    swept_leaves_a_pause_alone(store)
    found = turnlog.inspect(store, "pay")
    assert found.status == "paused", (found.status, found.owed_calls)
    # The run killed beside the pause: the sibling was answered by the sweep.
    step(
        decision,
        store,
        ledger,
        mode,
        "decided" if decision == "approve" and resume_kill == "adopted" else "none",
    )
    swept_leaves_a_pause_alone(store)
    if step("resume", store, ledger, mode, resume_kill) is None:
        swept_leaves_a_pause_alone(store)
        if turnlog.inspect(store, "pay").status == "paused":
            # Killed before the approved call was dispatched: the approval stands.
            assert step("resume", store, ledger, mode, "none") is not None
        else:
            assert step("revive", store, ledger, mode, "none") is not None
    check_final(store, ledger, decision)


CELLS = [
    (run_kill, resume_kill, decision)
    for run_kill in ("none", *KILL_POINTS["run"])
    for resume_kill, decision in [
        ("none", "approve"),
        ("none", "reject"),
        *[(kill, "approve") for kill in KILL_POINTS["resume"]],
    ]
]
# In `make test`: every kill point once, on every store and loop; the whole
# product under -m slow.
QUICK = [
    ("sibling", "dispatched", "approve"),
    ("paused", "in_body", "approve"),
    ("waiting", "adopted", "approve"),
    ("none", "answered", "approve"),
    ("paused", "none", "reject"),
]


@pytest.mark.parametrize("kind", ["jsonl", "sqlite", "postgres"])
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("run_kill", "resume_kill", "decision"), QUICK)
def test_pause_kill_campaign(
    kind: str,
    mode: str,
    run_kill: str,
    resume_kill: str,
    decision: str,
    tmp_path: Path,
    request: pytest.FixtureRequest,
) -> None:
    campaign(kind, mode, run_kill, resume_kill, decision, tmp_path, request)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["jsonl", "sqlite", "postgres"])
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("run_kill", "resume_kill", "decision"), CELLS)
def test_pause_kill_campaign_whole(
    kind: str,
    mode: str,
    run_kill: str,
    resume_kill: str,
    decision: str,
    tmp_path: Path,
    request: pytest.FixtureRequest,
) -> None:
    campaign(kind, mode, run_kill, resume_kill, decision, tmp_path, request)


@pytest.mark.parametrize("mode", MODES)
def test_an_expiry_killed_mid_sweep_settles_once(mode: str, tmp_path: Path) -> None:
    store = str(tmp_path / "sessions")
    ledger = tmp_path / "ledger.txt"
    step("run", store, ledger, mode, "none")
    assert step("expire", store, ledger, mode, "expired") is None  # killed after writing
    after = stored_bytes(store)
    assert [t for t, _ in after[-3:]] == ["ToolDecision", "ToolResult", "TurnEnd"]
    assert step("expire", store, ledger, mode, "none") is not None
    assert stored_bytes(store) == after  # nothing left to expire: idempotent
    assert turnlog.inspect(store, "pay").status == "idle"
    assert "pay" not in ledger.read_text().split()


def test_zz_the_campaign_lost_and_duplicated_nothing() -> None:
    print(
        f"\npause campaign: runs={Tally.runs} kills={Tally.kills} ran_twice={Tally.ran_twice} "
        f"approvals_lost={Tally.approvals_lost} paused_changed={Tally.paused_changed} "
        f"rejected_ran={Tally.rejected_ran}"
    )
    assert Tally.ran_twice == Tally.approvals_lost == Tally.paused_changed == 0
    assert Tally.rejected_ran == 0
