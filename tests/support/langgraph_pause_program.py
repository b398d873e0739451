"""A crash-test program for LangGraph approvals through the turnlog tool wrapper, killed with SIGKILL.

    python langgraph_pause_program.py STEP STORE LEDGER DECISION KILL [async]

STEP is `run` (the model asks for `pay`, which the wrapper pauses for
approval; the graph stops on the wrapper's `interrupt()`) or `resume` (a new process resumes the thread from its
checkpoint with `Command(resume=DECISION == "approve")`, or a string for DECISION `text`). STORE is a store
target; LEDGER a file `pay` appends its call id to, synced, before it
returns (the checkpoint lives beside it); KILL the instant to die at:
`waiting` (the run stopped paused), `in_body` (pay's ledger line is synced,
its result not written) or `none`. With `async`, the graph runs with
`ainvoke` on an `AsyncSqliteSaver`, through the wrapper's `awrap`. Prints the
session's status and the thread's last message as JSON.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import sys
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.types import Command

import turnlog
from pause_ledger import KILL, LEDGER, charge, die
from turnlog.integrations.langgraph import TurnlogToolWrapper
from turnlog.stores import open_store


@tool
def pay(to: str, amount: int) -> str:
    """Pay someone."""
    return charge(to, amount)


def model(state: MessagesState) -> dict[str, Any]:
    answers = [m.content for m in state["messages"] if isinstance(m, ToolMessage)]
    if answers:
        return {"messages": [AIMessage(content=f"done: {answers}", id="ai-final")]}
    # One call: a sibling in the same tool step may still be running in
    # LangGraph's thread pool when the graph returns its interrupt.
    asks = [{"id": "c1", "name": "pay", "args": {"to": "bob", "amount": 5}}]
    return {"messages": [AIMessage(content="", id="ai-1", tool_calls=asks)]}


def build(tools: TurnlogToolWrapper) -> StateGraph[Any]:
    graph = StateGraph(MessagesState)
    graph.add_node("agent", model)
    graph.add_node("tools", ToolNode([pay], wrap_tool_call=tools, awrap_tool_call=tools.awrap))
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition)
    graph.add_edge("tools", "agent")
    return graph


async def amain(step: str, target: str, decision: str) -> dict[str, Any]:
    """`main` on asyncio: `ainvoke`, an `AsyncSqliteSaver`, the wrapper's `awrap`."""
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    store, _ = open_store(target)
    config: Any = {"configurable": {"thread_id": "pay"}}
    path = str(LEDGER[0].with_name("checkpoints.db"))
    async with AsyncSqliteSaver.from_conn_string(path) as saver:
        with TurnlogToolWrapper(store, "pay", pauses={"pay": "approval"}) as tools:
            app = build(tools).compile(checkpointer=saver)
            if step == "run":
                human = HumanMessage("pay bob 5", id="h-1")
                out = await app.ainvoke({"messages": [human]}, config)
                if KILL[0] == "waiting":
                    die()
            else:
                out = await app.ainvoke(Command(resume=decision == "approve"), config)
            tools.finish(out)
            waits = [i.value.get("call_id") for i in out.get("__interrupt__", ())]
            last = out["messages"][-1].content
    return {"status": turnlog.inspect(store, "pay").status, "waits": waits, "last": last}


def main(step: str, target: str, decision: str) -> dict[str, Any]:
    store, _ = open_store(target)
    checkpoints = sqlite3.connect(
        str(LEDGER[0].with_name("checkpoints.db")), check_same_thread=False
    )
    config: Any = {"configurable": {"thread_id": "pay"}}
    with TurnlogToolWrapper(store, "pay", pauses={"pay": "approval"}) as tools:
        app = build(tools).compile(checkpointer=SqliteSaver(checkpoints))
        if step == "run":
            out = app.invoke({"messages": [HumanMessage("pay bob 5", id="h-1")]}, config)
            if KILL[0] == "waiting":
                die()
        elif decision == "text":
            # A value that only looks like a decision: refused, nothing written.
            try:
                app.invoke(Command(resume="no"), config)
            except turnlog.UsageError as refused:
                return {"status": turnlog.inspect(store, "pay").status, "refused": str(refused)}
            raise AssertionError("a resume value that is not True or False was taken")
        else:
            out = app.invoke(Command(resume=decision == "approve"), config)
        tools.finish(out)
        waits = [i.value.get("call_id") for i in out.get("__interrupt__", ())]
        last = out["messages"][-1].content
    return {"status": turnlog.inspect(store, "pay").status, "waits": waits, "last": last}


if __name__ == "__main__":
    STEP, TARGET, LEDGER_PATH, DECISION, KILL[0] = sys.argv[1:6]
    LEDGER.append(Path(LEDGER_PATH))
    if sys.argv[6:] == ["async"]:
        print(json.dumps(asyncio.run(amain(STEP, TARGET, DECISION))))
    else:
        print(json.dumps(main(STEP, TARGET, DECISION)))
