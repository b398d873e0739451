"""Contracts from an outside review of the integrations, on the real frameworks
with scripted models: runs that succeed end their turn `complete` (structured
output, retries), runs that raise or are cancelled close their turn in the
live process, tool metadata is checked before anything of a run is written,
closed handles say so, and handles on one session agree."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

import turnlog
from turnlog import events as ev
from turnlog.errors import SessionInterruptedError, UsageError
from turnlog.providers import PROVIDERS, render, validate


def exports_valid(target: Any, session_id: str) -> None:
    with turnlog.open(target, session_id, create=False) as log:
        messages = log.messages
    for provider in PROVIDERS:
        assert validate(provider, render(provider, messages)) == [], provider


def events_of(target: Any, session_id: str) -> list[ev.Event]:
    return turnlog.open_store(target)[0].read(session_id)


def turn_ends(target: Any, session_id: str) -> list[str]:
    return [e.data.reason for e in events_of(target, session_id) if isinstance(e.data, ev.TurnEnd)]


def results(target: Any, session_id: str) -> dict[str, ev.ToolResult]:
    return {
        e.data.call_id: e.data
        for e in events_of(target, session_id)
        if isinstance(e.data, ev.ToolResult)
    }


# -- Pydantic AI ------------------------------------------------------------------------


def test_pydantic_ai_structured_output_ends_the_turn_complete(tmp_path: Path) -> None:
    from pydantic import BaseModel
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelResponse, ToolCallPart, ToolReturnPart
    from pydantic_ai.models.function import FunctionModel

    from turnlog.integrations.pydantic_ai import TurnlogCapability

    class Out(BaseModel):
        x: int

    def reply(messages: list[Any], info: Any) -> ModelResponse:
        if any(isinstance(p, ToolReturnPart) for m in messages for p in m.parts):
            return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, {"x": 1}, "out1")])
        return ModelResponse(parts=[ToolCallPart("look", {}, tool_call_id="c1")])

    agent = Agent(FunctionModel(reply), output_type=Out)

    @agent.tool_plain
    def look() -> str:
        return "seen"

    async def main() -> None:
        async with TurnlogCapability(tmp_path, "p") as cap:
            result = await agent.run("go", message_history=cap.messages(), capabilities=[cap])
            assert result.output == Out(x=1)
        async with TurnlogCapability(tmp_path, "p", history="strict") as cap:  # not interrupted
            await agent.run("again", message_history=cap.messages(), capabilities=[cap])

    asyncio.run(main())
    assert turn_ends(tmp_path, "p") == ["complete", "complete"]
    assert results(tmp_path, "p")["out1"].content == "Final result processed."
    exports_valid(tmp_path, "p")


def test_pydantic_ai_each_model_response_records_its_usage(tmp_path: Path) -> None:
    """The capability records the response's token usage and model on the
    assistant message: what the timeline and the traces show per step."""
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelResponse, TextPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel
    from pydantic_ai.usage import RequestUsage

    from turnlog.integrations.pydantic_ai import TurnlogCapability

    def answer(messages: list[Any], info: AgentInfo) -> ModelResponse:
        return ModelResponse(
            parts=[TextPart("hi")], usage=RequestUsage(input_tokens=21, output_tokens=4)
        )

    agent = Agent(FunctionModel(answer, model_name="scripted"))

    async def main() -> None:
        async with TurnlogCapability(tmp_path, "u") as cap:
            await agent.run("hello", capabilities=[cap])

    asyncio.run(main())
    (usage,) = [e.data.usage for e in events_of(tmp_path, "u") if e.type == "assistant_message"]
    assert usage == ev.TokenUsage(input_tokens=21, output_tokens=4, model="scripted")


def test_pydantic_ai_retry_prompts_answer_their_calls_and_the_run_goes_on(
    tmp_path: Path,
) -> None:
    from pydantic_ai import Agent, ModelRetry
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import FunctionModel

    from turnlog.integrations.pydantic_ai import TurnlogCapability

    def reply(messages: list[Any], info: Any) -> ModelResponse:
        if len(messages) == 1:
            return ModelResponse(
                parts=[
                    ToolCallPart("flaky", {}, tool_call_id="c1"),
                    ToolCallPart("nope", {}, tool_call_id="c2"),
                    ToolCallPart("typed", {"a": "not a number"}, tool_call_id="c3"),
                ]
            )
        if len(messages) == 3:
            return ModelResponse(parts=[ToolCallPart("flaky", {}, tool_call_id="c4")])
        return ModelResponse(parts=[TextPart("done")])

    agent = Agent(FunctionModel(reply))
    tries: list[int] = []

    @agent.tool_plain
    def flaky() -> str:
        tries.append(1)
        if len(tries) == 1:
            raise ModelRetry("try again")
        return "ok"

    @agent.tool_plain
    def typed(a: int) -> str:
        return "typed"

    async def main() -> None:
        async with TurnlogCapability(tmp_path, "p") as cap:
            result = await agent.run("go", message_history=cap.messages(), capabilities=[cap])
            assert result.output == "done"

    asyncio.run(main())
    got = results(tmp_path, "p")
    assert got["c1"].is_error and "try again" in ev.content_text(got["c1"].content)
    assert got["c2"].is_error and "nope" in ev.content_text(got["c2"].content)
    assert got["c3"].is_error and got["c4"].content == "ok"
    dispatched = {e.data.call_id for e in events_of(tmp_path, "p") if e.type == "tool_dispatch"}
    assert dispatched == {"c1", "c4"}  # the unknown and the invalid call never started
    assert turn_ends(tmp_path, "p") == ["complete"]
    exports_valid(tmp_path, "p")


def pydantic_agent_with_tool(body: Any) -> Any:
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, UserPromptPart
    from pydantic_ai.models.function import FunctionModel

    def reply(messages: list[Any], info: Any) -> ModelResponse:
        last = messages[-1].parts[-1]
        if isinstance(last, UserPromptPart):
            return ModelResponse(parts=[ToolCallPart("pay", {}, tool_call_id=f"c{len(messages)}")])
        return ModelResponse(parts=[TextPart("done")])

    agent = Agent(FunctionModel(reply))
    agent.tool_plain(body, name="pay")
    return agent


def test_pydantic_ai_a_run_that_raises_closes_its_turn(tmp_path: Path) -> None:
    from turnlog.integrations.pydantic_ai import TurnlogCapability

    def pay() -> str:
        raise RuntimeError("card declined")

    agent = pydantic_agent_with_tool(pay)

    async def main() -> None:
        async with TurnlogCapability(tmp_path, "p") as cap:
            with pytest.raises(RuntimeError, match="declined"):
                await agent.run("pay", message_history=cap.messages(), capabilities=[cap])
            with pytest.raises(RuntimeError, match="declined"):  # starts clean, fails alike
                await agent.run("pay", message_history=cap.messages(), capabilities=[cap])

    asyncio.run(main())
    assert turn_ends(tmp_path, "p") == ["error", "error"]
    assert turnlog.inspect(tmp_path, "p").status != "interrupted"
    exports_valid(tmp_path, "p")


def test_pydantic_ai_a_cancelled_run_closes_its_turn_and_the_next_starts_clean(
    tmp_path: Path,
) -> None:
    from turnlog.integrations.pydantic_ai import TurnlogCapability

    started = asyncio.Event()

    async def pay() -> str:
        if not started.is_set():
            started.set()
            await asyncio.sleep(60)
        return "paid"

    agent = pydantic_agent_with_tool(pay)

    async def main() -> None:
        async with TurnlogCapability(tmp_path, "p") as cap:
            task = asyncio.create_task(
                agent.run("pay", message_history=cap.messages(), capabilities=[cap])
            )
            await started.wait()
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            # The same handle, the next run: outside the cancelled turn.
            await agent.run("hello", message_history=cap.messages(), capabilities=[cap])

    asyncio.run(main())
    assert turn_ends(tmp_path, "p") == ["cancelled", "complete"]
    owed = results(tmp_path, "p")["c1"]
    assert owed.risk == "tool_outcome_unknown" and owed.rule == "U1"
    kinds = [e.type for e in events_of(tmp_path, "p")]
    assert kinds.index("tool_result") < kinds.index("turn_end")
    exports_valid(tmp_path, "p")


def test_pydantic_ai_bad_tool_metadata_is_refused_before_the_run_writes(tmp_path: Path) -> None:
    from pydantic_ai import Tool

    from turnlog.integrations.pydantic_ai import TurnlogCapability

    def pay() -> str:
        return "paid"

    agent = pydantic_agent_with_tool(lambda: "x")
    agent = type(agent)(agent.model, tools=[Tool(pay, metadata={"idempotency": "readonly"})])

    async def main() -> None:
        async with TurnlogCapability(tmp_path, "p") as cap:
            with pytest.raises(UsageError, match="readonly"):
                await agent.run("pay", message_history=cap.messages(), capabilities=[cap])

    asyncio.run(main())
    assert [e.type for e in events_of(tmp_path, "p")] == ["session"]


def test_pydantic_ai_closed_capability_refuses_to_run(tmp_path: Path) -> None:
    from turnlog.integrations.pydantic_ai import TurnlogCapability

    agent = pydantic_agent_with_tool(lambda: "paid")

    async def main() -> None:
        cap = TurnlogCapability(tmp_path, "p")
        await agent.run("pay", message_history=cap.messages(), capabilities=[cap])
        await cap.close()
        with pytest.raises(UsageError, match="closed") as caught:
            await agent.run("pay", capabilities=[cap])
        assert caught.value.hint
        with turnlog.open(tmp_path, "p"):  # the writer was released
            pass

    asyncio.run(main())


_ = SessionInterruptedError


# -- OpenAI Agents SDK ------------------------------------------------------------------


def openai_agent(tool_body: Any, script: list[Any]) -> Any:
    from agents import Agent, function_tool, set_tracing_disabled
    from agents.testing import ScriptedModel

    set_tracing_disabled(True)
    tool = function_tool(tool_body, name_override="pay", failure_error_function=None)
    return Agent(name="w", model=ScriptedModel(script), tools=[tool])


def test_openai_agents_a_run_that_raised_is_closed_by_fail_run_or_by_the_next_run(
    tmp_path: Path,
) -> None:
    from agents import Runner
    from agents.exceptions import UserError
    from agents.testing import assistant_message, function_call

    from turnlog.integrations.openai_agents import TurnlogSession

    def pay() -> str:
        """Pay."""
        raise RuntimeError("card declined")

    agent = openai_agent(
        pay, [[function_call("pay", {}, call_id="c1")], [assistant_message("sorry")]]
    )

    async def main() -> None:
        async with TurnlogSession(tmp_path, "s") as session:
            with pytest.raises(UserError) as raised:
                await Runner.run(agent, "pay", session=session, hooks=session.hooks)
            # No hook of the SDK sees the failure: fail_run closes the turn
            # with what this process knows (the exception).
            await session.fail_run(raised.value)
            await Runner.run(agent, "again", session=session, hooks=session.hooks)
            # Without fail_run, the next run closes it when it saves its input,
            # as SQLiteSession would run on: never a refusal.
            with pytest.raises(UserError):
                await Runner.run(agent, "pay", session=session, hooks=session.hooks)
            await Runner.run(agent, "again", session=session, hooks=session.hooks)

    agent = openai_agent(
        pay,
        [
            [function_call("pay", {}, call_id="c1")],
            [assistant_message("sorry")],
            [function_call("pay", {}, call_id="c2")],
            [assistant_message("sorry")],
        ],
    )
    asyncio.run(main())
    assert turn_ends(tmp_path, "s") == ["error", "complete", "error", "complete"]
    failed = results(tmp_path, "s")["c1"]
    assert failed.rule == "U1" and "card declined" in ev.content_text(failed.content)
    unseen = results(tmp_path, "s")["c2"]
    assert unseen.rule == "U1" and "without its final answer" in ev.content_text(unseen.content)
    users = [
        ev.content_text(e.data.content)
        for e in events_of(tmp_path, "s")
        if isinstance(e.data, ev.UserMessage)
    ]
    assert users == ["pay", "again", "pay", "again"]
    exports_valid(tmp_path, "s")


def test_openai_agents_leaving_the_block_with_the_error_closes_the_turn(tmp_path: Path) -> None:
    from agents import Runner
    from agents.exceptions import UserError
    from agents.testing import function_call

    from turnlog.integrations.openai_agents import TurnlogSession

    def pay() -> str:
        """Pay."""
        raise RuntimeError("card declined")

    agent = openai_agent(pay, [[function_call("pay", {}, call_id="c1")]])

    async def main() -> None:
        async with TurnlogSession(tmp_path, "s") as session:
            await Runner.run(agent, "pay", session=session, hooks=session.hooks)

    with pytest.raises(UserError):
        asyncio.run(main())
    assert turn_ends(tmp_path, "s") == ["error"]
    assert turnlog.inspect(tmp_path, "s").status != "interrupted"

    async def again() -> None:  # a new handle is not refused
        async with TurnlogSession(tmp_path, "s") as session:
            # What the SDK saved, as SQLiteSession holds it: the run's input
            # (the call and its unwound answer stay in the log).
            assert await session.get_items() == [{"content": "pay", "role": "user"}]

    asyncio.run(again())
    exports_valid(tmp_path, "s")


def test_openai_agents_handles_on_one_session_agree_on_hidden_items(tmp_path: Path) -> None:
    from turnlog.integrations.openai_agents import TurnlogSession

    async def main() -> None:
        async with TurnlogSession(tmp_path, "s") as one, TurnlogSession(tmp_path, "s") as two:
            await one.add_items(
                [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]
            )
            assert len(await two.get_items()) == 2
            await one.pop_item()
            assert len(await two.get_items()) == 1
            await two.clear_session()
            assert await one.get_items() == []

    asyncio.run(main())


def test_openai_agents_closed_session_is_a_usage_error(tmp_path: Path) -> None:
    from turnlog.integrations.openai_agents import TurnlogSession

    async def main() -> None:
        session = TurnlogSession(tmp_path, "s")
        await session.close()
        with pytest.raises(UsageError, match="closed") as caught:
            await session.get_items()
        assert caught.value.hint
        with pytest.raises(UsageError, match="closed"):
            await session.add_items([{"role": "user", "content": "a"}])

    asyncio.run(main())


# -- Google ADK -------------------------------------------------------------------------


def adk_runner(sessions: Any, tools: list[Any]) -> Any:
    """A runner whose model asks for every tool at once, then says "done"."""
    from collections.abc import AsyncGenerator

    from google.adk.agents import LlmAgent
    from google.adk.apps import App
    from google.adk.models.base_llm import BaseLlm
    from google.adk.models.llm_request import LlmRequest
    from google.adk.models.llm_response import LlmResponse
    from google.adk.runners import Runner
    from google.genai import types

    names = [tool.__name__ for tool in tools]

    class Scripted(BaseLlm):
        model: str = "scripted"

        async def generate_content_async(
            self, llm_request: LlmRequest, stream: bool = False
        ) -> AsyncGenerator[LlmResponse, None]:
            last = llm_request.contents[-1]
            if any(p.function_response for p in last.parts or []):
                yield LlmResponse(
                    content=types.Content(role="model", parts=[types.Part(text="ok")])
                )
                return
            n = sum(1 for c in llm_request.contents if c.role == "user")
            parts = [
                types.Part(function_call=types.FunctionCall(id=f"{name}{n}", name=name, args={}))
                for name in names
            ]
            yield LlmResponse(content=types.Content(role="model", parts=parts))

    agent = LlmAgent(name="a", model=Scripted(), tools=tools)
    return Runner(
        app=App(name="app", root_agent=agent, plugins=[sessions.plugin]), session_service=sessions
    )


async def adk_say(runner: Any, text: str) -> None:
    from google.genai import types

    message = types.Content(role="user", parts=[types.Part(text=text)])
    async for _ in runner.run_async(user_id="u", session_id="s", new_message=message):
        pass


def test_adk_a_run_that_raises_closes_its_turn_and_a_cut_off_call_is_outcome_unknown(
    tmp_path: Path,
) -> None:
    from turnlog.integrations.adk import TurnlogSessionService

    async def boom() -> str:
        """Boom."""
        await asyncio.sleep(0.05)
        raise RuntimeError("exploded")

    async def slow() -> str:
        """Slow."""
        await asyncio.sleep(30)
        return "slow done"

    async def main() -> None:
        async with TurnlogSessionService(tmp_path) as sessions:
            runner = adk_runner(sessions, [boom, slow])
            await sessions.create_session(app_name="app", user_id="u", session_id="s")
            for text in ("one", "two"):
                with pytest.raises(RuntimeError, match="exploded"):
                    await adk_say(runner, text)

    asyncio.run(main())
    assert turn_ends(tmp_path, "s") == ["error", "error"]
    got = results(tmp_path, "s")
    assert got["boom1"].risk is None and "exploded" in ev.content_text(got["boom1"].content)
    assert got["slow1"].risk == "tool_outcome_unknown" and got["slow1"].rule == "U1"
    exports_valid(tmp_path, "s")


def test_adk_a_cancelled_run_refuses_the_next_until_it_is_closed(tmp_path: Path) -> None:
    """ADK reports no cancelled run to its plugins: the next run is refused,
    with what to do, and `fail_run` closes the turn with what ended it."""
    from turnlog.integrations.adk import TurnlogSessionService

    started = asyncio.Event()

    async def slow() -> str:
        """Slow."""
        if not started.is_set():
            started.set()
            await asyncio.sleep(30)
        return "slow done"

    async def main() -> None:
        async with TurnlogSessionService(tmp_path) as sessions:
            runner = adk_runner(sessions, [slow])
            await sessions.create_session(app_name="app", user_id="u", session_id="s")
            task = asyncio.create_task(adk_say(runner, "one"))
            await started.wait()
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            with pytest.raises(SessionInterruptedError) as refused:
                await adk_say(runner, "two")
            assert "fail_run" in (refused.value.hint or "")
            await sessions.fail_run("s", asyncio.CancelledError())
            await adk_say(runner, "three")

    asyncio.run(main())
    assert turn_ends(tmp_path, "s") == ["cancelled", "complete"]
    assert results(tmp_path, "s")["slow1"].rule == "U1"
    users = [
        ev.content_text(e.data.content)
        for e in events_of(tmp_path, "s")
        if isinstance(e.data, ev.UserMessage)
    ]
    assert users == ["one", "three"]
    exports_valid(tmp_path, "s")


def test_adk_a_run_ended_unseen_refuses_the_next_until_it_is_closed(tmp_path: Path) -> None:
    """Without the plugin no callback reports a failed run: the next run is
    refused, with what to do, until `fail_run` closes the turn."""
    from google.adk.events.event import Event as AdkEvent
    from google.genai import types

    from turnlog.integrations.adk import TurnlogSessionService

    def said(invocation: str, text: str) -> Any:
        return AdkEvent(
            author="user",
            invocation_id=invocation,
            content=types.Content(role="user", parts=[types.Part(text=text)]),
        )

    async def main() -> None:
        async with TurnlogSessionService(tmp_path) as sessions:
            session = await sessions.create_session(app_name="app", user_id="u", session_id="s")
            await sessions.append_event(session, said("i1", "one"))
            call = types.Part(function_call=types.FunctionCall(id="c1", name="pay", args={}))
            asked = AdkEvent(
                author="a", invocation_id="i1", content=types.Content(role="model", parts=[call])
            )
            await sessions.append_event(session, asked)
            with pytest.raises(SessionInterruptedError) as refused:
                await sessions.append_event(session, said("i2", "two"))
            assert "fail_run" in (refused.value.hint or "")
            await sessions.fail_run("s", RuntimeError("gone"))
            await sessions.append_event(session, said("i2", "two"))

    asyncio.run(main())
    assert turn_ends(tmp_path, "s") == ["error"]
    assert results(tmp_path, "s")["c1"].rule == "U1"  # without the plugin: dispatched
    exports_valid(tmp_path, "s")


# -- LangGraph --------------------------------------------------------------------------


def langgraph_app(wrapper: Any, *, metadata: dict[str, Any] | None = None) -> Any:
    """A graph whose model asks for one charge, then answers "charged"."""
    import sqlite3

    from langchain_core.messages import AIMessage, ToolMessage
    from langchain_core.tools import tool
    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.graph import START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode, tools_condition

    @tool
    def charge(amount: int) -> str:
        """Charge the card."""
        return f"charged {amount}"

    charge.metadata = metadata

    def model(state: Any) -> dict[str, Any]:
        if isinstance(state["messages"][-1], ToolMessage):
            return {"messages": [AIMessage(content="charged")]}
        calls = [{"id": "c1", "name": "charge", "args": {"amount": 1}}]
        return {"messages": [AIMessage(content="", tool_calls=calls)]}

    graph = StateGraph(MessagesState)
    graph.add_node("agent", model)
    graph.add_node("tools", ToolNode([charge], wrap_tool_call=wrapper))
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition)
    graph.add_edge("tools", "agent")
    saver = SqliteSaver(sqlite3.connect(":memory:", check_same_thread=False))
    return graph.compile(checkpointer=saver)


def test_langgraph_wrappers_on_one_session_record_each_message_once(tmp_path: Path) -> None:
    from langchain_core.messages import HumanMessage

    from turnlog.integrations.langgraph import TurnlogToolWrapper

    config: Any = {"configurable": {"thread_id": "t"}}
    with TurnlogToolWrapper(tmp_path, "t") as one, TurnlogToolWrapper(tmp_path, "t") as two:
        app = langgraph_app(one)
        out = app.invoke({"messages": [HumanMessage("charge")]}, config)
        two.finish(out)
        one.finish(out)
    with turnlog.open(tmp_path, "t") as log:
        roles = [m.role for m in log.messages]
    assert roles == ["user", "assistant", "tool", "assistant"]
    assert turn_ends(tmp_path, "t") == ["complete"]
    exports_valid(tmp_path, "t")


def test_langgraph_bad_tool_metadata_is_refused_before_the_request_is_written(
    tmp_path: Path,
) -> None:
    from langchain_core.messages import HumanMessage

    from turnlog.integrations.langgraph import TurnlogToolWrapper

    config: Any = {"configurable": {"thread_id": "t"}}
    with TurnlogToolWrapper(tmp_path, "t") as tools:
        app = langgraph_app(tools, metadata={"idempotency": "readonly"})
        with pytest.raises(UsageError, match="readonly"):
            app.invoke({"messages": [HumanMessage("charge")]}, config)
    assert [e.type for e in events_of(tmp_path, "t")] == ["session"]
    assert turnlog.inspect(tmp_path, "t").status != "interrupted"


def test_adk_service_lists_no_deleted_session_and_shares_app_and_user_state(
    tmp_path: Path,
) -> None:
    """As ADK's own session services: a deleted session is not listed, and
    `app:` keys are shared by the app's sessions, `user:` keys by the user's."""
    from google.adk.events.event import Event as AdkEvent
    from google.adk.events.event_actions import EventActions
    from google.genai import types

    from turnlog.integrations.adk import TurnlogSessionService

    async def main() -> None:
        async with TurnlogSessionService(tmp_path) as sessions:
            first = await sessions.create_session(app_name="app", user_id="u", session_id="a")
            await sessions.create_session(app_name="app", user_id="u", session_id="b")
            await sessions.create_session(app_name="app", user_id="v", session_id="c")
            said = AdkEvent(
                author="user",
                invocation_id="i1",
                content=types.Content(role="user", parts=[types.Part(text="hi")]),
                actions=EventActions(
                    state_delta={"app:theme": "dark", "user:name": "Ann", "mine": 1}
                ),
            )
            await sessions.append_event(first, said)
        async with TurnlogSessionService(tmp_path) as sessions:
            b = await sessions.get_session(app_name="app", user_id="u", session_id="b")
            c = await sessions.get_session(app_name="app", user_id="v", session_id="c")
            assert b is not None and c is not None
            assert b.state == {"app:theme": "dark", "user:name": "Ann"}
            assert c.state == {"app:theme": "dark"}
            await sessions.delete_session(app_name="app", user_id="u", session_id="b")
            listed = await sessions.list_sessions(app_name="app", user_id="u")
            assert [s.id for s in listed.sessions] == ["a"]

    asyncio.run(main())


# -- the revival cap --------------------------------------------------------------------


def test_a_handle_past_the_revival_cap_warns_and_recovers(tmp_path: Path) -> None:
    from turnlog.integrations.kit.runs import RevivalCapWarning
    from turnlog.integrations.pydantic_ai import TurnlogCapability

    def crash() -> None:
        with turnlog.open(tmp_path, "p") as log:
            log.append(log.next_turn_start())  # closed with the turn open: a crash

    for _ in range(3):
        crash()
        with turnlog.open(tmp_path, "p", revive=True):
            pass
    crash()

    async def main() -> None:
        with pytest.warns(RevivalCapWarning, match="revival cap"):
            async with TurnlogCapability(tmp_path, "p", revive=True):
                pass

    asyncio.run(main())
    found = turnlog.inspect(tmp_path, "p")
    assert found.revivals == 3 and found.status != "interrupted"
