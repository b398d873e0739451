"""DBOS runs the workflow again after a crash; turnlog makes each tool call at most once and tells the model.

The agent in tests/support/dbos_program.py is a DBOS workflow whose tool calls run
in `@DBOS.step()`s guarded by `turnlog.at_most_once`. Each case SIGKILLs
the worker at one point, launches it again so DBOS recovers the workflow,
and holds the log to the tools' ledger: no tool ran twice, the log is one
run's, every export validates, and a call killed inside its tool reaches
the model as R1. Without the guard DBOS would run the step again (the
ledger would show the charge twice).
"""

from __future__ import annotations

import itertools
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from paths import SUPPORT

pytest.importorskip("dbos")

from engine_cases import FAST_POINTS, WRITES, Tally, check_case, every_point

PROGRAM = SUPPORT / "dbos_program.py"
SIGKILLED = -signal.SIGKILL
_databases = itertools.count()


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
