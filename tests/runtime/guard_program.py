"""One tool call under `turnlog.at_most_once`, run as a retried task would be: `python guard_program.py STORE WORKDIR RUNNER`.

RUNNER is `plain` (a Celery-style task run again after its worker died) or
`temporal` (the call inside a Temporal activity, run by the SDK's activity
test environment with the attempt the server would give it). The tool
SIGKILLs the process on its first run, after its side effect.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

import turnlog
from turnlog import EngineRun, ToolCall

STORE, WORKDIR, RUNNER = sys.argv[1:4]
WORK = Path(WORKDIR)
CALL = ToolCall(id="c1", name="charge", arguments={"amount": 5})


def charge() -> str:
    with (WORK / "ledger").open("a") as ledger:
        ledger.write("charged\n")
        ledger.flush()
        os.fsync(ledger.fileno())
    if not (WORK / "killed").exists():
        (WORK / "killed").touch()
        os.kill(os.getpid(), signal.SIGKILL)
    return "charged 5"


def guarded(run_id: str) -> str:
    # A handle inside one step writes only its own call: nothing to replay.
    with turnlog.open(
        STORE, "s1", engine_run=EngineRun(engine=RUNNER, run_id=run_id), replay=False
    ) as log:
        answer = turnlog.at_most_once(log, CALL, charge, idempotency="destructive")
    how = "ran" if answer.ran else answer.rule or f"recorded by {answer.origin or 'the tool'}"
    return f"{how}: {answer.content}"


def main() -> None:
    if RUNNER == "plain":
        print(guarded("task-1"))
        return
    from temporalio import activity
    from temporalio.testing import ActivityEnvironment

    @activity.defn
    async def charge_activity() -> str:
        info = activity.info()
        return await asyncio.to_thread(guarded, info.workflow_id or "")

    environment = ActivityEnvironment()
    print(asyncio.run(environment.run(charge_activity)))


main()
