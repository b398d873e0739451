"""The turns the per-turn bench runs (bench/per_turn.py): for each framework,
the same items on turnlog's side and on the framework's own persistence,
prepared outside the clock and then timed one turn at a time."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / ".bench-data" / "per_turn"
TURNS = 10  # the method text in the module docstring says 10
ITEMS_PER_TURN = 4  # user, function call, its output, the answer
ANSWER = "The report covers three quarters; revenue rose in each. " * 3
RESULT = "quarter,revenue\n" + "".join(f"Q{q},{1000 + q * 37}\n" for q in range(1, 40))


def prompt(turn: int) -> str:
    return f"Turn {turn}: summarise the attached report and list three follow-ups."


# -- OpenAI Agents SDK -----------------------------------------------------------------


def agents_items(turn: int) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A turn's input item and the items the run adds, as the SDK saves them."""
    call_id = f"call_{turn:06d}"
    user = {"role": "user", "content": prompt(turn)}
    new = [
        {
            "type": "function_call",
            "id": f"fc_{turn:06d}",
            "call_id": call_id,
            "name": "read_report",
            "arguments": json.dumps({"path": f"reports/{turn}.csv"}),
            "status": "completed",
        },
        {"type": "function_call_output", "call_id": call_id, "output": RESULT},
        {
            "type": "message",
            "id": f"msg_{turn:06d}",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": ANSWER, "annotations": []}],
        },
    ]
    return user, new


class _Context:
    """What the SDK's hooks read from their context: the tool call's id."""

    def __init__(self, call_id: str | None = None) -> None:
        self.tool_call_id = call_id


class _Tool:
    name = "read_report"
    metadata = None


def agents_turn_factory(side: str, path: Path) -> tuple[Any, Any]:
    """(open, turn): open the session; one turn on it (a coroutine)."""
    if side in ("turnlog", "bare"):
        from agents.items import ModelResponse
        from agents.usage import Usage

        from turnlog.integrations.openai_agents import TurnlogSession

        # The SDK builds the replies the hooks are handed, and dumps their
        # items to save them, on either side (its models make them); its
        # classes finish building on first use, which is the SDK's cost, not
        # the session layer's: done here, off the clock.
        _, (asked, _, answer) = agents_items(0)
        reply = ModelResponse(output=[asked, answer], usage=Usage(), response_id=None)
        for item in reply.output:
            if hasattr(item, "model_dump"):
                item.model_dump(mode="json", exclude_none=True)

        def open_session() -> Any:
            return TurnlogSession(str(path.parent), path.stem)

        async def turn(session: Any, number: int) -> int:
            items = await session.get_items()
            if side == "bare":
                await _agents_saves(session, number)
            else:
                await _agents_turnlog_writes(session, number)
            return len(items)

        return open_session, turn

    from agents import SQLiteSession

    def open_peer() -> Any:
        return SQLiteSession("bench", str(path))

    async def peer_turn(session: Any, number: int) -> int:
        items = await session.get_items()
        user, new = agents_items(number)
        await session.add_items([user])
        await session.add_items(new)
        return len(items)

    return open_peer, peer_turn


def agents_prepare(side: str, path: Path, length: int) -> None:
    """A session of `length` items (whole turns), written the way the SDK
    writes it, outside any clock."""
    turns = length // ITEMS_PER_TURN
    if side in ("turnlog", "bare"):
        from turnlog.integrations.openai_agents import TurnlogSession

        async def build() -> None:
            # Built with durability none for speed; the file is the same.
            async with TurnlogSession(str(path.parent), path.stem, durability="none") as s:
                for number in range(1, turns + 1):
                    if side == "bare":
                        await _agents_saves(s, number)
                    else:
                        await _agents_turnlog_writes(s, number)

        asyncio.run(build())
    else:
        from agents import SQLiteSession

        async def build_peer() -> None:
            session = SQLiteSession("bench", str(path))
            items: list[Any] = []
            for number in range(1, turns + 1):
                user, new = agents_items(number)
                items += [user, *new]
            await session.add_items(items)
            session.close()

        asyncio.run(build_peer())


