"""A real framework run driven the way an app drives it (LangGraph's `invoke`,
`stream` or `astream`), which SIGKILLs its own process at a chosen point, and
the documented resume after it.

    python resume_program.py FRAMEWORK DRIVE MODE STORE SIDE [--parallel]

FRAMEWORK: langgraph. DRIVE: how the run is driven, the first run
and the resume alike. MODE: `run` (killed where KILL_POINT says) or `resume`
(the resume docs/integrations.md documents, then the same drive without new
input). `charge` appends each real execution to the SIDE file (synced): the
ledger the tests count charges in. `resume` prints one JSON line: the final
text; the calls, the results and whether the resume notice were in the
model's first input; how many times the model was called; and the calls the
thread holds unanswered at the end.

KILL_POINT (where the process dies, each a window between turnlog's record of a
tool result, the framework's own save, and the next model call):
  in_tool                 inside `charge`, after its effect
  after_result            the wrapper has recorded the tool's result
  after_tools_writes      LangGraph saved the tool node's writes, not its checkpoint
  after_tools_checkpoint  LangGraph's checkpoint holds the tool results
  in_model                the model is called with the tool results
  after_final_checkpoint  LangGraph's checkpoint holds the final answer, before `finish`
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

SESSION = "run-1"
FINAL = "all charges settled"
NOTICE = "[turnlog: automated notification (revival)"


def record(side: str, amount: int) -> None:
    fd = os.open(side, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        os.write(fd, f"{amount}\n".encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    if amount == 1:
        die_at("in_tool")


def die_at(point: str) -> None:
    """SIGKILL this process when KILL_POINT names `point`."""
    if os.environ.get("KILL_POINT") == point:
        os.kill(os.getpid(), signal.SIGKILL)


def amounts(parallel: bool) -> list[int]:
    return [1, 2] if parallel else [1]


def report(
    final: str,
    calls: list[str],
    outputs: list[str],
    first: Any,
    model_calls: int,
    unanswered: list[str],
) -> None:
    print(
        json.dumps(
            {
                "final": final,
                "calls": calls,
                "outputs": outputs,
                "notice": NOTICE in str(first),
                "model_calls": model_calls,
                "unanswered": unanswered,
            }
        )
    )


# -- LangGraph -----------------------------------------------------------------------


def langgraph(drive: str, mode: str, store: str, side: str, parallel: bool) -> None:
    import sqlite3

    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
    from langchain_core.tools import tool
    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
    from langgraph.graph import START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode, tools_condition

    from turnlog.integrations.langgraph import TurnlogToolWrapper

    @tool
    def charge(amount: int) -> str:
        """Charge the card."""
        record(side, amount)
        return f"charged {amount}"

    seen: list[list[Any]] = []

    def model(state: MessagesState) -> dict[str, Any]:
        messages = state["messages"]
        seen.append(list(messages))
        if any(isinstance(m, ToolMessage) for m in messages):
            die_at("in_model")
            return {"messages": [AIMessage(content=FINAL)]}
        calls = [
            {"id": f"call_{len(seen)}_{a}", "name": "charge", "args": {"amount": a}}
            for a in amounts(parallel)
        ]
        return {"messages": [AIMessage(content="", tool_calls=calls)]}

    def killed_on_save(checkpoint: Any) -> None:
        messages = checkpoint.get("channel_values", {}).get("messages", [])
        last = messages[-1] if messages else None
        if isinstance(last, ToolMessage):
            die_at("after_tools_checkpoint")
        elif isinstance(last, AIMessage) and not last.tool_calls:
            die_at("after_final_checkpoint")

    def killed_on_writes(writes: Any) -> None:
        if any(
            channel == "messages" and any(isinstance(m, ToolMessage) for m in value)
            for channel, value in writes
            if isinstance(value, list)
        ):
            die_at("after_tools_writes")

    class Saver(SqliteSaver):
        """LangGraph's SQLite checkpointer, which can die right after a save."""

        def put(self, config: Any, checkpoint: Any, *args: Any, **kwargs: Any) -> Any:
            saved = super().put(config, checkpoint, *args, **kwargs)
            killed_on_save(checkpoint)
            return saved

        def put_writes(self, config: Any, writes: Any, *args: Any, **kwargs: Any) -> None:
            super().put_writes(config, writes, *args, **kwargs)
            killed_on_writes(writes)

    class AsyncSaver(AsyncSqliteSaver):
        """The same, on LangGraph's async SQLite checkpointer."""

        async def aput(self, config: Any, checkpoint: Any, *args: Any, **kwargs: Any) -> Any:
            saved = await super().aput(config, checkpoint, *args, **kwargs)
            killed_on_save(checkpoint)
            return saved

        async def aput_writes(self, config: Any, writes: Any, *args: Any, **kwargs: Any) -> None:
            await super().aput_writes(config, writes, *args, **kwargs)
            killed_on_writes(writes)

    tools = TurnlogToolWrapper(store, SESSION)

    def recorded_then(request: Any, execute: Any) -> Any:
        out = tools(request, execute)
        if request.tool_call["args"].get("amount") == 1:
            die_at("after_result")
        return out

    async def arecorded_then(request: Any, execute: Any) -> Any:
        out = await tools.awrap(request, execute)
        if request.tool_call["args"].get("amount") == 1:
            die_at("after_result")
        return out

    def compiled(checkpointer: Any) -> Any:
        graph = StateGraph(MessagesState)
        graph.add_node("agent", model)
        node = ToolNode([charge], wrap_tool_call=recorded_then, awrap_tool_call=arecorded_then)
        graph.add_node("tools", node)
        graph.add_edge(START, "agent")
        graph.add_conditional_edges("agent", tools_condition)
        graph.add_edge("tools", "agent")
        return graph.compile(checkpointer=checkpointer)

    config: Any = {"configurable": {"thread_id": SESSION}}
    start: Any = {"messages": [HumanMessage("charge the card")]} if mode == "run" else None
    Path(store).mkdir(parents=True, exist_ok=True)
    database = str(Path(store) / "checkpoints.db")

    if drive == "astream":

        async def main() -> Any:
            async with AsyncSaver.from_conn_string(database) as saver:
                app = compiled(saver)
                if mode == "resume":
                    await tools.arecover_thread(app, config, revive=True)
                async for _ in app.astream(start, config, durability="sync"):
                    pass
                return (await app.aget_state(config)).values

        out = asyncio.run(main())
    else:
        app = compiled(Saver(sqlite3.connect(database, check_same_thread=False)))
        if mode == "resume":
            tools.recover_thread(app, config, revive=True)
        if drive == "stream":
            for _ in app.stream(start, config, durability="sync"):
                pass
            out = app.get_state(config).values
        else:
            out = app.invoke(start, config, durability="sync")
    tools.finish(out)
    tools.close()
    first = seen[0] if seen else []
    report(
        str(out["messages"][-1].content),
        [c["id"] for m in first for c in (getattr(m, "tool_calls", None) or [])],
        [m.tool_call_id for m in first if isinstance(m, ToolMessage)],
        first,
        len(seen),
        unanswered_calls(out["messages"]),
    )


def unanswered_calls(messages: list[Any]) -> list[str]:
    """The calls the thread asks for that no later message of it answers."""
    out: list[str] = []
    for index, message in enumerate(messages):
        answered = {getattr(m, "tool_call_id", None) for m in messages[index + 1 :]}
        out += [
            c["id"] for c in getattr(message, "tool_calls", None) or [] if c["id"] not in answered
        ]
    return out


if __name__ == "__main__":
    framework, drive, mode, store, side = sys.argv[1:6]
    assert framework == "langgraph"
    langgraph(drive, mode, store, os.path.abspath(side), "--parallel" in sys.argv)
