"""An agent program for crash tests: the reference loop with scripted models, tools
that record every real execution in a side file (synced before they act), and a
SIGKILL at a chosen instant.

    python agent_program.py run STORE SIDE SCENARIO KILL_POINT MODE
    python agent_program.py revive STORE SIDE SCENARIO MODE

`run` starts session `root` and dies at KILL_POINT; `revive` revives the tree
with turnlog and runs it to its end, printing each session's final text as
JSON. Every model request is checked against the four providers' validators;
a violation ends the program with exit code 3.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from collections.abc import Sequence
from typing import Any

import turnlog
from turnlog import events as ev
from turnlog.core.fold import Message
from turnlog.events import ToolCall
from turnlog.handle.log import Dispatch
from turnlog.ops.tree import revive_tree
from turnlog.providers import PROVIDERS, render, validate
from turnlog.runtime.async_loop import (
    AsyncToolContext,
    acontinue_run,
    aopen,
    arun_turn,
    async_subagent_tool,
)
from turnlog.runtime.loop import (
    AgentSpec,
    Reply,
    Tool,
    agent_id_for,
    continue_tree,
    run_turn,
    subagent_tool,
)

KILL_POINTS = (
    "model",  # inside the model call, before its reply is written
    "reply",  # after the reply, before any dispatch
    "dispatch",  # after the first call's dispatch, before its tool body
    "body",  # inside the first call's tool body
    "after_body",  # after the first call's body returned, before its result
    "result",  # after the first call's result, before step_end
    "turn_end",  # after the last step_end, before turn_end
)


def die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def check_request(messages: Sequence[Message]) -> None:
    for provider in PROVIDERS:
        problems = validate(provider, render(provider, messages))
        if problems:
            sys.stderr.write(f"invalid {provider} request: {problems}\n")
            os._exit(3)


class Side:
    """The side file: one line per real tool execution, synced before the tool acts."""

    def __init__(self, path: str) -> None:
        self.path = path

    def record(self, session_id: str, call_id: str, name: str) -> None:
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            os.write(fd, json.dumps([session_id, call_id, name]).encode() + b"\n")
            os.fsync(fd)
        finally:
            os.close(fd)


def scripted(calls: list[tuple[str, dict[str, Any]]], final: str) -> Any:
    """A model that asks for `calls` once, then answers `final` (plus what it got)."""

    def model(messages: Sequence[Message]) -> Reply:
        check_request(messages)
        asked = [m for m in messages if m.role == "assistant" and m.tool_calls]
        if not asked:
            seq = messages[-1].seq if messages else 0
            return Reply(
                tool_calls=tuple(
                    ToolCall(id=f"call_{seq}_{k}", name=name, arguments=arguments)
                    for k, (name, arguments) in enumerate(calls)
                )
            )
        results = [m for m in messages if m.role == "tool"]
        summary = "; ".join(ev.content_text(m.content)[:40] for m in results)
        return Reply(content=f"{final} [{summary}]")

    return model


# -- the kill matrix: one agent, two calls in one step ------------------------------


def matrix(store: str, side: Side, kill: str | None, mode: str) -> None:
    def model(messages: Sequence[Message]) -> Reply:
        if kill == "model":
            die()
        return scripted([("charge", {"amount": 1}), ("charge", {"amount": 2})], "done")(messages)

    def charge(context: Any, amount: int) -> str:
        side.record(context.session_id, context.call_id, "charge")
        if kill == "body" and amount == 1:
            die()
        return f"charged {amount}"

    async def acharge(context: Any, amount: int) -> str:
        return charge(context, amount)

    tools = {
        "charge": Tool(
            run=acharge if mode == "async" else charge, idempotency="destructive", context=True
        )
    }

    def on_append(batch: Sequence[ev.Event], durable: bool) -> None:
        for event in batch:
            data = event.data
            first = isinstance(data, ev.ToolDispatch | ev.ToolResult) and data.call_id.endswith(
                "_0"
            )
            if kill == "reply" and isinstance(data, ev.AssistantMessage) and data.tool_calls:
                die()
            if kill == "dispatch" and isinstance(data, ev.ToolDispatch) and first:
                die()
            if kill == "result" and isinstance(data, ev.ToolResult) and first:
                die()
            if kill == "turn_end" and isinstance(data, ev.StepEnd) and data.step == 2:
                die()

    if kill == "after_body":
        original = Dispatch.result

        def result_then_die(self: Dispatch, content: Any, *, is_error: bool = False) -> Any:
            if self.call.id.endswith("_0"):
                die()
            return original(self, content, is_error=is_error)

        Dispatch.result = result_then_die  # type: ignore[method-assign]

    if mode == "sync":
        with turnlog.open(store, "root", durability="always") as log:
            log.subscribe(on_append)
            run_turn(log, model, tools, "charge twice")
    else:

        async def main() -> None:
            log = await aopen(store, "root", durability="always")
            async with log:
                log.log.subscribe(on_append)
                await arun_turn(log, model, tools, "charge twice")

        asyncio.run(main())


# -- subagent trees ------------------------------------------------------------------


def worker(side: Side, kill_in: str | None) -> AgentSpec:
    """A child that charges its task's amount once, then answers."""

    def charge(context: Any, amount: str) -> str:
        side.record(context.session_id, context.call_id, "charge")
        if kill_in is not None and kill_in in context.session_id:
            die()
        return f"charged {amount}"

    async def acharge(context: Any, amount: str) -> str:
        return charge(context, amount)

    def model(messages: Sequence[Message]) -> Reply:
        task = next(ev.content_text(m.content) for m in messages if m.role == "user")
        return scripted([("charge", {"amount": task})], f"worker did {task}")(messages)

    return AgentSpec(
        model=model,
        tools={"charge": Tool(run=charge, idempotency="destructive", context=True)},
    )


