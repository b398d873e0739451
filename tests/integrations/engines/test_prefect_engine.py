"""Prefect retries a crashed flow run from the top; turnlog makes each tool call at most once and tells the model.

The agent in tests/support/prefect_program.py is a Prefect flow whose tool calls
run in tasks guarded by `turnlog.at_most_once`, its writes stamped with the
flow run (`EngineRun("prefect", flow_run.id)`). Each case SIGKILLs the
worker at one point, marks the run crashed (as Prefect does for a run whose
process vanished) and retries it with `prefect flow-run retry`, as a user
does: the same flow run runs again, its finished tasks' results handed back
from Prefect's result storage. The log is then held to the tools' ledger
(tests/support/engine_cases.py). Without the guard the retry runs the killed task
again: the charge twice.

One Prefect server (SQLite) serves a module's cases, as a deployment's
server outlives its workers.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

import forkserver

pytest.importorskip("prefect")

from engine_cases import FAST_POINTS, WRITES, Tally, check_case, check_payer_case, every_point
from engine_recipes import MODEL_AND_TOOLS, PYDANTIC_MODEL, SEND_MONEY, docs_block
from paths import SUPPORT
from servers import free_port, serving
from turnlog import events as ev
from turnlog.stores import JSONLStore

PROGRAM = SUPPORT / "prefect_program.py"
PREFECT = Path(sys.executable).parent / "prefect"
SIGKILLED = -signal.SIGKILL


@pytest.fixture(scope="module")
def prefect_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """A Prefect server on loopback, and the environment its clients need."""
    home = tmp_path_factory.mktemp("prefect-home")
    port = free_port()
    env = {
        **os.environ,
        "PREFECT_HOME": str(home),
        "PREFECT_API_URL": f"http://127.0.0.1:{port}/api",
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "PREFECT_LOGGING_LEVEL": "WARNING",
    }

    def answers() -> bool:
        try:
            with urllib.request.urlopen(f"{env['PREFECT_API_URL']}/health", timeout=2):
                return True
        except OSError:
            return False

    args = [str(PREFECT), "server", "start", "--host", "127.0.0.1", "--port", str(port)]
    with serving(args, answers, env=env, what="Prefect server"):
        yield env


def run(args: list[str], env: dict[str, str], kill: str, work: Path, target: str) -> int:
    """One process of the case; whatever it started dies with it."""
    env = {
        **env,
        "TURNLOG_ENGINE_TARGET": target,
        "TURNLOG_ENGINE_WORK": str(work),
        "TURNLOG_ENGINE_KILL": kill,
    }
    done = subprocess.run(args, cwd=SUPPORT, env=env, capture_output=True, text=True, timeout=180)
    assert done.returncode in (0, SIGKILLED), done.stdout[-2000:] + done.stderr[-3000:]
    return done.returncode


def kill_and_retry(
    env: dict[str, str], work: Path, kills: list[str], target: str, program: Path, flow: str
) -> tuple[int, int]:
    """Run `program`'s flow, killed at each of `kills` in turn, each time
    marked crashed and retried (by `prefect flow-run retry` with `flow` as
    the entrypoint, or by the program as that command would); the kills and
    retries made."""
    python = sys.executable
    code = run([python, str(program), "START"], env, kills[0], work, target)
    made = retried = 0
    for kill in [*kills[1:], "none"]:
        if code == 0:
            break
        made += 1
        run([python, str(program), "CRASHED"], env, "none", work, target)
        if flow:
            # As a user retries it.
            retry = [str(PREFECT), "flow-run", "retry", (work / "flow_run_id").read_text()]
            retry += ["--entrypoint", f"{program.name}:{flow}"]
        else:
            retry = [python, str(program), "RETRY"]
        code = run(retry, env, kill, work, target)
        retried += 1
    assert code == 0, kills
    return made, retried


def crash_and_retry(
    env: dict[str, str], work: Path, kills: list[str], tally: Tally, target: str | None = None
) -> None:
    label = " then ".join(kills)
    work.mkdir()
    target = target or str(work / "sessions")
    made, retried = kill_and_retry(env, work, kills, target, PROGRAM, "agent")
    tally.kills += made
    tally.recoveries += retried
    check_case(target, work, tally, label)
    tally.cases.append(label)


@pytest.mark.parametrize("kills", FAST_POINTS, ids=lambda k: "+".join(k))
def test_a_killed_flow_run_retried_runs_no_tool_twice(
    kills: list[str], prefect_env: dict[str, str], tmp_path: Path
) -> None:
    tally = Tally()
    crash_and_retry(prefect_env, tmp_path / "case", kills, tally)
    assert tally.double_runs == 0 and tally.kills == len(kills)
    if kills[0].startswith("tool:"):
        assert tally.r1 == 1


def test_a_completed_flow_run_retried_again_writes_nothing(
    prefect_env: dict[str, str], tmp_path: Path
) -> None:
    """Killed after the turn's last write, before Prefect recorded the run
    done: the retry runs the flow again from the top, and every write is
    met, not made (on turnlog's SQLite store)."""
    tally = Tally()
    target = f"sqlite:///{tmp_path / 'sessions.db'}"
    crash_and_retry(prefect_env, tmp_path / "case", [f"event:{WRITES}"], tally, target)
    assert tally.kills == 1 and tally.recoveries == 1


@pytest.mark.slow
def test_prefect_kill_campaign(prefect_env: dict[str, str], tmp_path: Path) -> None:
    """SIGKILL the worker at every point of the flow, and twice at some."""
    tally = Tally()
    for number, kills in enumerate(every_point()):
        crash_and_retry(prefect_env, tmp_path / f"case-{number}", kills, tally)
    print(
        f"\nPrefect campaign: {len(tally.cases)} cases, {tally.kills} kills, "
        f"{tally.recoveries} retries, {tally.tool_runs} tool runs, "
        f"{tally.double_runs} double runs, {tally.r1} answered R1"
    )
    assert tally.double_runs == 0


PYDANTIC_PROGRAM = SUPPORT / "pydantic_prefect_program.py"


@pytest.mark.parametrize("kill", ["tool", "model2"])
def test_pydantic_ai_prefect_durability_retried_runs_the_tool_once(
    kill: str, prefect_env: dict[str, str], tmp_path: Path
) -> None:
    """PrefectDurability with TurnlogCapability(engine="prefect"): the retry
    replays the agent from Prefect's saved task results, and the tool runs
    once. Without the engine mode the retry runs the killed tool again."""
    target = str(tmp_path / "store")
    made, _ = kill_and_retry(prefect_env, tmp_path, [kill], target, PYDANTIC_PROGRAM, "")
    assert made == 1
    check_payer_case(tmp_path, target, kill)


# docs/engines.md's Prefect recipes, run as written. What the page leaves to
# the reader (a model, the tools, the store) comes before each block; a main
# that starts the flow, marks it crashed or retries it comes after.
RECIPE_BEFORE = (
    """
import os
from pathlib import Path
WORK = Path(os.environ["TURNLOG_ENGINE_WORK"])
STORE = os.environ["TURNLOG_ENGINE_TARGET"]
"""
    + MODEL_AND_TOOLS
)
PYDANTIC_RECIPE_BEFORE = (
    """
import os
from pathlib import Path
WORK = Path(os.environ["TURNLOG_ENGINE_WORK"])
"""
    + PYDANTIC_MODEL
)
RECIPE_AFTER = """
import asyncio
from prefect import get_client
sys.path.insert(0, {tests!r})
from prefect_launch import start_or_mark_crashed

async def _start(flow, parameters):
    from prefect.flow_engine import run_flow
    async with get_client() as client:
        flow_run = await client.create_flow_run(flow, parameters=parameters)
    (WORK / "flow_run_id").write_text(str(flow_run.id))
    result = run_flow(flow, flow_run=flow_run, parameters=parameters)
    return await result if asyncio.iscoroutine(result) else result

if sys.argv[1] == "START":
    print(asyncio.run(_start({flow}, {parameters!r})))
else:
    start_or_mark_crashed(WORK, {flow}, **{parameters!r})
"""


@pytest.mark.parametrize("recipe", ["plain", "pydantic"])
def test_the_prefect_recipes_run_once_as_written(
    recipe: str, prefect_env: dict[str, str], tmp_path: Path
) -> None:
    """Killed inside the tool, marked crashed, retried: the tool ran once,
    and the model's answer was made from R1."""
    if recipe == "plain":
        source = RECIPE_BEFORE + docs_block("def prefect_agent(")
        flow, parameters = "prefect_agent", {"session_id": "s1", "prompt": "charge 5"}
        answer, session = "done: [turnlog] The agent process", "s1"
    else:
        source = PYDANTIC_RECIPE_BEFORE + docs_block("PrefectDurability()") + SEND_MONEY
        flow, parameters = "run_payer", {"prompt": "send bob money"}
        answer, session = "told: [turnlog] The agent process", "support-42"
    program = tmp_path / "recipe.py"
    program.write_text(
        source + RECIPE_AFTER.format(tests=str(SUPPORT), flow=flow, parameters=parameters)
    )
    target = str(tmp_path / "sessions")
    env = {**prefect_env, "TURNLOG_ENGINE_TARGET": target, "TURNLOG_ENGINE_WORK": str(tmp_path)}
    steps = []
    for mode in ("START", "CRASHED", "RETRY"):
        steps.append(
            forkserver.run(
                [sys.executable, str(program), mode],
                cwd=tmp_path,  # the Pydantic AI recipe's "sessions" directory
                env=env,
                capture_output=True,
                text=True,
                timeout=180,
            )
        )
    assert steps[0].returncode == SIGKILLED, steps[0].stderr[-3000:]
    assert steps[1].returncode == 0, steps[1].stderr[-3000:]
    assert steps[2].returncode == 0, steps[2].stderr[-3000:]
    assert steps[2].stdout.strip().splitlines()[-1].startswith(answer), steps[2].stdout
    assert (tmp_path / "ledger").read_text().count("\n") == 1
    results = [
        e for e in JSONLStore(target).iter_events(session) if isinstance(e.data, ev.ToolResult)
    ]
    assert [r.data.rule for r in results] == ["R1"]
