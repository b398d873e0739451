"""A Pydantic AI agent made durable by Prefect (`PrefectDurability`), recorded by `TurnlogCapability(engine="prefect")`.

Run by tests/integrations/engines/test_prefect_engine.py in fresh processes,
configured by the environment (a retry loads the flow from this file):

    TURNLOG_ENGINE_TARGET=STORE TURNLOG_ENGINE_KILL=KILL TURNLOG_ENGINE_WORK=WORKDIR
    python pydantic_prefect_program.py START|CRASHED|RETRY

RETRY does what `prefect flow-run retry` does for a run without a
deployment (scheduled again, then run in this process), which Prefect 3.9's
command cannot do for an async flow (it does not await it) nor for a sync
one that runs an event loop (Pydantic AI's `run_sync`).

KILL is `none`, `tool` (inside `send_money`, after its side effect) or
`model2` (inside the second model request, after the tool answered). The
tool and the model append what they did to ledgers in WORKDIR.
"""

from __future__ import annotations

import os
from pathlib import Path

from prefect import flow
from prefect.runtime import flow_run
from pydantic_ai import Agent
from pydantic_ai.durable_exec.prefect import PrefectDurability
from pydantic_ai.models.function import FunctionModel

from prefect_launch import start_or_mark_crashed
from pydantic_engine_agent import Payer
from turnlog.integrations.pydantic_ai import TurnlogCapability

STORE = os.environ["TURNLOG_ENGINE_TARGET"]
WORK = Path(os.environ["TURNLOG_ENGINE_WORK"])
KILL_AT = os.environ.get("TURNLOG_ENGINE_KILL", "none")


PAYER = Payer(WORK, KILL_AT)
capability = TurnlogCapability(
    STORE, "s1", engine="prefect", idempotency={"send_money": "destructive"}, history="off"
)
agent = Agent(
    FunctionModel(PAYER.model), name="payer", capabilities=[PrefectDurability(), capability]
)


agent.tool_plain(PAYER.tool())


@flow(persist_result=True)
async def run_agent(prompt: str) -> str:
    (WORK / "flow_run_id").write_text(str(flow_run.id))
    result = await agent.run(prompt)
    return str(result.output)


if __name__ == "__main__":
    start_or_mark_crashed(WORK, run_agent, prompt="send bob money")
