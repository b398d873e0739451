"""The integrations that run appends off the thread that opened the session, on an
`sqlite:///` store: asyncio's writer thread, framework tool threads."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import turnlog
from turnlog import events as ev
from turnlog.core.fold import Message
from turnlog.events import Event, ToolCall
from turnlog.runtime.async_loop import aopen, arun_turn
from turnlog.runtime.loop import Reply, Tool
from turnlog.stores import SQLiteStore


def written_ahead(events: Sequence[Event]) -> set[str]:
    """The calls answered, each after its dispatch, in a gapless log."""
    assert [event.seq for event in events] == list(range(len(events)))
    dispatched: dict[str, int] = {}
    answered = set()
    for event in events:
        if isinstance(event.data, ev.ToolDispatch):
            dispatched[event.data.call_id] = event.seq
        elif isinstance(event.data, ev.ToolResult):
            assert dispatched[event.data.call_id] < event.seq
            answered.add(event.data.call_id)
    return answered


def test_the_async_reference_loop_on_a_sqlite_url(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'sessions.db'}"
    calls = tuple(ToolCall(id=f"c{n}", name="fetch", arguments={"n": n}) for n in range(5))

    def model(messages: Sequence[Message]) -> Reply:
        if messages[-1].role == "user":
            return Reply(content="fetching", tool_calls=calls)
        return Reply(content=f"{sum(m.role == 'tool' for m in messages)} fetched")

    async def fetch(n: int) -> str:
        await asyncio.sleep(0.005 * (5 - n))  # answered out of order
        return f"page {n}"

    tools = {"fetch": Tool(run=fetch, idempotency="read_only")}

    async def main() -> str:
        async with await aopen(url, "run-1", create=True) as log:
            first = await arun_turn(log, model, tools, "fetch five pages")
            second = await arun_turn(log, lambda _: Reply(content="welcome"), {}, "thanks")
            assert second.content == "welcome"
        return str(first.content)

    assert asyncio.run(main()) == "5 fetched"
    store = SQLiteStore(tmp_path / "sessions.db")
    events = store.read("run-1")
    assert written_ahead(events) == {call.id for call in calls}
    assert turnlog.inspect(url, "run-1").status == "finished"
    assert turnlog.verify.verify_session(url, "run-1").ok


def test_the_openai_agents_session_with_parallel_calls_on_a_sqlite_url(tmp_path: Path) -> None:
    from agents import Agent, ModelSettings, Runner, function_tool, set_tracing_disabled
    from agents.testing import ScriptedModel, assistant_message, function_call

    from turnlog.integrations.openai_agents import TurnlogSession

    @function_tool
    async def lookup(city: str) -> str:
        """Look up the weather."""
        await asyncio.sleep(0.01)
        return f"{city}: 3C"

    model = ScriptedModel(
        [
            [
                function_call("lookup", {"city": "Oslo"}, call_id="c1"),
                function_call("lookup", {"city": "Bergen"}, call_id="c2"),
            ],
            [assistant_message("3C in both.", item_id="msg_final")],
        ]
    )
    settings = ModelSettings(parallel_tool_calls=True)
    agent = Agent(name="w", model=model, tools=[lookup], model_settings=settings)
    set_tracing_disabled(True)  # no network, no trace export
    url = f"sqlite:///{tmp_path / 'sessions.db'}"

    async def main() -> list[Any]:
        session = TurnlogSession(url, "w")
        try:
            await Runner.run(agent, "Weather?", session=session, hooks=session.hooks)
            return await session.get_items()
        finally:
            await session.close()

    items = asyncio.run(main())
    assert [item.get("type", "message") for item in items][-1] == "message"
    events = SQLiteStore(tmp_path / "sessions.db").read("w")
    assert written_ahead(events) == {"c1", "c2"}
    assert turnlog.inspect(url, "w").status == "finished"


def test_the_langgraph_threaded_tool_node_on_a_sqlite_url(tmp_path: Path) -> None:
    from typing import Annotated, TypedDict

    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
    from langchain_core.tools import tool
    from langgraph.graph import START, StateGraph
    from langgraph.graph.message import add_messages
    from langgraph.prebuilt import ToolNode, tools_condition

    from turnlog.integrations.langgraph import TurnlogToolWrapper

    @tool
    def weather(city: str) -> str:
        """Weather in a city."""
        return f"{city}: 3C"

    def model(state: Any) -> dict[str, Any]:
        if any(isinstance(m, ToolMessage) for m in state["messages"]):
            return {"messages": [AIMessage(content="3C everywhere.")]}
        cities = ["Oslo", "Bergen", "Tromsø", "Bodø"]
        calls = [
            {"id": f"c{n}", "name": "weather", "args": {"city": city}}
            for n, city in enumerate(cities)
        ]
        return {"messages": [AIMessage(content="", tool_calls=calls)]}

    State = TypedDict("State", {"messages": Annotated[list[Any], add_messages]})  # noqa: UP013 - annotations here are strings (future import); this form is evaluated
    url = f"sqlite:///{tmp_path / 'sessions.db'}"
    wrapper = TurnlogToolWrapper(url, "lg")
    graph = StateGraph(State)
    graph.add_node("agent", model)
    # A sync tool node runs its calls on a pool of threads.
    graph.add_node("tools", ToolNode([weather], wrap_tool_call=wrapper))
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition)
    graph.add_edge("tools", "agent")
    out = graph.compile().invoke({"messages": [HumanMessage("Weather?")]})
    wrapper.finish(out)
    wrapper.close()
    events = SQLiteStore(tmp_path / "sessions.db").read("lg")
    assert written_ahead(events) == {"c0", "c1", "c2", "c3"}
    assert turnlog.inspect(url, "lg").status == "finished"
