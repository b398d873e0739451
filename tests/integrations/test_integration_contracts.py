"""The integrations' contracts in one process, on the real frameworks with scripted
models: calls LangGraph saved but never ran are answered `tool_not_started`; the
user's words are recorded and no answer is dropped for its text; handles have
lifetimes and share one writer per session; tools declare idempotency; Pydantic AI
sees repairs as repairs; a history that does not extend the log is caught; the
OpenAI Agents SDK's hooks compose."""

from __future__ import annotations

import asyncio
import warnings
from pathlib import Path
from typing import Any

import pytest

import turnlog
from turnlog import events as ev
from turnlog.errors import UsageError
from turnlog.providers import PROVIDERS, render, validate


@pytest.fixture(params=["jsonl", "sqlite"])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return str(tmp_path / "sessions") if request.param == "jsonl" else f"sqlite:///{tmp_path}/s.db"


def exports_valid(target: str, session_id: str) -> None:
    with turnlog.open(target, session_id, create=False) as log:
        messages = log.messages
    for provider in PROVIDERS:
        assert validate(provider, render(provider, messages)) == [], provider


def events_of(target: str, session_id: str) -> list[ev.Event]:
    return turnlog.open_store(target)[0].read(session_id)


# -- LangGraph ------------------------------------------------------------------------


def langgraph_app(wrapper: Any, answers: list[str], *, interrupt: bool = False) -> tuple[Any, Any]:
    """A graph whose model asks for two charges, then answers each of `answers` in turn."""
    import sqlite3

    from langchain_core.messages import AIMessage, ToolMessage
    from langchain_core.tools import tool
    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.graph import START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode, tools_condition

    ran: list[int] = []

    @tool
    def charge(amount: int) -> str:
        """Charge the card."""
        ran.append(amount)
        return f"charged {amount}"

    # LangChain tools carry metadata: what the user knows about the tool.
    charge.metadata = {"idempotency": "read_only"}

    def model(state: Any) -> dict[str, Any]:
        last = state["messages"][-1]
        if isinstance(last, ToolMessage) or not answers[0].startswith("?"):
            return {"messages": [AIMessage(content=answers.pop(0))]}
        answers.pop(0)
        calls = [{"id": f"c{a}", "name": "charge", "args": {"amount": a}} for a in (1, 2)]
        return {"messages": [AIMessage(content="", tool_calls=calls)]}

    graph = StateGraph(MessagesState)
    graph.add_node("agent", model)
    graph.add_node("tools", ToolNode([charge], wrap_tool_call=wrapper))
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition)
    graph.add_edge("tools", "agent")
    saver = SqliteSaver(sqlite3.connect(":memory:", check_same_thread=False))
    app = graph.compile(checkpointer=saver, interrupt_before=["tools"] if interrupt else None)
    return app, ran


def test_langgraph_calls_saved_but_never_started_are_answered_not_started(target: str) -> None:
    """The crash hit after LangGraph saved the model's tool calls, before any
    reached the wrapper: the thread stops before the tool node, turnlog holds
    nothing of the step. recover_thread answers both calls `tool_not_started`,
    in the thread and in the log, and the next step is the model."""
    from langchain_core.messages import HumanMessage, ToolMessage

    from turnlog.integrations.langgraph import TurnlogToolWrapper

    config: Any = {"configurable": {"thread_id": "t"}}
    with TurnlogToolWrapper(target, "t") as tools:
        app, ran = langgraph_app(tools, ["?ask", "both charged"], interrupt=True)
        app.invoke({"messages": [HumanMessage("charge twice")]}, config)
        assert app.get_state(config).next == ("tools",)  # saved, not run
        written = tools.recover_thread(app, config)
        assert [m.tool_call_id for m in written] == ["c1", "c2"]
        assert all(isinstance(m, ToolMessage) and m.status == "error" for m in written)
        assert all("did not run" in m.content for m in written)
        assert app.get_state(config).next == ("agent",)
        out = app.invoke(None, config)
        tools.finish(out)
    assert ran == []  # neither charge ran, and none will: the model answered
    results = [e.data for e in events_of(target, "t") if isinstance(e.data, ev.ToolResult)]
    assert [(r.call_id, r.risk) for r in results] == [
        ("c1", "tool_not_started"),
        ("c2", "tool_not_started"),
    ]
    kinds = [e.data.TYPE for e in events_of(target, "t") if e.type.endswith("_message")]
    assert kinds[:2] == ["user_message", "assistant_message"]  # the user's words come first
    assert turnlog.inspect(target, "t").status == "finished"
    exports_valid(target, "t")


