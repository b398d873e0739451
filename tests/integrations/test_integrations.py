"""The integrations under the real frameworks, offline, with their own scripted
models: SIGKILL inside a tool, then inspect, recover and resume in fresh
processes; the tool ran once. And the same crash without turnlog, for contrast."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import forkserver
from entry_point import cli
from paths import SUPPORT
from turnlog.providers import PROVIDERS

PROGRAM = str(SUPPORT / "framework_program.py")
FRAMEWORKS = ["openai-agents", "pydantic-ai", "langgraph", "adk"]
SIGKILLED = -9
FINAL = "all charges settled"


def program(*args: str, kill_at: int | None = None) -> subprocess.CompletedProcess[str]:
    env = {"KILL_AT": str(kill_at)} if kill_at is not None else {}
    return forkserver.run(
        [sys.executable, PROGRAM, *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **env, "OPENAI_AGENTS_DISABLE_TRACING": "1"},
    )


def ran(side: Path) -> list[int]:
    return [int(line) for line in side.read_text().split()] if side.exists() else []


@pytest.mark.parametrize("command", ["recover", "revive", "sweep"])
@pytest.mark.parametrize("parallel", [False, True], ids=["one call", "parallel calls"])
@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_killed_mid_tool_then_recovered_and_resumed(
    tmp_path: Path, framework: str, parallel: bool, command: str
) -> None:
    """Killed inside the tool; `turnlog recover` (or `turnlog revive`, or a
    `turnlog sweep` of the store) from a shell; the same program resumed on
    the same session."""
    store, side = tmp_path / "store", tmp_path / "side"
    flags = ["--parallel"] if parallel else []
    killed_in = 2 if parallel else 1
    died = program(framework, "run", str(store), str(side), *flags, kill_at=killed_in)
    assert died.returncode == SIGKILLED, died.stderr
    session = str(store / "run-1.jsonl")
    # Killed inside its charge. With parallel calls the other charge may or
    # may not have run by then: the threads race, and either is honest.
    before = ran(side)
    assert killed_in in before and len(set(before)) == len(before)

    code, out, _ = cli("inspect", session, "--json")
    found = json.loads(out)
    assert code == 0 and found["status"] == "interrupted"
    owed = {c["call_id"]: c["risk"] for c in found["owed_calls"]}
    killed_call = f"call_1_{killed_in}"
    assert owed[killed_call] == "tool_outcome_unknown"  # dispatched: it may have run
    assert set(owed) <= {"call_1_1", "call_1_2"}

    if command == "recover":
        code, out, _ = cli("recover", session, "--json")
        appended = json.loads(out)["appended"]
        results = [e for e in appended if e["type"] == "tool_result"]
        assert code == 0 and [r["data"]["call_id"] for r in results] == list(owed)
        code, out, _ = cli("recover", session, "--json")
        assert json.loads(out)["appended"] == []  # a second recover appends nothing
    elif command == "sweep":
        code, out, err = cli("sweep", "--store", str(store), "--json")
        swept = json.loads(out)["sessions"]
        assert code == 0 and [(s["session_id"], s["action"]) for s in swept] == [
            ("run-1", "recovered")
        ], (out, err)
    else:
        code, out, err = cli("revive", session)
        assert code == 0, (out, err)

    resumed = program(framework, "resume", str(store), str(side), *flags)
    assert resumed.returncode == 0, resumed.stderr
    seen = json.loads(resumed.stdout.strip().splitlines()[-1])
    assert seen["final"] == FINAL
    # The model's input on resume holds each call and its result, same ids.
    expected = [f"call_1_{a}" for a in ([1, 2] if parallel else [1])]
    assert seen["calls"] == expected and sorted(seen["outputs"]) == expected
    assert seen["notice"] is (command == "revive")  # the model is told only when revived
    # Resuming runs no charge again: each call the kill left owed was answered.
    assert ran(side) == before

    for provider in PROVIDERS:
        code, out, _ = cli("export", session, "--to", provider, "--validate")
        assert code == 0, (provider, out)
    code, out, _ = cli("inspect", session, "--json")
    assert json.loads(out)["status"] == "finished"


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_without_turnlog_the_same_crash_charges_twice(tmp_path: Path, framework: str) -> None:
    """The failure the integration exists for: the framework's own persistence
    resumes without the call, or re-runs the tool."""
    store, side = tmp_path / "store", tmp_path / "side"
    died = program(framework, "plain-run", str(store), str(side), kill_at=1)
    assert died.returncode == SIGKILLED, died.stderr
    resumed = program(framework, "plain-resume", str(store), str(side))
    assert resumed.returncode == 0, resumed.stderr
    assert ran(side) == [1, 1]
    if framework in ("openai-agents", "adk"):
        # The Agents SDK saved only the user message; ADK saved the call and
        # drops it from the model's input, since nothing answered it. Either
        # way the model never saw the call.
        seen = json.loads(resumed.stdout.strip().splitlines()[-1])
        assert seen["calls"] == [] and seen["outputs"] == []


# -- in-process contracts ---------------------------------------------------------------


def test_openai_agents_items_are_not_written_twice_and_pop_hides_without_deleting(
    tmp_path: Path,
) -> None:
    import asyncio

    from agents import Agent, Runner, function_tool, set_tracing_disabled
    from agents.testing import ScriptedModel, assistant_message, function_call

    from turnlog import events as ev
    from turnlog.integrations.openai_agents import TurnlogSession
    from turnlog.stores import JSONLStore

    @function_tool
    def lookup(city: str) -> str:
        """Look up the weather."""
        return f"{city}: 3C"

    model = ScriptedModel(
        [
            [function_call("lookup", {"city": "Oslo"}, call_id="c1")],
            [assistant_message("It is 3C.", item_id="msg_final")],
        ]
    )
    agent = Agent(name="w", model=model, tools=[lookup])
    set_tracing_disabled(True)  # no network, no trace export

    async def main() -> list[dict[str, object]]:
        session = TurnlogSession(tmp_path, "w")
        await Runner.run(agent, "Weather?", session=session, hooks=session.hooks)
        items = await session.get_items()
        before = (tmp_path / "w.jsonl").read_bytes()
        popped = await session.pop_item()
        assert popped == items[-1]
        assert await session.get_items() == items[:-1]
        assert await session.get_items(limit=1) == items[-2:-1]
        # A handle opened later reads the hiding back from the log, in the pass
        # that reads its transcript.
        await session.close()
        session = TurnlogSession(tmp_path, "w")
        assert await session.get_items() == items[:-1]
        await session.clear_session()
        assert await session.get_items() == []
        await session.close()
        async with TurnlogSession(tmp_path, "w") as reopened:
            assert await reopened.get_items() == []
        after = (tmp_path / "w.jsonl").read_bytes()
        assert after.startswith(before)  # nothing deleted: hiding appends
        return items

    items = asyncio.run(main())
    kinds = [i.get("type", "message") for i in items]
    assert kinds == ["message", "function_call", "function_call_output", "message"]
    events = JSONLStore(tmp_path).read("w")
    assert sum(isinstance(e.data, ev.AssistantMessage) for e in events) == 2
    assert sum(isinstance(e.data, ev.ToolResult) for e in events) == 1
    assert sum(isinstance(e.data, ev.UserMessage) for e in events) == 1


def test_pydantic_ai_messages_round_trip_thinking_and_tool_returns(tmp_path: Path) -> None:
    from pydantic_ai import messages as pm

    import turnlog
    from turnlog.integrations.pydantic_ai import to_model_messages

    with turnlog.open(tmp_path, "p") as log:
        log.user("Weather?")
        with log.turn(), log.step():
            thinking = {"type": "thinking", "thinking": "Use the tool.", "signature": "sig=="}
            call = turnlog.ToolCall(id="c1", name="weather", arguments={"city": "Oslo"})
            log.assistant([thinking], [call])
            with log.dispatch(call) as running:
                running.result("3C")
        messages = to_model_messages(log.messages)
    request, response, answer = messages
    assert isinstance(request, pm.ModelRequest) and isinstance(response, pm.ModelResponse)
    think, tool_call = response.parts
    assert isinstance(think, pm.ThinkingPart) and think.signature == "sig=="
    assert isinstance(tool_call, pm.ToolCallPart) and tool_call.tool_call_id == "c1"
    (returned,) = answer.parts
    assert isinstance(returned, pm.ToolReturnPart)
    assert (returned.tool_call_id, returned.tool_name, returned.content) == ("c1", "weather", "3C")


def test_langgraph_async_tool_node_writes_ahead(tmp_path: Path) -> None:
    import asyncio
    from typing import Annotated, Any, TypedDict

    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
    from langchain_core.tools import tool
    from langgraph.graph import START, StateGraph
    from langgraph.graph.message import add_messages
    from langgraph.prebuilt import ToolNode, tools_condition

    import turnlog
    from turnlog.integrations.langgraph import TurnlogToolWrapper

    @tool
    async def weather(city: str) -> str:
        """Weather in a city."""
        return f"{city}: 3C"

    def model(state: Any) -> dict[str, Any]:
        if any(isinstance(m, ToolMessage) for m in state["messages"]):
            return {"messages": [AIMessage(content="3C in both.")]}
        calls = [
            {"id": "a", "name": "weather", "args": {"city": "Oslo"}},
            {"id": "b", "name": "weather", "args": {"city": "Bergen"}},
        ]
        return {"messages": [AIMessage(content="", tool_calls=calls)]}

    State = TypedDict("State", {"messages": Annotated[list[Any], add_messages]})  # noqa: UP013 - annotations here are strings (future import); this form is evaluated
    wrapper = TurnlogToolWrapper(tmp_path, "lg")
    graph = StateGraph(State)
    graph.add_node("agent", model)
    graph.add_node("tools", ToolNode([weather], awrap_tool_call=wrapper.awrap))
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition)
    graph.add_edge("tools", "agent")
    out = asyncio.run(graph.compile().ainvoke({"messages": [HumanMessage("Weather?")]}))
    wrapper.finish(out)
    wrapper.close()
    found = turnlog.inspect(tmp_path, "lg")
    assert found.status == "finished"
    events = turnlog.JSONLStore(tmp_path).read("lg")
    kinds = [
        e.type for e in events if e.type in ("assistant_message", "tool_dispatch", "tool_result")
    ]
    assert kinds.count("assistant_message") == 2  # the request, once; the answer
    assert kinds.count("tool_dispatch") == 2 and kinds.count("tool_result") == 2
    assert turnlog.verify.verify_session(tmp_path, "lg").ok


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_resuming_before_recovery_is_refused_with_a_hint(tmp_path: Path, framework: str) -> None:
    store, side = tmp_path / "store", tmp_path / "side"
    program(framework, "run", str(store), str(side), kill_at=1)
    before = (store / "run-1.jsonl").read_bytes()
    resumed = program(framework, "resume-unrecovered", str(store), str(side))
    assert resumed.returncode != 0
    assert "SessionInterruptedError" in resumed.stderr and "turnlog recover" in resumed.stderr
    assert (store / "run-1.jsonl").read_bytes() == before
    assert ran(side) == [1]


def test_langgraph_killed_after_the_checkpoint_before_the_tools(tmp_path: Path) -> None:
    """The crash hit after LangGraph saved the model's tool calls, before any
    reached the wrapper: turnlog never saw them. Recovering the thread answers
    them `tool_not_started` (they provably never started: the wrapper dispatches
    before every tool) instead of leaving an unanswered AIMessage, and the
    next step is the model. Nothing ran, and nothing runs twice."""
    store, side = tmp_path / "store", tmp_path / "side"
    env = {**os.environ, "KILL_AFTER_CHECKPOINT": "1"}
    died = forkserver.run(
        [sys.executable, PROGRAM, "langgraph", "run", str(store), str(side), "--parallel"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert died.returncode == SIGKILLED, died.stderr
    session = str(store / "run-1.jsonl")
    code, out, _ = cli("inspect", session, "--json")
    assert json.loads(out)["owed_calls"] == []  # turnlog holds nothing of the step

    resumed = program("langgraph", "resume", str(store), str(side), "--parallel")
    assert resumed.returncode == 0, resumed.stderr
    seen = json.loads(resumed.stdout.strip().splitlines()[-1])
    assert seen["final"] == FINAL
    assert seen["calls"] == ["call_1_1", "call_1_2"] and seen["outputs"] == seen["calls"]
    assert ran(side) == []
    code, out, _ = cli("show", session, "--json")
    results = [e for e in json.loads(out)["events"] if e["type"] == "tool_result"]
    assert [(r["data"]["call_id"], r["data"]["risk"]) for r in results] == [
        ("call_1_1", "tool_not_started"),
        ("call_1_2", "tool_not_started"),
    ]
    for provider in PROVIDERS:
        code, out, _ = cli("export", session, "--to", provider, "--validate")
        assert code == 0, (provider, out)


def test_the_history_check_takes_a_steps_results_in_any_order() -> None:
    """Parallel calls finish in any order: the log keeps the order they
    finished in, a framework often hands them back in the order asked."""
    import warnings as warnings_module

    import turnlog
    from turnlog.integrations.kit.history import HistoryMismatchWarning, check_history
    from turnlog.stores import MemoryStore

    calls = [turnlog.ToolCall(id="a", name="t"), turnlog.ToolCall(id="b", name="t")]
    with turnlog.open(MemoryStore(), "s", create=True) as log:
        log.user("go")
        with log.turn(), log.step():
            log.assistant("", calls)
            first, second = log.begin_dispatch(calls[0]), log.begin_dispatch(calls[1])
            second.result("b done")
            first.result("a done")
        given = [("user", ()), ("assistant", ("a", "b")), ("tool", ("a",)), ("tool", ("b",))]
        with warnings_module.catch_warnings():
            warnings_module.simplefilter("error", HistoryMismatchWarning)
            check_history(log, given, "warn", what="the history")
        with pytest.warns(HistoryMismatchWarning):
            check_history(log, [*given[:2], ("tool", ("c",))], "warn", what="the history")
