"""DBOS runs the workflow again after a crash; turnlog makes each tool call at most once and tells the model.

The agent in tests/dbos_program.py is a DBOS workflow whose tool calls run
in `@DBOS.step()`s guarded by `turnlog.at_most_once`. Each case SIGKILLs
the worker at one point, launches it again so DBOS recovers the workflow,
and holds the log to the tools' ledger: no tool ran twice, the log is one
run's, every export validates, and a call killed inside its tool reaches
the model as R1. Without the guard DBOS would run the step again (the
ledger would show the charge twice).
"""

from __future__ import annotations

import itertools
import json
import signal
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pytest

pytest.importorskip("dbos")

import turnlog
from turnlog import events as ev
from turnlog.stores import open_store

PROGRAM = Path(__file__).resolve().parents[1] / "dbos_program.py"
SIGKILLED = -signal.SIGKILL
CALLS = {"c1": "lookup", "c2": "charge", "c3": "email"}
# Every live write of a clean run (turn, prompt, three steps, three calls).
WRITES = 18
_databases = itertools.count()


@dataclass
class Tally:
    kills: int = 0
    recoveries: int = 0
    tool_runs: int = 0
    double_runs: int = 0
    r1: int = 0
    cases: list[str] = field(default_factory=list)


def run(mode: str, target: str, sysdb: str, kill: str, work: Path, executor: str = "") -> int:
    args = [sys.executable, str(PROGRAM), mode, target, sysdb, "s1", "wf-1", kill, str(work)]
    if executor:
        args.append(executor)
    done = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert done.returncode in (0, SIGKILLED), done.stderr[-3000:]
    if done.returncode == 0:
        assert done.stdout.strip().endswith("all done"), done.stdout
    return done.returncode


