"""A crash-test program for the runtime rules: deadlines, budgets and background
subagents under the reference loops, killed with SIGKILL at a chosen instant.

    python runtime_program.py run STORE SCENARIO KILL_POINT MODE
    python runtime_program.py revive STORE SCENARIO MODE

STORE is a store target (a JSONL directory, `sqlite:///FILE`); MODE is `sync`
or `async`. `run` starts session `root` and dies at KILL_POINT (`none`: runs
to the end); `revive` revives it with turnlog and runs it to its end, printing
the final text as JSON. Every model request is checked against the four
providers' validators; a violation ends the program with exit code 3.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import time
from collections.abc import Sequence
from typing import Any

import turnlog
from turnlog import events as ev
from turnlog.core.fold import Message
from turnlog.events import ToolCall
from turnlog.providers import PROVIDERS, render, validate
from turnlog.runtime import background
from turnlog.runtime.async_loop import (
    acontinue_run,
    aopen,
    arun_agent_turn,
    async_subagent_tool,
    async_task_wait_tool,
)
from turnlog.runtime.loop import (
    AgentSpec,
    Reply,
    Tool,
    continue_run,
    run_agent_turn,
    subagent_tool,
    task_wait_tool,
)

# Kill points by scenario: each names an instant of that scenario's path.
KILL_POINTS: dict[str, tuple[str, ...]] = {
    "deadline": (
        "dispatch",  # the slow call's dispatch is written, its body not started
        "waiting",  # the slow call runs, the loop waits on its deadline
        "d1",  # the slow call's D1 result is written, its neighbour's D2 not yet
        "d2",  # the D2 result is written, the step not yet ended
        "late",  # the runaway body returns late, as its output is recorded
    ),
    "budget": (
        "first",  # the first call's result is written, the budget not yet checked
        "b1",  # the B1 result for the call the budget left undispatched is written
        "step_end",  # the step ended after B1, the turn not yet
    ),
    "background": (
        "spawned",  # subagent_spawned on the parent, the acknowledgement not yet
        "ack",  # the acknowledgement is written
        "child_body",  # inside the child's tool
        "child_done",  # the child answered, its end not yet recorded on the parent
        "settled",  # subagent_settled on the parent, not yet delivered
        "delivered",  # the report was injected, the parent's model not yet asked
    ),
}
KILL_POINTS["join"] = ("ack", "wait_call", "child_body", "settled", "joined")


def die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def check_request(messages: Sequence[Message]) -> None:
    for provider in PROVIDERS:
        problems = validate(provider, render(provider, messages))
        if problems:
            sys.stderr.write(f"invalid {provider} request: {problems}\n")
            os._exit(3)


def tool_texts(messages: Sequence[Message]) -> str:
    return "; ".join(ev.content_text(m.content)[:50] for m in messages if m.role == "tool")


def killer(kill: str, scenario: str) -> Any:
    """A subscriber that dies right after the event that marks `kill`."""

    def on_append(batch: Sequence[ev.Event], durable: bool) -> None:
        for event in batch:
            data = event.data
            if isinstance(data, ev.ToolDispatch) and kill == "dispatch" and data.name == "slow":
                die()
            if (
                isinstance(data, ev.ToolDispatch)
                and kill == "wait_call"
                and data.name == "task_wait"
            ):
                die()
            if isinstance(data, ev.ToolResult):
                if kill == "d1" and data.rule == "D1":
                    die()
                if kill in ("d2", "b1") and data.rule == kill.upper():
                    die()
                if kill == "first" and data.rule is None and data.name == "work":
                    die()
                if kill == "ack" and data.background:
                    die()
                if kill == "joined" and data.delivers is not None:
                    die()
            if isinstance(data, ev.StepEnd) and kill == "step_end" and scenario == "budget":
                die()
            if isinstance(data, ev.SubagentSpawned) and kill == "spawned":
                die()
            if isinstance(data, ev.SubagentSettled) and kill == "settled":
                die()
            if isinstance(data, ev.UserMessage) and kill == "delivered" and data.delivers:
                die()
            if isinstance(data, ev.Custom) and kill == "late":
                die()

    return on_append


def scripted_calls(calls: list[tuple[str, dict[str, Any]]]) -> Any:
    """A model that asks for `calls` once, then answers with what it got."""

    def model(messages: Sequence[Message]) -> Reply:
        check_request(messages)
        if not any(m.role == "assistant" and m.tool_calls for m in messages):
            seq = messages[-1].seq
            return Reply(
                tool_calls=tuple(
                    ToolCall(id=f"call_{seq}_{k}", name=name, arguments=arguments)
                    for k, (name, arguments) in enumerate(calls)
                )
            )
        return Reply(content=f"done [{tool_texts(messages)}]")

    return model


def spec(scenario: str, kill: str, mode: str) -> AgentSpec:
    asynchronous = mode == "async"

    def slow() -> str:
        if kill == "waiting":
            time.sleep(0.02)
            die()
        time.sleep(0.6 if kill == "late" else 0.4)
        return "slow finished"

    async def aslow() -> str:
        await asyncio.sleep(0.6)
        return "slow finished"

    if scenario == "deadline":
        # The async loop runs the plain `slow` in a thread it abandons at the
        # deadline (its late output is recorded); `aslow` is cancelled.
        tools = {
            "slow": Tool(run=slow, timeout_s=0.1),
            "aslow": Tool(run=aslow, timeout_s=0.1),
            "fast": Tool(run=lambda: "fast finished"),
        }
        calls: list[tuple[str, dict[str, Any]]] = [("slow", {}), ("fast", {})]
        if asynchronous:
            calls.insert(1, ("aslow", {}))
        return AgentSpec(model=scripted_calls(calls), tools=tools)
    if scenario == "budget":
        tools = {"work": Tool(run=lambda n: f"worked {n}")}
        calls = [("work", {"n": 1}), ("work", {"n": 2}), ("work", {"n": 3})]
        return AgentSpec(model=scripted_calls(calls), tools=tools, max_tool_calls=1)
    return parent_spec(scenario, kill, asynchronous)


def child_spec(kill: str, asynchronous: bool) -> AgentSpec:
    def work(task: str) -> str:
        if kill == "child_body":
            die()
        time.sleep(0.05)
        return f"worked on {task}"

    def model(messages: Sequence[Message]) -> Reply:
        check_request(messages)
        if not any(m.role == "assistant" and m.tool_calls for m in messages):
            task = ev.content_text(messages[0].content)
            return Reply(tool_calls=(ToolCall(id="work_1", name="work", arguments={"task": task}),))
        if kill == "child_done":
            # The child's answer is written; die as its end is recorded on the parent.
            background.settled_record = die_instead  # type: ignore[assignment]
        return Reply(content=f"child report [{tool_texts(messages)}]")

    return AgentSpec(model=model, tools={"work": Tool(run=work)})


def die_instead(*args: Any) -> ev.SubagentSettled:
    del args
    die()
    raise AssertionError("unreachable: the process is gone")


def parent_spec(scenario: str, kill: str, asynchronous: bool) -> AgentSpec:
    child = child_spec(kill, asynchronous)
    make_spawn = async_subagent_tool if asynchronous else subagent_tool
    tools = {
        "spawn": make_spawn("worker", child, background=True),
        "task_wait": (async_task_wait_tool if asynchronous else task_wait_tool)(),
    }

    def model(messages: Sequence[Message]) -> Reply:
        check_request(messages)
        reported = any(m.injected == "background" for m in messages) or any(
            m.role == "tool" and "Its report" in ev.content_text(m.content) for m in messages
        )
        if reported:
            return Reply(content=f"done [{tool_texts(messages)}]")
        asked = [m for m in messages if m.role == "assistant" and m.tool_calls]
        seq = messages[-1].seq
        if not asked:
            return Reply(
                tool_calls=(ToolCall(id=f"spawn_{seq}", name="spawn", arguments={"task": "t"}),)
            )
        if scenario == "join" and asked[-1].tool_calls[0].name == "spawn":
            agent_id = f"worker-{asked[-1].tool_calls[0].id}"
            return Reply(
                tool_calls=(
                    ToolCall(id=f"wait_{seq}", name="task_wait", arguments={"agent_id": agent_id}),
                )
            )
        return Reply(content="waiting for the report")

    return AgentSpec(model=model, tools=tools)


def run(store: str, scenario: str, kill: str, mode: str) -> None:
    agent = spec(scenario, kill, mode)
    if mode == "sync":
        with turnlog.open(store, "root", create=True, durability="always") as log:
            log.subscribe(killer(kill, scenario))
            reply = run_agent_turn(log, agent, "go")
            if kill == "late":
                time.sleep(1.0)
    else:

        async def main() -> Reply:
            log = await aopen(store, "root", create=True, durability="always")
            async with log:
                log.log.subscribe(killer(kill, scenario))
                reply = await arun_agent_turn(log, agent, "go")
                if kill == "late":
                    await asyncio.sleep(1.0)
                return reply

        reply = asyncio.run(main())
    print(json.dumps(ev.content_text(reply.content)))


def revive(store: str, scenario: str, mode: str) -> None:
    agent = spec(scenario, "none", mode)
    if mode == "sync":
        with turnlog.open(store, "root") as log:
            revival = turnlog.revive(log)
            reply = continue_run(log, agent) if revival.revived else None
    else:

        async def main() -> Reply | None:
            log = await aopen(store, "root")
            async with log:
                revival = await log.call(turnlog.revive, log.log)
                return await acontinue_run(log, agent) if revival.revived else None

        reply = asyncio.run(main())
    print(json.dumps(ev.content_text(reply.content) if reply is not None else None))


def main(argv: list[str]) -> None:
    command, store, scenario = argv[:3]
    if command == "run":
        run(store, scenario, argv[3], argv[4])
    else:
        revive(store, scenario, argv[3])


if __name__ == "__main__":
    main(sys.argv[1:])
