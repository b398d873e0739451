"""A crash-test program for pauses under the reference loops, killed with SIGKILL at a chosen instant.

    python pause_program.py STEP STORE LEDGER MODE KILL

STEP is `run` (session `pay` pauses its `pay` call for approval; `look` runs
beside it), `approve` or `reject` (a second process records the decision),
`resume` (a third carries the turn on), `revive` (after a crash of the
resume, the run revived and carried on) or `expire` (an expiry pass past
the pause's deadline). STORE is a store target; LEDGER a file each tool
appends its call id to, synced, before it returns; MODE `sync` or `async`;
KILL the instant to die at (`none`: live to the end). Prints the session's
status as JSON.
"""

from __future__ import annotations

import asyncio
import datetime as dt
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
from turnlog.runtime.loop import Reply, Tool

#: Each step's kill points: the instant after which the process dies.
KILL_POINTS: dict[str, tuple[str, ...]] = {
    "run": (
        "paused",  # `tool_paused` is written; `look` not dispatched yet
        "sibling",  # `look` runs beside the pause (dispatched, not answered)
        "waiting",  # the run returned paused: the process waits, holding nothing
    ),
    "approve": ("decided",),  # the approval is written, nothing acted on it
    "resume": (
        "adopted",  # the resumed turn's step started; the approved call not dispatched
        "dispatched",  # the approved call's dispatch is written, its body not started
        "in_body",  # the body ran (its ledger line is synced), its result not written
        "answered",  # its result is written; the model not asked yet
    ),
    "expire": ("expired",),  # the expiry's decision and result are written
}


def die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def ledger_tool(ledger: str, name: str, kill: str) -> Any:
    def run(**arguments: Any) -> str:
        with open(ledger, "a") as file:
            file.write(f"{name}\n")
            file.flush()
            os.fsync(file.fileno())
        if (name, kill) in (("look", "sibling"), ("pay", "in_body")):
            die()
        return f"{name} done"

    return run


def tools(ledger: str, kill: str) -> dict[str, Tool]:
    return {
        "pay": Tool(
            run=ledger_tool(ledger, "pay", kill), idempotency="destructive", needs_approval=True
        ),
        "look": Tool(run=ledger_tool(ledger, "look", kill), idempotency="read_only"),
    }


def model(messages: Sequence[Message]) -> Reply:
    """Asks for `pay` and `look` once; answers once both are answered, or
    once told the run was revived (it never asks for a call again)."""
    asked = any(m.role == "assistant" and m.tool_calls for m in messages)
    if not asked:
        return Reply(
            tool_calls=(
                ToolCall(id="c1", name="pay", arguments={"to": "bob", "amount": 5}),
                ToolCall(id="c2", name="look", arguments={}),
            )
        )
    return Reply(content="all settled")


async def amodel(messages: Sequence[Message]) -> Reply:
    return model(messages)


def kill_after(log: turnlog.Log, kill: str) -> None:
    """Die right after the event that marks `kill` is written."""

    def on_write(events: Sequence[ev.Event], durable: bool) -> None:
        for event in events:
            data = event.data
            if (
                (kill == "paused" and isinstance(data, ev.ToolPaused))
                or (kill == "decided" and isinstance(data, ev.ToolDecision))
                or (kill == "adopted" and isinstance(data, ev.StepStart))
                or (kill == "dispatched" and isinstance(data, ev.ToolDispatch))
                or (kill == "answered" and isinstance(data, ev.ToolResult) and data.name == "pay")
                or (kill == "expired" and isinstance(data, ev.ToolResult) and data.rule == "A2")
            ):
                die()

    log.subscribe(on_write)


def status(store: str) -> dict[str, Any]:
    found = turnlog.inspect(store, "pay")
    return {"status": found.status, "awaiting": [a.call_id for a in found.awaiting]}


def main(step: str, store: str, ledger: str, mode: str, kill: str) -> None:
    if step in ("approve", "reject", "expire"):
        with turnlog.open(store, "pay") as log:
            kill_after(log, kill)
            if step == "approve":
                log.approve("c1", by="alice")
            elif step == "reject":
                log.reject("c1", by="alice", reason="not this week")
            else:
                log.expire(now=dt.datetime(2031, 1, 1, tzinfo=dt.UTC), max_age_s=60)
        print(json.dumps(status(store)))
        return
    toolset = tools(ledger, kill)
    if mode == "sync":
        with turnlog.open(store, "pay", create=step == "run") as log:
            kill_after(log, kill)
            if step == "run":
                reply = turnlog.run_turn(log, model, toolset, "pay bob 5")
            elif step == "revive":
                turnlog.revive(log)
                reply = turnlog.continue_run(log, turnlog.AgentSpec(model=model, tools=toolset))
            else:
                reply = turnlog.run_turn(log, model, toolset)
    else:
        reply = asyncio.run(arun(step, store, toolset, kill))
    if kill == "waiting":
        die()
    print(json.dumps({**status(store), "paused": reply.paused}))


async def arun(step: str, store: str, toolset: dict[str, Tool], kill: str) -> Reply:
    from turnlog.runtime.async_loop import acontinue_run

    async with turnlog.aopen(store, "pay", create=step == "run") as log:
        kill_after(log.log, kill)
        if step == "run":
            return await turnlog.arun_turn(log, amodel, toolset, "pay bob 5")
        if step == "revive":
            await log.call(turnlog.revive, log.log)
            return await acontinue_run(log, turnlog.AgentSpec(model=amodel, tools=toolset))
        return await turnlog.arun_turn(log, amodel, toolset)


if __name__ == "__main__":
    main(*sys.argv[1:6])
