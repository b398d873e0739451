"""docs/engines.md's DBOS recipe, run as written: killed inside the charge, recovered by DBOS, charged once."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

import forkserver

pytest.importorskip("dbos")

from engine_recipes import MODEL_AND_TOOLS, PYDANTIC_MODEL, SEND_MONEY, docs_block
from turnlog import events as ev
from turnlog.stores import JSONLStore

# What the page leaves to the reader: a model, the tools, the store.
BEFORE = (
    """
from pathlib import Path
import sys
WORK = Path(sys.argv[2])
STORE = str(WORK / "sessions")
"""
    + MODEL_AND_TOOLS
)
AFTER = """
from dbos import SetWorkflowID
DBOS(config={"name": "docs", "system_database_url": f"sqlite:///{WORK / 'dbos.db'}",
             "application_version": "1", "log_level": "ERROR"})
DBOS.launch()
if sys.argv[1] == "start":
    with SetWorkflowID("wf-1"):
        print(agent("s1", "charge 5"))
else:
    print(DBOS.retrieve_workflow("wf-1").get_result(polling_interval_sec=0.05))
DBOS.destroy()
"""


def test_the_dbos_recipe_charges_once(tmp_path: Path) -> None:
    recipe = docs_block("def agent(")
    program = tmp_path / "recipe.py"
    program.write_text(BEFORE + recipe + AFTER)
    first = forkserver.run(
        [sys.executable, str(program), "start", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert first.returncode == -signal.SIGKILL, first.stderr
    second = forkserver.run(
        [sys.executable, str(program), "recover", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert second.returncode == 0, second.stderr
    assert second.stdout.startswith("done: [turnlog] The agent process"), second.stdout
    assert (tmp_path / "ledger").read_text() == "charged\n"
    results = [
        e
        for e in JSONLStore(tmp_path / "sessions").iter_events("s1")
        if isinstance(e.data, ev.ToolResult)
    ]
    assert [r.data.rule for r in results] == ["R1"]


# The Pydantic AI recipe's missing pieces: a scripted model, the tool it
# names, a main that starts the workflow or lets DBOS recover it.
PYDANTIC_BEFORE = (
    """
import asyncio, sys
from pathlib import Path
WORK = Path(sys.argv[2])
"""
    + PYDANTIC_MODEL
)
PYDANTIC_AFTER = (
    SEND_MONEY
    + """
async def main():
    from dbos import SetWorkflowID
    DBOS(config={"name": "docs", "system_database_url": f"sqlite:///{WORK / 'dbos.db'}",
                 "application_version": "1", "log_level": "ERROR"})
    DBOS.launch()
    if sys.argv[1] == "start":
        with SetWorkflowID("wf-1"):
            print(await run_agent("send bob money"))
    else:
        print(await (await DBOS.retrieve_workflow_async("wf-1")).get_result(polling_interval_sec=0.05))
    DBOS.destroy()

asyncio.run(main())
"""
)


def test_the_pydantic_ai_dbos_recipe_sends_once(tmp_path: Path) -> None:
    program = tmp_path / "recipe.py"
    program.write_text(PYDANTIC_BEFORE + docs_block("DBOSDurability()") + PYDANTIC_AFTER)
    runs = [
        forkserver.run(
            [sys.executable, str(program), mode, str(tmp_path)],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=tmp_path,  # the recipe's "sessions" directory
        )
        for mode in ("start", "recover")
    ]
    assert runs[0].returncode == -signal.SIGKILL, runs[0].stderr
    assert runs[1].returncode == 0, runs[1].stderr
    assert runs[1].stdout.startswith("told: [turnlog] The agent process"), runs[1].stdout
    assert (tmp_path / "ledger").read_text() == "sent\n"


# The Temporal recipe's missing pieces: the store and session, a bank, and
# the activity run by the SDK's activity environment (no server).
TEMPORAL_BEFORE = """
import os, signal, sys
from pathlib import Path
WORK = Path(sys.argv[1])
STORE, SESSION = str(WORK / "sessions"), "s1"

