"""A Pydantic AI agent made durable by DBOS (`DBOSDurability`), recorded by `TurnlogCapability(engine="dbos")`.

Run by tests/integrations/test_pydantic_ai_dbos.py in fresh processes:

    python pydantic_dbos_program.py START|RECOVER STORE SYSDB KILL WORKDIR

KILL is `none`, `tool` (inside `send_money`, after its side effect) or
`model2` (inside the second model request, after the tool answered). The
tool and the model append what they did to ledgers in WORKDIR.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path

from dbos import DBOS
from pydantic_ai import Agent
from pydantic_ai.durable_exec.dbos import DBOSDurability
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from dbos_launch import start_or_recover
from turnlog.integrations.pydantic_ai import TurnlogCapability

MODE, STORE, SYSDB, KILL_AT, WORKDIR = sys.argv[1:6]
WORK = Path(WORKDIR)


def synced_append(path: Path, line: str) -> None:
    with path.open("a") as out:
        out.write(line + "\n")
        out.flush()
        os.fsync(out.fileno())


def die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    returns = [
        str(part.content)
        for message in messages
        for part in message.parts
        if isinstance(part, ToolReturnPart)
    ]
    synced_append(WORK / "model.jsonl", json.dumps(returns))
    if not returns:
        return ModelResponse(
            parts=[ToolCallPart(tool_name="send_money", args={"to": "bob"}, tool_call_id="c1")]
        )
    if KILL_AT == "model2" and not (WORK / f"killed_{KILL_AT}").exists():
        (WORK / f"killed_{KILL_AT}").touch()
        die()
    return ModelResponse(parts=[TextPart("sent")])


capability = TurnlogCapability(
    STORE, "s1", engine="dbos", idempotency={"send_money": "destructive"}, history="off"
)
agent = Agent(FunctionModel(model), name="payer", capabilities=[DBOSDurability(), capability])


@agent.tool_plain
def send_money(to: str) -> str:
    synced_append(WORK / "tools.log", f"send_money {to}")
    if KILL_AT == "tool" and not (WORK / f"killed_{KILL_AT}").exists():
        (WORK / f"killed_{KILL_AT}").touch()
        die()
    return f"sent to {to}"


@DBOS.workflow()
async def run_agent(prompt: str) -> str:
    result = await agent.run(prompt)
    return str(result.output)


start_or_recover("turnlog-pydantic-dbos", SYSDB, MODE, lambda: run_agent("send bob money"))
