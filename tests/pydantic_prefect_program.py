"""A Pydantic AI agent made durable by Prefect (`PrefectDurability`), recorded by `TurnlogCapability(engine="prefect")`.

Run by tests/integrations/test_prefect_engine.py in fresh processes,
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

import json
import os
from pathlib import Path

from prefect import flow
from prefect.runtime import flow_run
from pydantic_ai import Agent
from pydantic_ai.durable_exec.prefect import PrefectDurability
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from engine_agent import synced_append
from prefect_launch import start_or_mark_crashed
from turnlog.integrations.pydantic_ai import TurnlogCapability

STORE = os.environ["TURNLOG_ENGINE_TARGET"]
WORK = Path(os.environ["TURNLOG_ENGINE_WORK"])
KILL_AT = os.environ.get("TURNLOG_ENGINE_KILL", "none")


def die() -> None:
    os.kill(os.getpid(), 9)


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
    if KILL_AT == "model2":
        die()
    return ModelResponse(parts=[TextPart("sent")])


capability = TurnlogCapability(
    STORE, "s1", engine="prefect", idempotency={"send_money": "destructive"}, history="off"
)
agent = Agent(FunctionModel(model), name="payer", capabilities=[PrefectDurability(), capability])


@agent.tool_plain
def send_money(to: str) -> str:
    synced_append(WORK / "tools.log", f"send_money {to}")
    if KILL_AT == "tool":
        die()
    return f"sent to {to}"


@flow(persist_result=True)
async def run_agent(prompt: str) -> str:
    (WORK / "flow_run_id").write_text(str(flow_run.id))
    result = await agent.run(prompt)
    return str(result.output)


if __name__ == "__main__":
    start_or_mark_crashed(WORK, run_agent, prompt="send bob money")
