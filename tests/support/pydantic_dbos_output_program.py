"""A Pydantic AI agent under DBOS whose answer is an output function, recorded by `TurnlogCapability(engine="dbos")`.

Run by tests/integrations/pydantic_ai/test_pydantic_ai_dbos.py:

    python pydantic_dbos_output_program.py START|RECOVER KILL WORKDIR [step]

KILL is `none`, `output` (inside the output function) or `after` (after
the agent's run, before the workflow returns: DBOS replays the whole run).
With `step`, the output function is a DBOS step. The model and the output
function append what they did to WORKDIR/ledger.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path
from typing import Any

from dbos import DBOS
from pydantic import BaseModel
from pydantic_ai import Agent, ToolOutput
from pydantic_ai.durable_exec.dbos import DBOSDurability
from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from dbos_launch import start_or_recover
from turnlog.integrations.pydantic_ai import TurnlogCapability

MODE, KILL_AT, WORKDIR = sys.argv[1:4]
AS_STEP = sys.argv[4:] == ["step"]
WORK = Path(WORKDIR)


def synced_append(line: str) -> None:
    with (WORK / "ledger").open("a") as ledger:
        ledger.write(line + "\n")
        ledger.flush()
        os.fsync(ledger.fileno())


def die_once(point: str) -> None:
    marker = WORK / f"killed_{point}"
    if point == KILL_AT and not marker.exists():
        marker.touch()
        os.kill(os.getpid(), signal.SIGKILL)


class Receipt(BaseModel):
    amount: int


def issue_receipt(receipt: Receipt) -> str:
    synced_append("output function ran")
    die_once("output")
    return f"receipt {receipt.amount}"


output_function: Any = DBOS.step()(issue_receipt) if AS_STEP else issue_receipt


def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    n = sum(1 for message in messages if isinstance(message, ModelResponse)) + 1
    synced_append(f"model request {n}")
    call = ToolCallPart(tool_name="final_result", args={"amount": 5}, tool_call_id=f"o{n}")
    return ModelResponse(parts=[call])


capability = TurnlogCapability(str(WORK / "store"), "s1", engine="dbos", history="off")
agent = Agent(
    FunctionModel(model),
    name="receipts",
    output_type=ToolOutput(output_function, name="final_result"),
    capabilities=[DBOSDurability(), capability],
)


@DBOS.workflow()
async def run_agent(prompt: str) -> str:
    result = await agent.run(prompt)
    die_once("after")
    return str(result.output)


start_or_recover(
    "turnlog-pydantic-output",
    f"sqlite:///{WORK / 'dbos.db'}",
    MODE,
    lambda: run_agent("issue the receipt"),
)