def test_langgraph_turns_without_tools_keep_the_users_words_and_every_answer(
    target: str,
) -> None:
    from langchain_core.messages import HumanMessage

    from turnlog.integrations.langgraph import TurnlogToolWrapper

    config: Any = {"configurable": {"thread_id": "t"}}
    with TurnlogToolWrapper(target, "t") as tools:
        app, _ = langgraph_app(tools, ["Done.", "Done."])
        for prompt in ("first", "second"):
            out = app.invoke({"messages": [HumanMessage(prompt)]}, config)
            tools.finish(out)
            tools.finish(out)  # twice on the same state: recorded once, by id
    messages = [(m.role, ev.content_text(m.content)) for m in turnlog.open(target, "t").messages]
    assert messages == [
        ("user", "first"),
        ("assistant", "Done."),
        ("user", "second"),
        ("assistant", "Done."),
    ]


def test_langgraph_tool_metadata_declares_idempotency(target: str) -> None:
    from langchain_core.messages import HumanMessage

    from turnlog.integrations.langgraph import TurnlogToolWrapper

    config: Any = {"configurable": {"thread_id": "t"}}
    with TurnlogToolWrapper(target, "t", idempotency={"other": "destructive"}) as tools:
        app, ran = langgraph_app(tools, ["?ask", "ok"])
        tools.finish(app.invoke({"messages": [HumanMessage("go")]}, config))
    assert ran == [1, 2]
    dispatches = [e.data for e in events_of(target, "t") if isinstance(e.data, ev.ToolDispatch)]
    assert [d.idempotency for d in dispatches] == ["read_only", "read_only"]


def test_langgraph_thread_that_does_not_extend_the_log(target: str) -> None:
    from langchain_core.messages import HumanMessage

    from turnlog.integrations.kit.history import HistoryMismatchError, HistoryMismatchWarning
    from turnlog.integrations.langgraph import TurnlogToolWrapper

    with turnlog.open(target, "t") as log:
        log.user("something else entirely")
        with log.turn(), log.step():
            log.assistant("an answer the thread never had")
    config: Any = {"configurable": {"thread_id": "t"}}
    with TurnlogToolWrapper(target, "t", history="strict") as tools:
        app, ran = langgraph_app(tools, ["?ask", "ok"])
        with pytest.raises(HistoryMismatchError):
            app.invoke({"messages": [HumanMessage("go")]}, config)
    assert ran == []  # refused before the dispatch, so before the tool
    with TurnlogToolWrapper(target, "t") as tools, warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")  # warn, the default
        app, ran = langgraph_app(tools, ["?ask", "ok"])
        other: Any = {"configurable": {"thread_id": "other"}}
        tools.finish(app.invoke({"messages": [HumanMessage("go")]}, other))
    assert any(issubclass(w.category, HistoryMismatchWarning) for w in got)
    assert ran == [1, 2]  # a warning lets the run go on
    with pytest.raises(UsageError, match="strict, warn, off"):
        TurnlogToolWrapper(target, "t4", history="loud")  # type: ignore[arg-type]


# -- handles ----------------------------------------------------------------------------


def test_handles_share_one_writer_per_session_and_release_it_when_the_last_closes(
    target: str,
) -> None:
    """A web handler builds one per request, as with the frameworks' own sessions."""
    from turnlog.integrations.langgraph import TurnlogToolWrapper
    from turnlog.integrations.openai_agents import TurnlogSession
    from turnlog.integrations.pydantic_ai import TurnlogCapability

    async def requests() -> None:
        first = TurnlogSession(target, "s")
        async with TurnlogSession(target, "s") as second, TurnlogCapability(target, "s") as cap:
            assert second.log.log is first.log.log is cap.log.log  # one writer
            await second.log.user("hello")
        assert not first.log.log.closed  # the others closed; the first still writes
        await first.log.user("still here")
        await first.close()
        await first.close()  # idempotent

    asyncio.run(requests())
    with TurnlogToolWrapper(target, "s") as tools:
        assert [m.content for m in tools.log.messages] == ["hello", "still here"]
    with turnlog.open(target, "s") as log:  # the last handle released the lock
        assert log.next_seq > 2
        with pytest.raises(turnlog.errors.SessionHeldHereError):
            TurnlogToolWrapper(target, "s")  # held by a plain Log: a clear same-process error


