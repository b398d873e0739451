"""An agent as a DBOS workflow, with turnlog writing for the run and guarding each tool call.

Run by tests/integrations/engines/test_dbos_engine.py in fresh processes, SIGKILLed
at a chosen point (tests/support/engine_agent.py), then launched again so DBOS
recovers the workflow:

    python dbos_program.py START|RECOVER TARGET SYSDB SESSION WORKFLOW KILL WORKDIR [EXECUTOR]
"""

from __future__ import annotations

import sys
from typing import Any

from dbos import DBOS, SetWorkflowID

import turnlog
from engine_agent import Agent, guarded_tool, run_for
from turnlog import EngineRun

MODE, TARGET, SYSDB, SESSION, WORKFLOW, KILL_AT, WORKDIR = sys.argv[1:8]
EXECUTOR = sys.argv[8] if len(sys.argv) > 8 else None
AGENT = Agent(WORKDIR, KILL_AT)
# The workflow's open handle, for its steps (DBOS runs them in its process).
HANDLES: dict[str, turnlog.Log] = {}


@DBOS.step()
def call_model(messages: list[dict[str, Any]]) -> dict[str, Any]:
    return AGENT.model_reply(messages)


@DBOS.step()
def run_tool(call: dict[str, Any]) -> dict[str, Any]:
    return guarded_tool(AGENT, HANDLES[DBOS.workflow_id or ""], call)


@DBOS.workflow()
def agent(session_id: str) -> str:
    run = EngineRun(engine="dbos", run_id=DBOS.workflow_id or "")
    return run_for(run, TARGET, session_id, AGENT, HANDLES, call_model, run_tool)


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
                print(agent(SESSION))
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
