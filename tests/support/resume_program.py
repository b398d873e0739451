"""A real framework run driven the way an app drives it (LangGraph's `invoke`,
`stream` or `astream`; Pydantic AI's `run`, `run_stream` or `iter`), which
SIGKILLs its own process at a chosen point, and the documented resume after it.

    python resume_program.py FRAMEWORK DRIVE MODE STORE SIDE [--parallel]
    python resume_program.py FRAMEWORK doc STEP WORKDIR SIDE [--parallel]

FRAMEWORK: langgraph | pydantic-ai. DRIVE: how the run is driven, the first run
and the resume alike. MODE: `run` (killed where KILL_POINT says) or `resume`
(the resume docs/integrations.md documents, then the same drive without new
input). `doc` runs the block of docs/integrations.md marked
`<!-- program: FRAMEWORK STEP -->` as written, in WORKDIR (killed inside
`charge` when KILL_POINT=in_tool and KILL_AT=1 say so). `charge` appends each real execution to the SIDE file (synced): the
ledger the tests count charges in. `resume` prints one JSON line: the final
text; the calls, the results and whether the resume notice were in the
model's first input; how many times the model was called; and the calls the
thread holds unanswered at the end.

KILL_POINT (where the process dies, each a window between turnlog's record of a
tool result, the framework's own save, and the next model call):
  in_tool                 inside `charge`, after its effect
  after_result            the wrapper has recorded the tool's result (LangGraph)
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


# -- Pydantic AI -----------------------------------------------------------------------


def pydantic_agent(side: str, parallel: bool, seen: list[Any]) -> Any:
    """An agent on a scripted model (streamed or not) that asks for the charges
    until it sees a tool result, then answers FINAL; `seen` collects its inputs."""
    from collections.abc import AsyncIterator

    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart
    from pydantic_ai.models.function import DeltaToolCall, FunctionModel

    def answered(messages: list[Any]) -> bool:
        return any(isinstance(p, ToolReturnPart) for m in messages for p in m.parts)

    def respond(messages: list[Any], info: Any) -> ModelResponse:
        seen.append(messages)
        if answered(messages):
            return ModelResponse(parts=[TextPart(FINAL)])
        return ModelResponse(
            parts=[
                ToolCallPart("charge", {"amount": a}, tool_call_id=f"call_{len(seen)}_{a}")
                for a in amounts(parallel)
            ]
        )

    async def stream(messages: list[Any], info: Any) -> AsyncIterator[Any]:
        seen.append(messages)
        if answered(messages):
            yield FINAL
            return
        for index, amount in enumerate(amounts(parallel)):
            yield {
                index: DeltaToolCall(
                    name="charge",
                    json_args=json.dumps({"amount": amount}),
                    tool_call_id=f"call_{len(seen)}_{amount}",
                )
            }

    agent = Agent(FunctionModel(respond, stream_function=stream))

    @agent.tool_plain
    def charge(amount: int) -> str:
        record(side, amount)
        return f"charged {amount}"

    return agent


def pydantic_report(final: str, seen: list[Any]) -> None:
    first = seen[0] if seen else []
    parts = [p for m in first for p in m.parts]
    calls = [p.tool_call_id for p in parts if p.part_kind == "tool-call"]
    outputs = [p.tool_call_id for p in parts if p.part_kind == "tool-return"]
    report(final, calls, outputs, first, len(seen), [])


def pydantic_ai(drive: str, mode: str, store: str, side: str, parallel: bool) -> None:
    from turnlog.integrations.pydantic_ai import TurnlogCapability

    seen: list[Any] = []
    agent = pydantic_agent(side, parallel, seen)

    async def main() -> str:
        revive = mode == "resume"
        async with TurnlogCapability(store, SESSION, revive=revive) as cap:
            text = None if revive else "charge the card"
            history = cap.messages()
            if drive == "run_stream":
                async with agent.run_stream(
                    text, message_history=history, capabilities=[cap]
                ) as streamed:
                    return str(await streamed.get_output())
            if drive == "iter":
                async with agent.iter(text, message_history=history, capabilities=[cap]) as run:
                    async for _ in run:
                        pass
                assert run.result is not None
                return str(run.result.output)
            return str((await agent.run(text, message_history=history, capabilities=[cap])).output)

    pydantic_report(asyncio.run(main()), seen)


# -- docs/integrations.md's streaming blocks, run as written ------------------------------


def doc(framework: str, step: str, workdir: str, side: str, parallel: bool) -> None:
    """Run the doc's block `step` for `framework` (after LangGraph's `build`
    block) in `workdir`, with the names the doc leaves to the reader."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import framework_program

    os.makedirs(workdir, exist_ok=True)
    os.chdir(workdir)
    blocks = framework_program.doc_blocks(framework)
    seen: list[Any] = []
    namespace: dict[str, Any] = {"__name__": "__doc__"}
    if framework == "langgraph":
        namespace.update(framework_program.doc_fixtures(framework, side, parallel, seen))
        framework_program.run_block(blocks["build"], namespace)
    else:
        namespace["agent"] = pydantic_agent(side, parallel, seen)
    framework_program.run_block(blocks[step], namespace)
    if framework != "langgraph":
        pydantic_report(str(namespace["output"]), seen)
        return
    messages = namespace["out"]["messages"]
    first = seen[0] if seen else []
    report(
        str(messages[-1].content),
        [c["id"] for m in first for c in (getattr(m, "tool_calls", None) or [])],
        [m.tool_call_id for m in first if getattr(m, "type", "") == "tool"],
        first,
        len(seen),
        unanswered_calls(messages),
    )


if __name__ == "__main__":
    framework, drive, mode, store, side = sys.argv[1:6]
    parallel = "--parallel" in sys.argv
    if drive == "doc":
        doc(framework, mode, store, os.path.abspath(side), parallel)
    else:
        program = langgraph if framework == "langgraph" else pydantic_ai
        program(drive, mode, store, os.path.abspath(side), parallel)