@pytest.mark.parametrize("integration", ["openai-agents", "pydantic-ai", "langgraph", "adk"])
def test_idempotency_typo_is_a_usage_error_listing_the_values(
    tmp_path: Path, integration: str
) -> None:
    from turnlog.integrations.adk import TurnlogSessionService
    from turnlog.integrations.langgraph import TurnlogToolWrapper
    from turnlog.integrations.openai_agents import TurnlogSession
    from turnlog.integrations.pydantic_ai import TurnlogCapability

    make: Any = {
        "openai-agents": lambda: TurnlogSession(tmp_path, "s", idempotency={"pay": "readonly"}),
        "pydantic-ai": lambda: TurnlogCapability(tmp_path, "s", idempotency={"pay": "readonly"}),
        "langgraph": lambda: TurnlogToolWrapper(tmp_path, "s", idempotency={"pay": "readonly"}),
        "adk": lambda: TurnlogSessionService(tmp_path, idempotency={"pay": "readonly"}),
    }[integration]
    with pytest.raises(UsageError) as raised:
        make()
    assert "'readonly' for tool 'pay'" in str(raised.value)
    assert "read_only, idempotent, destructive, unknown" in str(raised.value)
    assert raised.value.hint and "destructive" in raised.value.hint
    assert not (tmp_path / "s.jsonl").exists()  # refused before anything was opened


# -- Pydantic AI ------------------------------------------------------------------------


def test_pydantic_ai_repairs_come_back_as_interrupted_returns(tmp_path: Path) -> None:
    from pydantic_ai import messages as pm

    from turnlog.integrations.pydantic_ai import to_model_messages

    with turnlog.open(tmp_path, "p") as log:
        log.user("pay both")
        log.append(log.next_turn_start())
        log.append(ev.StepStart(turn=1, step=1))
        calls = [turnlog.ToolCall(id=f"c{i}", name="pay", arguments={}) for i in (1, 2, 3)]
        log.assistant("", calls)
        with log.dispatch(calls[0]) as running:
            running.result("paid")
        log.append(ev.ToolDispatch(call_id="c2", name="pay", idempotency="destructive"), sync=True)
    with turnlog.open(tmp_path, "p", recover=True) as log:  # the crash, recovered
        parts = [p for m in to_model_messages(log.messages) for p in m.parts]
    returns = {p.tool_call_id: p for p in parts if isinstance(p, pm.ToolReturnPart)}
    assert returns["c1"].outcome == "success" and returns["c1"].metadata is None
    for call_id, risk in (("c2", "tool_outcome_unknown"), ("c3", "tool_not_started")):
        part = returns[call_id]
        assert part.outcome == "interrupted"
        assert part.metadata is not None
        assert part.metadata[pm.SYNTHESIZED_TOOL_RETURN_METADATA_KEY] is True
        assert part.metadata["turnlog"] == {"origin": "recovery", "risk": risk}


def test_pydantic_ai_history_must_extend_the_log(tmp_path: Path) -> None:
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelRequest, ModelResponse, TextPart, UserPromptPart
    from pydantic_ai.models.function import FunctionModel

    from turnlog.integrations.kit.history import HistoryMismatchError, HistoryMismatchWarning
    from turnlog.integrations.pydantic_ai import TurnlogCapability

    agent = Agent(FunctionModel(lambda messages, info: ModelResponse(parts=[TextPart("ok")])))
    stranger = [
        ModelRequest(parts=[UserPromptPart("a")]),
        ModelResponse(parts=[TextPart("b")]),
    ]

    async def main() -> None:
        async with TurnlogCapability(tmp_path, "p") as cap:
            await agent.run("hi", message_history=cap.messages(), capabilities=[cap])
        async with TurnlogCapability(tmp_path, "p", history="strict") as cap:
            await agent.run("more", message_history=cap.messages(), capabilities=[cap])
            with pytest.raises(HistoryMismatchError, match="message_history"):
                await agent.run("x", message_history=stranger, capabilities=[cap])
        async with TurnlogCapability(tmp_path, "p") as cap:
            with pytest.warns(HistoryMismatchWarning):
                await agent.run("x", message_history=stranger[:1], capabilities=[cap])
        async with TurnlogCapability(tmp_path, "p", history="off") as cap:
            with warnings.catch_warnings(record=True) as got:
                warnings.simplefilter("always")
                await agent.run("y", message_history=stranger, capabilities=[cap])
            assert not any(issubclass(w.category, HistoryMismatchWarning) for w in got)

    asyncio.run(main())


