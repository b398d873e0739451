"""An agent as a DBOS workflow, with turnlog writing for the run and guarding each tool call.

Run by tests/integrations/test_dbos_engine.py in fresh processes, SIGKILLed
at a chosen point, then launched again so DBOS recovers the workflow:

    python dbos_program.py START|RECOVER TARGET SYSDB SESSION WORKFLOW KILL WORKDIR [EXECUTOR]

KILL is `none`, `event:K` (right after this process's K-th write to the
log), `tool:NAME` (inside the tool, after its side effect) or `model:N`
(inside the N-th model request). The tools and the model append what they
did to ledgers in WORKDIR: the ground truth the test holds the log to.
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

from dbos import DBOS, SetWorkflowID

import turnlog
from turnlog import EngineRun, ToolCall

MODE, TARGET, SYSDB, SESSION, WORKFLOW, KILL_AT, WORKDIR = sys.argv[1:8]
EXECUTOR = sys.argv[8] if len(sys.argv) > 8 else None
WORK = Path(WORKDIR)
TOOLS_LEDGER = WORK / "tools.log"
MODEL_LEDGER = WORK / "model.jsonl"

IDEMPOTENCY = {"lookup": "read_only", "charge": "destructive", "email": "destructive"}
# The workflow's open handle, for its steps (DBOS runs them in its process).
HANDLES: dict[str, turnlog.Log] = {}
WRITES = [0]
MODEL_CALLS = [0]


def die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def synced_append(path: Path, line: str) -> None:
    with path.open("a") as out:
        out.write(line + "\n")
        out.flush()
        os.fsync(out.fileno())


def count_writes(events: Any, synced: bool) -> None:
    for _ in events:
        WRITES[0] += 1
        if f"event:{WRITES[0]}" == KILL_AT:
            die()


def tool_body(name: str, call_id: str) -> str:
    synced_append(TOOLS_LEDGER, f"{name} {call_id}")
    if f"tool:{name}" == KILL_AT:
        die()
    return f"{name} done"


@DBOS.step()
def call_model(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """A scripted model: look up, then charge and email side by side, then answer."""
    MODEL_CALLS[0] += 1
    synced_append(MODEL_LEDGER, json.dumps(messages))
    if f"model:{MODEL_CALLS[0]}" == KILL_AT:
        die()
    answered = {m["call_id"] for m in messages if m["role"] == "tool"}
    if "c1" not in answered:
        return {"text": "", "calls": [{"id": "c1", "name": "lookup", "arguments": {}}]}
    if "c2" not in answered:
        return {
            "text": "",
            "calls": [
                {"id": "c2", "name": "charge", "arguments": {"amount": 5}},
                {"id": "c3", "name": "email", "arguments": {"to": "bob"}},
            ],
        }
    return {"text": "all done", "calls": []}


@DBOS.step()
def run_tool(call: dict[str, Any]) -> dict[str, Any]:
    log = HANDLES[DBOS.workflow_id or ""]
    answer = turnlog.at_most_once(
        log,
        ToolCall(**call),
        lambda: tool_body(call["name"], call["id"]),
        idempotency=IDEMPOTENCY[call["name"]],
    )
    return dataclasses.asdict(answer)


def as_request(log: turnlog.Log) -> list[dict[str, Any]]:
    return [{"role": m.role, "content": str(m.content), "call_id": m.call_id} for m in log.messages]


@DBOS.workflow()
def agent(session_id: str, prompt: str) -> str:
    run = EngineRun(engine="dbos", run_id=DBOS.workflow_id or "")
    with turnlog.open(TARGET, session_id, engine_run=run) as log:
        log.subscribe(count_writes)
        HANDLES[run.run_id] = log
        try:
            return converse(log, prompt)
        finally:
            del HANDLES[run.run_id]


def converse(log: turnlog.Log, prompt: str) -> str:
    """The agent's turn: ask the model, run the tools it asks for, repeat."""
    with log.turn():
        log.user(prompt)
        while True:
            with log.step():
                reply = call_model(as_request(log))
                calls = [ToolCall(**c) for c in reply["calls"]]
                log.assistant(reply["text"], tool_calls=calls)
                for call in reply["calls"]:
                    run_tool(call)
            if not calls:
                return str(reply["text"])


def main() -> None:
    config: dict[str, Any] = {
        "name": "turnlog-engine-test",
        "system_database_url": SYSDB,
        # Pinned, so a relaunch recovers the workflow whatever the code's hash.
        "application_version": "1",
        "log_level": "ERROR",
    }
    if EXECUTOR:
        config["executor_id"] = EXECUTOR
    DBOS(config=config)  # type: ignore[arg-type]
    DBOS.launch()
    try:
        if MODE == "START":
            with SetWorkflowID(WORKFLOW):
                print(agent(SESSION, "pay bob 5 and tell him"))
        else:
            if MODE.startswith("FAILOVER:"):
                # Another executor's workflows, as DBOS's fail-over recovers
                # them when that worker is gone.
                DBOS._recover_pending_workflows([MODE.split(":", 1)[1]])
            print(DBOS.retrieve_workflow(WORKFLOW).get_result(polling_interval_sec=0.05))
    finally:
        DBOS.destroy()


if __name__ == "__main__":
    main()
