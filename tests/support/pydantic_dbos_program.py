"""A Pydantic AI agent made durable by DBOS (`DBOSDurability`), recorded by `TurnlogCapability(engine="dbos")`.

Run by tests/integrations/pydantic_ai/test_pydantic_ai_dbos.py in fresh processes:

    python pydantic_dbos_program.py START|RECOVER STORE SYSDB KILL WORKDIR

KILL is `none`, `tool` (inside `send_money`, after its side effect) or
`model2` (inside the second model request, after the tool answered). The
tool and the model append what they did to ledgers in WORKDIR.
"""

from __future__ import annotations

import sys
from pathlib import Path

from dbos import DBOS
from pydantic_ai import Agent
from pydantic_ai.durable_exec.dbos import DBOSDurability
from pydantic_ai.models.function import FunctionModel

from dbos_launch import start_or_recover
from pydantic_engine_agent import Payer
from turnlog.integrations.pydantic_ai import TurnlogCapability

MODE, STORE, SYSDB, KILL_AT, WORKDIR = sys.argv[1:6]
WORK = Path(WORKDIR)


PAYER = Payer(WORK, KILL_AT)
capability = TurnlogCapability(
    STORE, "s1", engine="dbos", idempotency={"send_money": "destructive"}, history="off"
)
agent = Agent(FunctionModel(PAYER.model), name="payer", capabilities=[DBOSDurability(), capability])


agent.tool_plain(PAYER.tool())


@DBOS.workflow()
async def run_agent(prompt: str) -> str:
    result = await agent.run(prompt)
    return str(result.output)


start_or_recover("turnlog-pydantic-dbos", SYSDB, MODE, lambda: run_agent("send bob money"))