# -- OpenAI Agents SDK ------------------------------------------------------------------


def test_openai_agents_hooks_compose_and_turnlog_dispatches_first(target: str) -> None:
    from agents import Agent, RunHooks, Runner, function_tool, set_tracing_disabled
    from agents.testing import ScriptedModel, assistant_message, function_call

    from turnlog.integrations.openai_agents import TurnlogSession

    set_tracing_disabled(True)
    seen: list[tuple[str, bool]] = []

    @function_tool
    def lookup(city: str) -> str:
        """Look up the weather."""
        return f"{city}: 3C"

    class Mine(RunHooks[Any]):
        async def on_tool_start(self, context: Any, agent: Any, tool: Any) -> None:
            dispatched = {
                e.data.call_id
                for e in events_of(target, "w")
                if isinstance(e.data, ev.ToolDispatch)
            }
            seen.append(("tool_start", context.tool_call_id in dispatched))

        async def on_agent_end(self, context: Any, agent: Any, output: Any) -> None:
            seen.append(("agent_end", output == "3C"))

    model = ScriptedModel(
        [[function_call("lookup", {"city": "Oslo"}, call_id="c1")], [assistant_message("3C")]]
    )
    agent = Agent(name="w", model=model, tools=[lookup])

    async def main() -> None:
        async with TurnlogSession(target, "w", idempotency={"lookup": "read_only"}) as session:
            await Runner.run(agent, "Weather?", session=session, hooks=session.hooks_with(Mine()))

    asyncio.run(main())
    assert seen == [("tool_start", True), ("agent_end", True)]  # ours ran first, then yours
    dispatches = [e.data for e in events_of(target, "w") if isinstance(e.data, ev.ToolDispatch)]
    assert [d.idempotency for d in dispatches] == ["read_only"]
    assert turnlog.inspect(target, "w").status == "finished"


def test_openai_agents_hooks_pass_a_handoff_on_by_keyword_as_the_sdk_does(target: str) -> None:
    from agents import Agent, RunHooks, Runner, handoff, set_tracing_disabled
    from agents.testing import ScriptedModel, assistant_message, function_call

    from turnlog.integrations.openai_agents import TurnlogSession

    set_tracing_disabled(True)
    seen: list[tuple[str, str]] = []

    class Mine(RunHooks[Any]):
        # Keyword-only, as the SDK calls it: a positional pass-on would fail here.
        async def on_handoff(self, *, context: Any, from_agent: Any, to_agent: Any) -> None:
            seen.append((from_agent.name, to_agent.name))

    shipper = Agent(name="shipper", model=ScriptedModel([[assistant_message("shipped")]]))
    transfer = handoff(shipper)
    desk = Agent(
        name="desk",
        model=ScriptedModel([[function_call(transfer.tool_name, {}, call_id="h1")]]),
        handoffs=[transfer],
    )

    async def main() -> None:
        async with TurnlogSession(target, "h") as session:
            await Runner.run(desk, "Ship it", session=session, hooks=session.hooks_with(Mine()))

    asyncio.run(main())
    assert seen == [("desk", "shipper")]
    assert turnlog.inspect(target, "h").status == "finished"


# -- Google ADK -------------------------------------------------------------------------


