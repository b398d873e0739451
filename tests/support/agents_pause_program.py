"""A crash-test program for the Agents SDK's human approval on a TurnlogSession, killed with SIGKILL.

    python agents_pause_program.py STEP STORE LEDGER HOOKS KILL

STEP is `run` (the run asks for `pay`, which needs approval, and `look`
beside it; the SDK stops with the interruption, whose `RunState` is saved
as JSON beside LEDGER), `approve` or `reject` (a second process decides on
the saved `RunState`, as the SDK's docs do), `resume` (a third runs the
decided `RunState` on the session), `continue` (a new run with new input,
what a crashed resume is followed by) or `again` (the decided `RunState`
run a second time). STORE is a store target; LEDGER a file the `pay` tool
appends its call id to, synced, before it returns; HOOKS `hooks` or
`plain` (the session's hooks passed to the runner, or not); KILL the
instant to die at (`none`: live to the end). Prints the session's status
and the run's final output as JSON.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from agents import Agent, RunHooks, Runner, RunState, function_tool, set_tracing_disabled
from agents.testing import ScriptedModel, assistant_message, function_call

import turnlog
from pause_ledger import KILL, LEDGER, charge, die
from turnlog.integrations.openai_agents import TurnlogSession
from turnlog.stores import open_store

set_tracing_disabled(True)

#: Each step's kill points: the instant after which the process dies.
KILL_POINTS: dict[str, tuple[str, ...]] = {
    "run": ("waiting",),  # the run returned paused and its RunState is saved
    "resume": (
        "in_body",  # pay's ledger line is synced, its result not written
        "answered",  # pay's result is written; the model not asked again
    ),
}

ASK = [
    function_call("pay", {"to": "bob", "amount": 5}, call_id="c1"),
    function_call("look", {"q": "balance"}, call_id="c2"),
]
# What the model says: first the two calls, then its answer; a new run's
# model answers at once.
SCRIPTS = {"run": [ASK], "resume": [[assistant_message("done")]]}


def pay(to: str, amount: int) -> str:
    """Pay someone."""
    return charge(to, amount)


def look(q: str) -> str:
    """Look something up."""
    return f"{q}: 100"


class KillAfterResult(RunHooks[Any]):
    """Runs after turnlog's hooks: pay's result is in the log when it dies."""

    async def on_tool_end(self, context: Any, agent: Any, tool: Any, result: object) -> None:
        if KILL[0] == "answered" and getattr(tool, "name", None) == "pay":
            die()


def agent(script: list[Any]) -> Agent[Any]:
    tools = [function_tool(pay, needs_approval=True), function_tool(look)]
    return Agent(name="payer", model=ScriptedModel(list(script)), tools=tools)


async def main(step: str, target: str, hooks: bool) -> dict[str, Any]:
    state_file = LEDGER[0].with_name("state.json")
    if step in ("approve", "reject"):
        decided = await RunState.from_json(agent([]), json.loads(state_file.read_text()))
        for interruption in decided.get_interruptions():
            getattr(decided, step)(interruption)
        state_file.write_text(json.dumps(decided.to_json()))
        return {"decided": step}
    store, _ = open_store(target)
    session = TurnlogSession(store, "pay")
    options: dict[str, Any] = {"session": session}
    if hooks:
        options["hooks"] = session.hooks_with(KillAfterResult())
    output: Any = None
    try:
        if step == "run":
            result = await Runner.run(agent(SCRIPTS["run"]), "pay bob 5", **options)
            state_file.write_text(json.dumps(result.to_state().to_json()))
            if KILL[0] == "waiting":
                die()
            output = [item.name for item in result.interruptions]
        elif step in ("resume", "again"):
            resumed = agent(SCRIPTS["resume"])
            state = await RunState.from_json(resumed, json.loads(state_file.read_text()))
            output = (await Runner.run(resumed, state, **options)).final_output
        else:
            continued = agent([[assistant_message("carried on")]])
            output = (await Runner.run(continued, "continue", **options)).final_output
    finally:
        await session.close()
    return {"status": turnlog.inspect(store, "pay").status, "output": output}


if __name__ == "__main__":
    STEP, TARGET, LEDGER_PATH, HOOKS, KILL[0] = sys.argv[1:6]
    LEDGER.append(Path(LEDGER_PATH))
    print(json.dumps(asyncio.run(main(STEP, TARGET, HOOKS == "hooks"))))