class Bank:
    def charge(self, amount: int) -> str:
        with (WORK / "ledger").open("a") as ledger:
            ledger.write("charged\\n"); ledger.flush(); os.fsync(ledger.fileno())
        if not (WORK / "killed").exists():
            (WORK / "killed").touch(); os.kill(os.getpid(), signal.SIGKILL)
        return "charged"

bank = Bank()
"""
TEMPORAL_AFTER = """
from temporalio.testing import ActivityEnvironment
print(asyncio.run(ActivityEnvironment().run(charge, "c1", 5)))
"""


def test_the_temporal_recipe_answers_r1_when_the_activity_runs_again(tmp_path: Path) -> None:
    import turnlog
    from turnlog import EngineRun, ToolCall

    # The run's turn, begun by whatever records the model's reply.
    run = EngineRun(engine="temporal", run_id="test")  # the activity environment's workflow id
    with turnlog.open(tmp_path / "sessions", "s1", engine_run=run) as log:
        log.begin_turn()
        log.user("charge 5")
        log.begin_step()
        log.assistant("", tool_calls=[ToolCall(id="c1", name="charge", arguments={"amount": 5})])
    program = tmp_path / "recipe.py"
    program.write_text(TEMPORAL_BEFORE + docs_block("async def charge(") + TEMPORAL_AFTER)
    args = [sys.executable, str(program), str(tmp_path)]
    first = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert first.returncode == -signal.SIGKILL, first.stderr
    second = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert second.returncode == 0, second.stderr
    assert "It has NOT been retried" in second.stdout
    assert (tmp_path / "ledger").read_text() == "charged\n"


def test_the_opening_example_stamps_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"workflow_id": "wf-9"}
    exec(docs_block('log = turnlog.open("sessions"'), namespace)
    log = namespace["log"]
    assert isinstance(log, __import__("turnlog").Log)
    with log:
        log.begin_turn()
    (start,) = [
        e
        for e in JSONLStore(tmp_path / "sessions").iter_events("support-42")
        if isinstance(e.data, ev.TurnStart)
    ]
    assert start.data.engine_run == ev.EngineRun(engine="dbos", run_id="wf-9")


def test_the_temporal_record_activity_meets_what_it_wrote(tmp_path: Path) -> None:
    """The `record` block as written, in the SDK's activity environment:
    called again with the same turn it writes nothing; with a new reply it
    writes only that; with a reply that differs from the log it is refused."""
    from temporalio.testing import ActivityEnvironment

    from turnlog.errors import ReplayDivergedError

    scope: dict[str, object] = {"STORE": str(tmp_path / "sessions"), "SESSION": "s1"}
    exec(docs_block("def record("), scope)
    record = scope["record"]
    store = JSONLStore(tmp_path / "sessions")

    def call(replies: list[dict[str, object]], finished: bool = False) -> object:
        # A sync activity: the environment runs it and returns its value.
        return ActivityEnvironment().run(record, "charge 5", replies, finished)  # type: ignore[arg-type]

    first = {"text": "", "calls": [{"id": "c1", "name": "charge", "arguments": {}}]}
    done = {"text": "charged", "calls": []}
    assert call([]) == [{"role": "user", "content": "charge 5", "call_id": None}]
    call([first])
    written = list(store.iter_events("s1"))
    assert call([]) is not None and call([first]) is not None
    assert list(store.iter_events("s1")) == written
    with pytest.raises(ReplayDivergedError):
        call([{"text": "something else", "calls": []}])
    assert list(store.iter_events("s1")) == written
    # The call answered (as the guarded activity would), then the turn's end.
    import turnlog
    from turnlog import EngineRun, ToolCall

    run = EngineRun(engine="temporal", run_id="test")
    with turnlog.open(store, "s1", engine_run=run, replay=False) as log:
        turnlog.at_most_once(log, ToolCall(id="c1", name="charge"), lambda: "charged")
    call([first, done], True)
    call([first, done], True)
    types = [type(e.data).__name__ for e in store.iter_events("s1")]
    assert types.count("TurnEnd") == types.count("UserMessage") == 1, types
    assert types[-1] == "TurnEnd"