def targets(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> tuple[str, str]:
    """The turnlog store and the DBOS system database of one case."""
    if kind == "sqlite":
        return str(tmp_path / "sessions"), f"sqlite:///{tmp_path / 'dbos.sqlite'}"
    if kind == "sqlite-store":
        # turnlog's SQLite store beside DBOS's own SQLite database.
        return f"sqlite:///{tmp_path / 'sessions.db'}", f"sqlite:///{tmp_path / 'dbos.sqlite'}"
    dsn: str = request.getfixturevalue("postgres_url")
    n = next(_databases)
    base = dsn.rsplit("/", 1)[0]
    joiner = "&" if "?" in dsn else "?"
    return f"{dsn}{joiner}schema=dbos_case_{n}", f"{base}/dbos_case_{n}"


def check_case(target: str, work: Path, tally: Tally, label: str) -> None:
    """The log after the workflow finished, held to the ground truth."""
    runs = Counter(line.split()[1] for line in (work / "tools.log").read_text().splitlines())
    tally.tool_runs += sum(runs.values())
    tally.double_runs += sum(1 for n in runs.values() if n > 1)
    assert all(n == 1 for n in runs.values()), (label, runs)
    store, _ = open_store(target)
    events = list(store.iter_events("s1"))
    types = Counter(type(e.data).__name__ for e in events)
    # One run's log: one turn, one prompt, one request per call.
    assert types["TurnStart"] == types["TurnEnd"] == types["UserMessage"] == 1, (label, types)
    assert events[-1].data == ev.TurnEnd(reason="complete", turn=1, steps=3), label
    results = [e for e in events if isinstance(e.data, ev.ToolResult)]
    assert sorted(r.data.call_id for r in results) == ["c1", "c2", "c3"], label
    requests = [json.loads(line) for line in (work / "model.jsonl").read_text().splitlines()]
    final_request = {m["call_id"]: m["content"] for m in requests[-1] if m["role"] == "tool"}
    for result in results:
        call_id = result.data.call_id
        if result.data.rule == "R1":
            # Killed after the dispatch (before the body, or inside it after
            # its side effect): never run again, and the model reads that
            # its outcome is unknown.
            tally.r1 += 1
            assert runs[call_id] <= 1, label
            assert result.origin == "recovery"
            assert "NOT been retried" in final_request[call_id], label
        else:
            assert runs[call_id] == 1, label
            assert final_request[call_id] == f"{CALLS[call_id]} done", label
    from builders import assert_exports_valid

    with turnlog.open(store, "s1") as log:
        assert not log.crashed
        assert_exports_valid(log.messages)


def crash_and_recover(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest, kills: list[str], tally: Tally
) -> None:
    label = " then ".join(kills)
    work = tmp_path / label.replace(":", "_").replace(" ", "_")
    work.mkdir()
    target, sysdb = targets(kind, work, request)
    mode = "START"
    for kill in [*kills, "none"]:
        code = run(mode, target, sysdb, kill, work)
        if mode != "START":
            tally.recoveries += 1
        mode = "RECOVER"
        if code == 0:
            break
        tally.kills += 1
    check_case(target, work, tally, label)
    tally.cases.append(label)


# A kill inside each tool, inside the second model request, and after writes
# that end a step, dispatch a call and answer one.
FAST_POINTS = [
    ["tool:charge"],
    ["tool:lookup"],
    ["model:2"],
    ["event:11"],
    ["tool:charge", "event:3"],
]


@pytest.mark.parametrize("kills", FAST_POINTS, ids=lambda k: "+".join(k))
def test_a_killed_worker_recovered_by_dbos_runs_no_tool_twice(
    kills: list[str], tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    tally = Tally()
    crash_and_recover("sqlite", tmp_path, request, kills, tally)
    assert tally.double_runs == 0
    if kills[0].startswith("tool:"):
        assert tally.r1 == 1


@pytest.mark.parametrize("kind", ["sqlite", "sqlite-store"])
def test_a_completed_workflow_recovered_again_writes_nothing(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """Killed after the turn's last write, before DBOS recorded the workflow
    done: DBOS runs it again from the top, and every write is met, not made
    (on a JSONL store and on turnlog's SQLite store)."""
    tally = Tally()
    crash_and_recover(kind, tmp_path, request, [f"event:{WRITES}"], tally)
    assert tally.kills == 1 and tally.recoveries == 1


def test_postgres_worker_fails_over_to_another(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """Two workers on one PostgreSQL: worker A dies inside the charge, worker
    B recovers A's workflow (DBOS's fail-over), and the guard still holds."""
    target, sysdb = targets("postgres", tmp_path, request)
    assert run("START", target, sysdb, "tool:charge", tmp_path, executor="worker-a") == SIGKILLED
    assert run("FAILOVER:worker-a", target, sysdb, "none", tmp_path, executor="worker-b") == 0
    tally = Tally()
    check_case(target, tmp_path, tally, "fail-over")
    assert tally.r1 == 1 and tally.double_runs == 0


def every_point() -> list[list[str]]:
    single = [[f"event:{k}"] for k in range(1, WRITES + 1)]
    single += [[f"tool:{name}"] for name in CALLS.values()]
    single += [[f"model:{n}"] for n in (1, 2, 3)]
    # Killed again during the recovery: at a replayed-then-live point.
    double = [["tool:charge", f"event:{k}"] for k in (1, 2, 4)]
    double += [["event:6", "tool:email"], ["tool:lookup", "tool:charge"]]
    return single + double


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_dbos_kill_campaign(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    """SIGKILL the worker at every point of the workflow, and twice at some."""
    tally = Tally()
    for kills in every_point():
        crash_and_recover(kind, tmp_path, request, kills, tally)
    print(
        f"\nDBOS campaign on {kind}: {len(tally.cases)} cases, {tally.kills} kills, "
        f"{tally.recoveries} recoveries, {tally.tool_runs} tool runs, "
        f"{tally.double_runs} double runs, {tally.r1} answered R1"
    )
    assert tally.double_runs == 0