async def _agents_saves(session: Any, number: int) -> None:
    """A turn's writes as the SDK makes them on a session with no hooks."""
    user, new = agents_items(number)
    await session.add_items([user])
    await session.add_items(new)


async def _agents_turnlog_writes(session: Any, number: int) -> None:
    """A turn's writes, as `Runner.run` makes them on a `TurnlogSession` and its hooks."""
    from agents.items import ModelResponse
    from agents.usage import Usage

    user, new = agents_items(number)
    await session.add_items([user])
    hooks, run = session.hooks, _Context()
    await hooks.on_llm_start(run, None, None, None)
    await hooks.on_llm_end(
        run, None, ModelResponse(output=[new[0]], usage=Usage(), response_id=None)
    )
    call = _Context(new[0]["call_id"])
    await hooks.on_tool_start(call, None, _Tool())
    await hooks.on_tool_end(call, None, _Tool(), RESULT)
    await hooks.on_llm_start(run, None, None, None)
    await hooks.on_llm_end(
        run, None, ModelResponse(output=[new[2]], usage=Usage(), response_id=None)
    )
    await hooks.on_agent_end(run, None, ANSWER)
    await session.add_items(new)


# -- Pydantic AI --------------------------------------------------------------------------


def pydantic_messages(turn: int) -> list[Any]:
    """The four messages one run adds: the prompt, the model's call, the
    tool's return, the answer."""
    from pydantic_ai import messages as pm

    call_id = f"call_{turn:06d}"
    return [
        pm.ModelRequest(parts=[pm.UserPromptPart(content=prompt(turn))]),
        pm.ModelResponse(
            parts=[
                pm.ToolCallPart(
                    tool_name="read_report",
                    args={"path": f"reports/{turn}.csv"},
                    tool_call_id=call_id,
                )
            ]
        ),
        pm.ModelRequest(
            parts=[pm.ToolReturnPart(tool_name="read_report", content=RESULT, tool_call_id=call_id)]
        ),
        pm.ModelResponse(parts=[pm.TextPart(content=ANSWER)]),
    ]


class _RunContext:
    """What the capability's hooks read from Pydantic AI's run context."""

    def __init__(self, run_id: str, prompt_text: str, messages: list[Any]) -> None:
        self.run_id = run_id
        self.prompt = prompt_text
        self.messages = messages


class _Result:
    def __init__(self, messages: list[Any]) -> None:
        self._messages = messages

    def all_messages(self) -> list[Any]:
        return self._messages


class _ToolDef:
    name = "read_report"
    metadata = None


async def _pydantic_turnlog_turn(cap: Any, number: int, *, build: bool = False) -> int:
    """A run's calls on the capability, in `agent.run`'s order, after
    `cap.messages()` gave it its history. `build`: the same writes without
    reading the history back (a session is prepared in linear time; the
    capability is opened with history="off" then)."""
    history = [] if build else cap.messages()
    request, asked, answered, answer = pydantic_messages(number)
    call = asked.parts[0]
    ctx = _RunContext(f"run-{number}", prompt(number), list(history))
    await cap.before_run(ctx)
    ctx.messages = [*history, request]
    await cap.before_model_request(ctx, None)
    await cap.after_model_request(ctx, request_context=None, response=asked)
    args = call.args_as_dict()
    await cap.before_tool_execute(ctx, call=call, tool_def=_ToolDef(), args=args)
    await cap.after_tool_execute(ctx, call=call, tool_def=_ToolDef(), args=args, result=RESULT)
    ctx.messages = [*history, request, asked, answered]
    await cap.before_model_request(ctx, None)
    await cap.after_model_request(ctx, request_context=None, response=answer)
    await cap.after_run(ctx, result=_Result([*ctx.messages, answer]))
    return len(history)


