"""One tool call in either loop: what its dispatch records, its deadline, how its output is kept."""

from __future__ import annotations

import contextlib
from typing import Any

from turnlog import events as ev
from turnlog.errors import TurnlogError
from turnlog.events import ToolCall
from turnlog.handle.dispatch import Dispatch
from turnlog.handle.log import Log
from turnlog.runtime import background
from turnlog.runtime.agents import Tool, ToolOutput
from turnlog.runtime.deadlines import late_result
from turnlog.runtime.subagents import agent_id_for


def dispatch_options(
    tool: Tool | None, call: ToolCall, timeout_s: float | None = None
) -> dict[str, Any]:
    """What a call's dispatch records: the tool's idempotency, for a subagent
    tool the agent the call joins (and whether it runs in the background),
    and the call's deadline."""
    if tool is None:
        return {"idempotency": None, "join": None}
    join = agent_id_for(tool.agent_type, call.id) if tool.agent_type else None
    options: dict[str, Any] = {"idempotency": tool.idempotency, "join": join}
    if timeout_s is not None:
        options["timeout_s"] = timeout_s
    if tool.background:
        options["background"] = True
    return options


def call_deadline(tool: Tool | None, default_s: float | None) -> float | None:
    """A call's deadline: its tool's own, else the loop's. A background spawn
    returns at once and needs none."""
    if tool is None or tool.background:
        return None
    return tool.timeout_s if tool.timeout_s is not None else default_s


def record_late(log: Log, call: ToolCall, content: ToolOutput, is_error: bool) -> None:
    """Record what a call answered D1 returned after all (never delivered)."""
    if isinstance(content, background.Delivered):
        # A join that got its report too late: the report itself stays
        # undelivered, for the loop to inject; the record keeps its text.
        content = content.content
    # The session may be closed, or its process ending: the late output is
    # then lost, which costs nothing, since it was never the call's answer.
    with contextlib.suppress(TurnlogError):
        log.append(late_result(call, content, is_error=is_error))


def record_output(log: Log, running: Dispatch, tool: Tool, output: Any) -> None:
    """A call's result: a background spawn's acknowledgement is marked
    `background`, and a join tool's report names the child it delivers."""
    call = running.call
    if tool.background:
        log.append(ev.ToolResult(call_id=call.id, name=call.name, content=output, background=True))
        running.answered = True
    elif isinstance(output, background.Delivered):
        log.append(
            ev.ToolResult(
                call_id=call.id, name=call.name, content=output.content, delivers=output.delivers
            )
        )
        running.answered = True
    else:
        running.result(output)
