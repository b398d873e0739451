"""An agent as a Prefect flow, with turnlog writing for the flow run and guarding each tool call.

Run by tests/integrations/engines/test_prefect_engine.py in fresh processes,
configured by the environment (a retry loads the flow from this file):

    TURNLOG_ENGINE_TARGET=... TURNLOG_ENGINE_KILL=... TURNLOG_ENGINE_WORK=...
    python prefect_program.py START           # run the flow, session s1
    python prefect_program.py CRASHED         # mark the killed run crashed
    prefect flow-run retry ID --entrypoint prefect_program.py:agent

A killed run is marked crashed as Prefect marks a run whose process
vanished, then retried as a user retries it: the same flow run runs again
from the top, its finished tasks' persisted results handed back, so
turnlog's writes in the flow are replayed and met (tests/support/engine_agent.py
has the kill points).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from prefect import flow, task
from prefect.runtime import flow_run

import turnlog
from engine_agent import Agent, guarded_tool, run_for
from prefect_launch import start_or_mark_crashed
from turnlog import EngineRun

TARGET = os.environ["TURNLOG_ENGINE_TARGET"]
WORK = Path(os.environ["TURNLOG_ENGINE_WORK"])
AGENT = Agent(str(WORK), os.environ.get("TURNLOG_ENGINE_KILL", "none"))
# The flow's open handle, for its tasks (Prefect runs them in its process).
HANDLES: dict[str, turnlog.Log] = {}


@task(persist_result=True)
def call_model(messages: list[dict[str, Any]]) -> dict[str, Any]:
    return AGENT.model_reply(messages)


@task(persist_result=True)
def run_tool(call: dict[str, Any]) -> dict[str, Any]:
    return guarded_tool(AGENT, HANDLES[str(flow_run.id)], call)


@flow(persist_result=True)
def agent(session_id: str) -> str:
    run = EngineRun(engine="prefect", run_id=str(flow_run.id))
    (WORK / "flow_run_id").write_text(run.run_id)
    return run_for(run, TARGET, session_id, AGENT, HANDLES, call_model, run_tool)


if __name__ == "__main__":
    start_or_mark_crashed(WORK, agent, session_id="s1")