class ChatAppHistory:
    """Pydantic AI's chat app example's persistence: one SQLite row of
    `ModelMessagesTypeAdapter` JSON per run, every row validated on load
    (examples/pydantic_ai_examples/chat_app.py in the pydantic-ai repository)."""

    def __init__(self, path: Path) -> None:
        import sqlite3

        self.con = sqlite3.connect(str(path), check_same_thread=False)
        self.con.execute(
            "CREATE TABLE IF NOT EXISTS messages (id INTEGER PRIMARY KEY, message_list TEXT);"
        )
        self.con.commit()

    def get_messages(self) -> list[Any]:
        from pydantic_ai.messages import ModelMessagesTypeAdapter

        rows = self.con.execute("SELECT message_list FROM messages order by id").fetchall()
        messages: list[Any] = []
        for row in rows:
            messages.extend(ModelMessagesTypeAdapter.validate_json(row[0]))
        return messages

    def add_messages(self, messages: bytes) -> None:
        self.con.execute("INSERT INTO messages (message_list) VALUES (?);", (messages,))
        self.con.commit()

    def close(self) -> None:
        self.con.close()


def pydantic_turn_factory(side: str, path: Path) -> tuple[Any, Any]:
    if side == "turnlog":
        from turnlog.integrations.pydantic_ai import TurnlogCapability

        def open_cap() -> Any:
            return TurnlogCapability(str(path.parent), path.stem)

        return open_cap, _pydantic_turnlog_turn

    from pydantic_ai.messages import ModelMessagesTypeAdapter

    def open_peer() -> Any:
        return ChatAppHistory(path)

    async def peer_turn(history: Any, number: int) -> int:
        # The example runs its database calls on a thread, as turnlog does.
        messages = await asyncio.to_thread(history.get_messages)
        new = pydantic_messages(number)
        await asyncio.to_thread(history.add_messages, ModelMessagesTypeAdapter.dump_json(new))
        return len(messages)

    return open_peer, peer_turn


def pydantic_prepare(side: str, path: Path, length: int) -> None:
    turns = length // ITEMS_PER_TURN
    if side == "turnlog":
        from turnlog.integrations.pydantic_ai import TurnlogCapability

        async def build() -> None:
            async with TurnlogCapability(
                str(path.parent), path.stem, durability="none", history="off"
            ) as cap:
                for number in range(1, turns + 1):
                    await _pydantic_turnlog_turn(cap, number, build=True)

        asyncio.run(build())
    else:
        from pydantic_ai.messages import ModelMessagesTypeAdapter

        history = ChatAppHistory(path)
        for number in range(1, turns + 1):
            history.add_messages(ModelMessagesTypeAdapter.dump_json(pydantic_messages(number)))
        history.close()


# -- LangGraph ------------------------------------------------------------------------------


def langgraph_messages(turn: int) -> list[Any]:
    """The four thread messages one turn adds, with the ids LangGraph keeps."""
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    call_id = f"call_{turn:06d}"
    call = {"id": call_id, "name": "read_report", "args": {"path": f"reports/{turn}.csv"}}
    return [
        HumanMessage(content=prompt(turn), id=f"h{turn}"),
        AIMessage(content="", tool_calls=[call], id=f"a{turn}"),
        ToolMessage(content=RESULT, tool_call_id=call_id, name="read_report", id=f"t{turn}"),
        AIMessage(content=ANSWER, id=f"f{turn}"),
    ]


