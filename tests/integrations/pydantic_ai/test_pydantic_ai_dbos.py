"""Pydantic AI's DBOSDurability with TurnlogCapability(engine="dbos"): DBOS's recovery replays the agent, and no tool runs twice.

Before the engine mode, the capability wrote the prompt and the call again
on DBOS's replay, dispatched a call the log had answered, and let the tool
run again: twice after one kill, three times after two.
"""

from __future__ import annotations

import json
import signal
import sys
from collections import Counter
from pathlib import Path

import pytest

import forkserver
from paths import SUPPORT

pytest.importorskip("dbos")
pytest.importorskip("pydantic_ai")

import turnlog
from builders import assert_exports_valid
from turnlog import events as ev
from turnlog.stores import JSONLStore

PROGRAM = SUPPORT / "pydantic_dbos_program.py"


def run_program(program: Path, args: list[str], answer: str) -> int:
    """Run a DBOS program; killed (-9) or done with `answer` printed."""
    done = forkserver.run(
        [sys.executable, str(program), *args], capture_output=True, text=True, timeout=120
    )
    assert done.returncode in (0, -signal.SIGKILL), done.stderr[-3000:]
    if done.returncode == 0:
        assert done.stdout.strip() == answer, done.stdout
    return done.returncode


def run(mode: str, work: Path, kill: str) -> int:
    args = [mode, str(work / "store"), f"sqlite:///{work / 'sys.db'}", kill, str(work)]
    return run_program(PROGRAM, args, "sent")


@pytest.mark.parametrize(
    "kills", [["tool"], ["model2"], ["tool", "model2"]], ids=lambda k: "+".join(k)
)
def test_dbos_replay_of_the_agent_runs_the_tool_once(kills: list[str], tmp_path: Path) -> None:
    mode = "START"
    for kill in kills:
        assert run(mode, tmp_path, kill) == -signal.SIGKILL
        mode = "RECOVER"
    assert run("RECOVER", tmp_path, "none") == 0
    assert (tmp_path / "tools.log").read_text().splitlines() == ["send_money bob"]
    store = JSONLStore(tmp_path / "store")
    events = list(store.iter_events("s1"))
    types = Counter(type(e.data).__name__ for e in events)
    assert types["TurnStart"] == types["UserMessage"] == types["ToolDispatch"] == 1, types
    assert types["ToolResult"] == 1 and types["TurnEnd"] == 1, types
    (result,) = [e for e in events if isinstance(e.data, ev.ToolResult)]
    last_request = json.loads((tmp_path / "model.jsonl").read_text().splitlines()[-1])
    if kills[0] == "tool":
        # Killed inside the tool: R1, and the model's next request says so.
        assert result.data.rule == "R1" and result.origin == "recovery"
        assert "NOT been retried" in last_request[0]
    else:
        assert result.data.content == "sent to bob"
        assert last_request == ["sent to bob"]
    with turnlog.open(store, "s1") as log:
        assert_exports_valid(log.messages)


OUTPUT_PROGRAM = SUPPORT / "pydantic_dbos_output_program.py"


def run_output(mode: str, work: Path, kill: str, *extra: str) -> int:
    return run_program(OUTPUT_PROGRAM, [mode, kill, str(work), *extra], "receipt 5")


def test_an_output_function_killed_inside_is_answered_r1_and_the_model_asked_again(
    tmp_path: Path,
) -> None:
    """Not run again behind the model's back: the model reads R1, asks again
    (a new call), and that call's output function runs."""
    assert run_output("START", tmp_path, "output") == -signal.SIGKILL
    assert run_output("RECOVER", tmp_path, "none") == 0
    assert (tmp_path / "ledger").read_text().splitlines() == [
        "model request 1",
        "output function ran",
        "model request 2",
        "output function ran",
    ]
    events = list(JSONLStore(tmp_path / "store").iter_events("s1"))
    results = {e.data.call_id: e for e in events if isinstance(e.data, ev.ToolResult)}
    assert results["o1"].data.rule == "R1" and results["o1"].origin == "recovery"
    assert results["o2"].data.content == "Final result processed."
    with turnlog.open(JSONLStore(tmp_path / "store"), "s1") as log:
        assert_exports_valid(log.messages)


@pytest.mark.parametrize("as_step", [False, True], ids=["inline", "dbos-step"])
def test_a_run_replayed_after_its_output_writes_nothing_twice(
    as_step: bool, tmp_path: Path
) -> None:
    """Killed after the run, before the workflow returned: DBOS replays the
    whole run, which meets every write. The output is processed again: an
    output function that is a DBOS step is handed its saved value, an
    inline one runs again (docs/engines.md says to make one with side
    effects a step)."""
    extra = ["step"] if as_step else []
    assert run_output("START", tmp_path, "after", *extra) == -signal.SIGKILL
    before = list(JSONLStore(tmp_path / "store").iter_events("s1"))
    assert run_output("RECOVER", tmp_path, "none", *extra) == 0
    assert list(JSONLStore(tmp_path / "store").iter_events("s1")) == before
    ran = (tmp_path / "ledger").read_text().splitlines().count("output function ran")
    assert ran == (1 if as_step else 2)
