"""A crash-test program for Pydantic AI's deferred tools on a TurnlogCapability, killed with SIGKILL.

    python pydantic_pause_program.py STEP STORE LEDGER DECISION KILL [iter]

STEP is `run` (the model asks for `pay`, which `requires_approval`, and
`look` beside it; the run ends with `DeferredToolRequests`), `resume` (a
new process resumes on the session's messages with DECISION, `approve` or
`deny`, as `deferred_tool_results`) or `continue` (a new prompt on the
session, what a crashed resume is followed by). STORE is a store target;
LEDGER a file `pay` appends its call id to, synced, before it returns; KILL
the instant to die at: `waiting` (the run ended paused), `in_body` (pay's
ledger line is synced, its result not written) or `none`. With `iter`, each
run is `agent.iter` driven node by node instead of `agent.run`. Prints the
session's status and the run's output as JSON.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from pydantic_ai import Agent, DeferredToolRequests, DeferredToolResults, ToolDenied, UserError
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

import turnlog
from pause_ledger import KILL, LEDGER, charge, die
from turnlog.integrations.pydantic_ai import TurnlogCapability
from turnlog.stores import open_store


def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    last = messages[-1]
    returned = [part for part in last.parts if isinstance(part, ToolReturnPart)]
    if returned:
        return ModelResponse(
            parts=[TextPart("done: " + "; ".join(str(p.content) for p in returned))]
        )
    if any(isinstance(part, ToolReturnPart) for m in messages for part in m.parts):
        return ModelResponse(parts=[TextPart("carried on")])
    return ModelResponse(
        parts=[
            ToolCallPart("pay", {"to": "bob", "amount": 5}, tool_call_id="c1"),
            ToolCallPart("look", {"q": "balance"}, tool_call_id="c2"),
        ]
    )


agent = Agent(FunctionModel(model), output_type=[str, DeferredToolRequests])


@agent.tool_plain(requires_approval=True, metadata={"idempotency": "destructive"})
def pay(to: str, amount: int) -> str:
    """Pay someone."""
    return charge(to, amount)


@agent.tool_plain(metadata={"idempotency": "read_only"})
def look(q: str) -> str:
    """Look something up."""
    return f"{q}: 100"


async def run(how: str, prompt: str | None = None, **options: Any) -> Any:
    """One run of the agent: `agent.run`, or (`iter`) `agent.iter` driven node by node."""
    if how != "iter":
        return (await agent.run(prompt, **options)).output
    async with agent.iter(prompt, **options) as running:
        async for _ in running:
            pass
    assert running.result is not None
    return running.result.output


async def main(step: str, target: str, decision: str, how: str = "run") -> dict[str, Any]:
    store, _ = open_store(target)
    async with TurnlogCapability(store, "pay") as cap:
        output: Any
        if step == "run":
            deferred = await run(how, "pay bob 5", capabilities=[cap])
            if KILL[0] == "waiting":
                die()
            output = sorted(part.tool_call_id for part in deferred.approvals)
        elif step == "resume":
            approval: bool | ToolDenied = True if decision == "approve" else ToolDenied("no")
            results = DeferredToolResults(approvals={"c1": approval})
            try:
                output = await run(
                    how,
                    message_history=cap.messages(),
                    deferred_tool_results=results,
                    capabilities=[cap],
                )
            except UserError as refused:  # Pydantic AI's own word: the call was answered
                output = {"refused": str(refused)}
        else:
            output = await run(how, "continue", message_history=cap.messages(), capabilities=[cap])
    return {"status": turnlog.inspect(store, "pay").status, "output": output}


if __name__ == "__main__":
    STEP, TARGET, LEDGER_PATH, DECISION, KILL[0] = sys.argv[1:6]
    LEDGER.append(Path(LEDGER_PATH))
    print(json.dumps(asyncio.run(main(STEP, TARGET, DECISION, *sys.argv[6:7]))))