def test_adk_sessions_round_trip_state_and_never_delete(target: str) -> None:
    from google.adk.errors.already_exists_error import AlreadyExistsError
    from google.adk.events.event import Event as AdkEvent
    from google.adk.events.event_actions import EventActions
    from google.genai import types

    from turnlog.integrations.adk import TurnlogSessionService

    async def main() -> None:
        async with TurnlogSessionService(target) as sessions:
            made = await sessions.create_session(
                app_name="shop", user_id="u", session_id="s", state={"tier": "gold"}
            )
            said = AdkEvent(
                author="user",
                invocation_id="i1",
                content=types.Content(role="user", parts=[types.Part(text="hi")]),
                actions=EventActions(state_delta={"greeted": True}),
            )
            await sessions.append_event(made, said)
            with pytest.raises(AlreadyExistsError):
                await sessions.create_session(app_name="shop", user_id="u", session_id="s")
        async with TurnlogSessionService(target) as sessions:
            got = await sessions.get_session(app_name="shop", user_id="u", session_id="s")
            assert got is not None
            assert got.state == {"tier": "gold", "greeted": True}
            assert [e.id for e in got.events] == [said.id]
            assert await sessions.get_session(app_name="other", user_id="u", session_id="s") is None
            listed = await sessions.list_sessions(app_name="shop")
            assert [s.id for s in listed.sessions] == ["s"]
            await sessions.delete_session(app_name="shop", user_id="u", session_id="s")
            assert await sessions.get_session(app_name="shop", user_id="u", session_id="s") is None

    asyncio.run(main())
    messages = turnlog.open(target, "s").messages
    assert [ev.content_text(m.content) for m in messages] == ["hi"]  # still in the log


def test_adk_without_the_plugin_the_function_call_event_is_the_dispatch(target: str) -> None:
    from collections.abc import AsyncGenerator

    from google.adk.agents import LlmAgent
    from google.adk.apps import App
    from google.adk.models.base_llm import BaseLlm
    from google.adk.models.llm_request import LlmRequest
    from google.adk.models.llm_response import LlmResponse
    from google.adk.runners import Runner
    from google.genai import types

    from turnlog.integrations.adk import TurnlogSessionService

    class Scripted(BaseLlm):
        model: str = "scripted"

        async def generate_content_async(
            self, llm_request: LlmRequest, stream: bool = False
        ) -> AsyncGenerator[LlmResponse, None]:
            answered = any(
                p.function_response for c in llm_request.contents for p in (c.parts or [])
            )
            part = (
                types.Part(text="done")
                if answered
                else types.Part(function_call=types.FunctionCall(id="c1", name="look", args={}))
            )
            yield LlmResponse(content=types.Content(role="model", parts=[part]))

    def look() -> str:
        """Look."""
        return "seen"

    async def main() -> None:
        async with TurnlogSessionService(target, idempotency={"look": "read_only"}) as sessions:
            agent = LlmAgent(name="a", model=Scripted(), tools=[look])
            runner = Runner(app=App(name="app", root_agent=agent), session_service=sessions)
            await sessions.create_session(app_name="app", user_id="u", session_id="s")
            message = types.Content(role="user", parts=[types.Part(text="look")])
            async for _ in runner.run_async(user_id="u", session_id="s", new_message=message):
                pass

    asyncio.run(main())
    kinds = [e.type for e in events_of(target, "s") if e.type in ("tool_dispatch", "tool_result")]
    assert kinds == ["tool_dispatch", "tool_result"]
    dispatch = next(e.data for e in events_of(target, "s") if isinstance(e.data, ev.ToolDispatch))
    assert dispatch.idempotency == "read_only"
    assert turnlog.inspect(target, "s").status == "finished"
    exports_valid(target, "s")


# -- sync and async ---------------------------------------------------------------------


def test_langgraph_async_graph_recovers_and_revives_on_an_async_checkpointer(
    target: str, tmp_path: Path
) -> None:
    """The async side: `awrap` on the tool node, an async checkpointer, and
    `arecover_thread(..., revive=True)`: the thread gets the results and the
    resume notice, the log its revival."""
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
    from langchain_core.tools import tool
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
    from langgraph.graph import START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode, tools_condition

    from turnlog.integrations.langgraph import TurnlogToolWrapper

    ran: list[str] = []

    @tool
    async def weather(city: str) -> str:
        """Weather in a city."""
        ran.append(city)
        return f"{city}: 3C"

    def model(state: Any) -> dict[str, Any]:
        last = state["messages"][-1]
        if isinstance(last, HumanMessage) and "[turnlog: automated notification" in str(
            last.content
        ):
            return {"messages": [AIMessage(content="carried on")]}
        if isinstance(last, ToolMessage):
            return {"messages": [AIMessage(content="3C")]}
        calls = [{"id": "w1", "name": "weather", "args": {"city": "Oslo"}}]
        return {"messages": [AIMessage(content="", tool_calls=calls)]}

    async def main() -> list[Any]:
        config: Any = {"configurable": {"thread_id": "t"}}
        async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "cp.db")) as saver:
            with TurnlogToolWrapper(target, "t") as tools:
                graph = StateGraph(MessagesState)
                graph.add_node("agent", model)
                graph.add_node("tools", ToolNode([weather], awrap_tool_call=tools.awrap))
                graph.add_edge(START, "agent")
                graph.add_conditional_edges("agent", tools_condition)
                graph.add_edge("tools", "agent")
                app = graph.compile(checkpointer=saver, interrupt_before=["tools"])
                await app.ainvoke({"messages": [HumanMessage("Weather?")]}, config)
                written = await tools.arecover_thread(app, config, revive=True)
                out = await app.ainvoke(None, config)
                tools.finish(out)
                return written

    written = asyncio.run(main())
    assert [type(m).__name__ for m in written] == ["ToolMessage", "HumanMessage"]
    assert written[1].content.startswith("[turnlog: automated notification (revival)")
    assert ran == []
    found = turnlog.inspect(target, "t")
    assert found.status == "finished" and found.revivals == 1
    exports_valid(target, "t")