def tree_agents(side: Side, kill_in: str | None, mode: str) -> dict[str, AgentSpec]:
    """root --research x2--> worker; root --manage--> manager --research--> worker."""
    work = worker(side, kill_in)
    make = async_subagent_tool if mode == "async" else subagent_tool
    manager = AgentSpec(
        model=scripted([("research", {"task": "deep"})], "manager done"),
        tools={"research": make("worker", work)},
    )
    root_calls = {
        "two": [("research", {"task": "a"}), ("research", {"task": "b"})],
        "nested": [("manage", {"task": "m"})],
    }
    return {
        "worker": work,
        "manager": manager,
        **{
            f"root-{name}": AgentSpec(
                model=scripted(calls, "root done"),
                tools={"research": make("worker", work), "manage": make("manager", manager)},
            )
            for name, calls in root_calls.items()
        },
    }


def finished_then_killed(store: str, side: Side) -> None:
    """Async root waits on two children: A finishes (its wait not yet answered),
    B is killed mid-tool once A has settled."""
    settled = asyncio.Event()
    work = worker(side, None)

    async def acharge(context: AsyncToolContext, amount: str) -> str:
        side.record(context.session_id, context.call_id, "charge")
        if amount == "b":
            await settled.wait()
            die()
        return f"charged {amount}"

    slow = AgentSpec(
        model=work.model,
        tools={"charge": Tool(run=acharge, idempotency="destructive", context=True)},
    )

    async def research(context: AsyncToolContext, task: str) -> str:
        agent_id = agent_id_for("worker", context.call_id)
        reply = await context.spawn(agent_id, task, slow, agent_type="worker")
        if task == "a":
            settled.set()
            await asyncio.sleep(3600)  # killed before its result is written
        return ev.content_text(reply.content)

    tools = {"research": Tool(run=research, context=True, agent_type="worker")}
    model = scripted([("research", {"task": "a"}), ("research", {"task": "b"})], "root done")

    async def main() -> None:
        log = await aopen(store, "root", durability="always", agent=ev.Agent(type="root-two"))
        async with log:
            await arun_turn(log, model, tools, "research a and b")

    asyncio.run(main())


def run_tree(store: str, side: Side, scenario: str, mode: str) -> None:
    kill_in = {"two": "worker-call_1_1", "nested": ".agents/worker"}[scenario]
    agents = tree_agents(side, kill_in, mode)
    root = agents[f"root-{scenario}"]
    header = ev.Agent(type=f"root-{scenario}")
    if mode == "sync":
        with turnlog.open(store, "root", durability="always", agent=header) as log:
            run_turn(log, root.model, root.tools, "do the work")
    else:

        async def main() -> None:
            log = await aopen(store, "root", durability="always", agent=header)
            async with log:
                await arun_turn(log, root.model, root.tools, "do the work")

        asyncio.run(main())


def revive(store: str, side: Side, scenario: str, mode: str) -> None:
    if scenario == "matrix":
        agents = {
            "root": AgentSpec(
                model=scripted([("charge", {"amount": 1})], "done"),
                tools={
                    "charge": Tool(
                        run=lambda context, amount: (
                            side.record(context.session_id, context.call_id, "charge") or "charged"
                        ),
                        context=True,
                    )
                },
            )
        }
    else:
        agents = tree_agents(side, None, mode)
    if mode == "async" and scenario == "matrix":

        async def main() -> dict[str, str]:
            log = await aopen(store, "root")
            async with log:
                revival = turnlog.revive(log.log)
                if not revival.revived:
                    return {"root": f"not revived: {revival.reason}"}
                reply = await acontinue_run(log, agents["root"])
                return {"root": ev.content_text(reply.content)}

        print(json.dumps(asyncio.run(main())))
        return
    with revive_tree(store, "root") as tree:
        replies = continue_tree(tree, lambda node: agents[node.agent_type or "root"])
        out = {key: ev.content_text(reply.content) for key, reply in replies.items()}
        out["_outcomes"] = {node.session_id: node.outcome for node in tree.nodes}  # type: ignore[assignment]
    print(json.dumps(out))


def main(argv: list[str]) -> None:
    command, store, side_path, scenario = argv[:4]
    side = Side(side_path)
    if command == "run":
        kill, mode = argv[4], argv[5]
        if scenario == "matrix":
            matrix(store, side, kill, mode)
        elif scenario == "finished":
            finished_then_killed(store, side)
        else:
            run_tree(store, side, scenario, mode)
    else:
        revive(store, side, scenario, argv[4])


if __name__ == "__main__":
    main(sys.argv[1:])