def langgraph_app(db: Path, wrapper: Any) -> Any:
    """A tool-calling graph on LangGraph's SqliteSaver: a scripted model that
    asks for one tool call, then answers; the tool node wrapped by turnlog on
    turnlog's side, bare on the peer's."""
    import sqlite3
    from typing import Annotated, TypedDict

    from langchain_core.messages import AIMessage, ToolMessage
    from langchain_core.tools import tool
    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.graph import START, StateGraph
    from langgraph.graph.message import add_messages
    from langgraph.prebuilt import ToolNode, tools_condition

    @tool
    def read_report(path: str) -> str:
        """Read a report."""
        return RESULT

    # The functional form: the class form's annotations would be strings here.
    State = TypedDict("State", {"messages": Annotated[list[Any], add_messages]})  # noqa: UP013

    def model(state: Any) -> dict[str, Any]:
        last = state["messages"][-1]
        human = next(m for m in reversed(state["messages"]) if m.type == "human")
        turn = int(str(human.id).removeprefix("h"))
        if isinstance(last, ToolMessage):
            return {"messages": [AIMessage(content=ANSWER, id=f"f{turn}")]}
        call = {"id": f"call_{turn:06d}", "name": "read_report", "args": {"path": f"{turn}.csv"}}
        return {"messages": [AIMessage(content="", tool_calls=[call], id=f"a{turn}")]}

    graph = StateGraph(State)
    graph.add_node("agent", model)
    graph.add_node("tools", ToolNode([read_report], wrap_tool_call=wrapper))
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition)
    graph.add_edge("tools", "agent")
    connection = sqlite3.connect(str(db), check_same_thread=False)
    return graph.compile(checkpointer=SqliteSaver(connection))


_THREAD = {"configurable": {"thread_id": "bench"}}


def langgraph_turn_factory(side: str, path: Path) -> tuple[Any, Any]:
    from langchain_core.messages import HumanMessage

    if side == "turnlog":
        from turnlog.integrations.langgraph import TurnlogToolWrapper

        def open_session() -> Any:
            wrapper = TurnlogToolWrapper(str(path.parent), path.stem)
            return wrapper, langgraph_app(path.with_suffix(".db"), wrapper)

        async def turn(opened: Any, number: int) -> int:
            wrapper, app = opened
            start = {"messages": [HumanMessage(content=prompt(number), id=f"h{number}")]}
            out = app.invoke(start, _THREAD, durability="sync")
            wrapper.finish(out)
            return len(out["messages"]) - ITEMS_PER_TURN

        return open_session, turn

    def open_peer() -> Any:
        return None, langgraph_app(path, None)

    async def peer_turn(opened: Any, number: int) -> int:
        _, app = opened
        start = {"messages": [HumanMessage(content=prompt(number), id=f"h{number}")]}
        out = app.invoke(start, _THREAD, durability="sync")
        return len(out["messages"]) - ITEMS_PER_TURN

    return open_peer, peer_turn


class _ToolRequest:
    """What the wrapper reads from LangGraph's ToolCallRequest."""

    def __init__(self, call: dict[str, Any], state: Any) -> None:
        self.tool_call = call
        self.state = state
        self.tool = None


def langgraph_prepare(side: str, path: Path, length: int) -> None:
    """The thread of `length` messages in the checkpointer (one update, as
    LangGraph's own `update_state` writes it); on turnlog's side also the
    session the wrapper would have written for those turns."""
    turns = length // ITEMS_PER_TURN
    messages = [m for number in range(1, turns + 1) for m in langgraph_messages(number)]
    db = path.with_suffix(".db") if side == "turnlog" else path
    langgraph_app(db, None).update_state(_THREAD, {"messages": messages}, as_node="agent")
    if side != "turnlog":
        return
    from turnlog.integrations.langgraph import TurnlogToolWrapper

    # The wrapper's own calls for each turn, given that turn's messages only
    # (history="off": the session is prepared in linear time).
    with TurnlogToolWrapper(
        str(path.parent), path.stem, durability="none", history="off"
    ) as wrapper:
        for number in range(1, turns + 1):
            human, asked, answered, answer = langgraph_messages(number)
            request = _ToolRequest(asked.tool_calls[0], {"messages": [human, asked]})
            wrapper(request, lambda _request, answered=answered: answered)
            wrapper.finish({"messages": [human, asked, answered, answer]})