def test_sync_entry_points_of_openai_agents_and_pydantic_ai(target: str) -> None:
    """`Runner.run_sync` and `agent.run_sync` run their own event loop; the
    handles work there too, and `with`-less close still releases the writer."""
    from agents import Agent, Runner, function_tool, set_tracing_disabled
    from agents.testing import ScriptedModel, assistant_message, function_call
    from pydantic_ai import Agent as PydanticAgent
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart
    from pydantic_ai.models.function import FunctionModel

    from turnlog.integrations.openai_agents import TurnlogSession
    from turnlog.integrations.pydantic_ai import TurnlogCapability

    set_tracing_disabled(True)

    @function_tool
    def lookup(city: str) -> str:
        """Look up the weather."""
        return f"{city}: 3C"

    model = ScriptedModel(
        [[function_call("lookup", {"city": "Oslo"}, call_id="c1")], [assistant_message("3C")]]
    )
    session = TurnlogSession(target, "oa")
    result = Runner.run_sync(
        Agent(name="w", model=model, tools=[lookup]),
        "Weather?",
        session=session,
        hooks=session.hooks,
    )
    asyncio.run(session.close())
    assert result.final_output == "3C"
    assert turnlog.inspect(target, "oa").status == "finished"

    def reply(messages: list[Any], info: Any) -> ModelResponse:
        if any(isinstance(p, ToolReturnPart) for m in messages for p in m.parts):
            return ModelResponse(parts=[TextPart("3C")])
        return ModelResponse(parts=[ToolCallPart("look", {"city": "Oslo"}, tool_call_id="p1")])

    agent = PydanticAgent(FunctionModel(reply))

    @agent.tool_plain
    def look(city: str) -> str:
        return f"{city}: 3C"

    cap = TurnlogCapability(target, "pa")
    assert (
        agent.run_sync("Weather?", message_history=cap.messages(), capabilities=[cap]).output
        == "3C"
    )
    asyncio.run(cap.close())
    assert turnlog.inspect(target, "pa").status == "finished"
    exports_valid(target, "oa")
    exports_valid(target, "pa")


def test_pydantic_ai_tool_metadata_declares_idempotency(tmp_path: Path) -> None:
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart
    from pydantic_ai.models.function import FunctionModel

    from turnlog.integrations.pydantic_ai import TurnlogCapability

    def reply(messages: list[Any], info: Any) -> ModelResponse:
        if any(isinstance(p, ToolReturnPart) for m in messages for p in m.parts):
            return ModelResponse(parts=[TextPart("done")])
        return ModelResponse(
            parts=[ToolCallPart("read", {}, tool_call_id="r1"), ToolCallPart("wipe", {}, "w1")]
        )

    agent = Agent(FunctionModel(reply))

    @agent.tool_plain(metadata={"idempotency": "read_only"})
    def read() -> str:
        return "contents"

    @agent.tool_plain
    def wipe() -> str:
        return "wiped"

    async def main() -> None:
        async with TurnlogCapability(tmp_path, "p", idempotency={"wipe": "destructive"}) as cap:
            await agent.run("go", message_history=cap.messages(), capabilities=[cap])

    asyncio.run(main())
    dispatched = {
        e.data.name: e.data.idempotency
        for e in events_of(str(tmp_path), "p")
        if isinstance(e.data, ev.ToolDispatch)
    }
    assert dispatched == {"read": "read_only", "wipe": "destructive"}
