"""No framework runs a call the log has answered: a process killed after its tool's
effect, the session repaired from outside (`turnlog recover`, `turnlog sweep`,
`turnlog.sweeper.sweep`), then resumed the framework's own way in a new process
(LangGraph's `invoke(None)` or `Command(resume=...)`, Pydantic AI on the history
the app saved, the Agents SDK on its session or a saved `RunState`, ADK on its
session): the ledger the tool writes shows every charge once. The framework is
handed the recorded answer, or the run is refused with a hint and nothing runs."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import forkserver
import turnlog
from entry_point import cli
from paths import SUPPORT
from turnlog.providers import PROVIDERS

PROGRAM = str(SUPPORT / "framework_program.py")
SIGKILLED = -9
FINAL = "all charges settled"
SWEEP = (
    "import json, sys\n"
    "from turnlog.stores import open_store\n"
    "from turnlog.sweeper import sweep\n"
    "store, _ = open_store(sys.argv[1])\n"
    "print(json.dumps([s.action for s in sweep(store)]))\n"
)
# Each framework's own way to carry on after a crash, without turnlog's repair
# in the program: the session was repaired from outside.
OWN_RESUME = {
    "openai-agents": "resume",  # Runner.run(agent, "continue", session=session)
    "pydantic-ai": "resume-own-history",  # agent.run(None, message_history=saved)
    "langgraph": "resume-unrecovered",  # graph.invoke(None, config)
    "adk": "resume",  # runner.run_async(..., new_message="continue")
}


def program(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return forkserver.run(
        [sys.executable, PROGRAM, *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **env, "OPENAI_AGENTS_DISABLE_TRACING": "1"},
    )


def last_json(done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    found: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return found


def ledger(side: Path) -> list[int]:
    return [int(line) for line in side.read_text().split()] if side.exists() else []


def repair(how: str, store: Path) -> None:
    """Repair the crashed session from outside the agent's process."""
    if how == "turnlog recover":
        code, out, err = cli("recover", str(store / "run-1.jsonl"))
    elif how == "turnlog sweep":
        code, out, err = cli("sweep", "--store", str(store))
    else:
        done = forkserver.run(
            [sys.executable, "-c", SWEEP, str(store)], capture_output=True, text=True, timeout=120
        )
        code, out, err = done.returncode, done.stdout, done.stderr
        assert json.loads(out) == ["recovered"], (out, err)
    assert code == 0, (out, err)
    assert turnlog.inspect(store, "run-1").status != "interrupted"


def finished_and_valid(store: Path) -> None:
    session = str(store / "run-1.jsonl")
    code, out, _ = cli("inspect", session, "--json")
    assert json.loads(out)["status"] == "finished"
    for provider in PROVIDERS:
        code, out, _ = cli("export", session, "--to", provider, "--validate")
        assert code == 0, (provider, out)


REPAIRS = ["turnlog recover", "turnlog sweep", "sweeper.sweep"]


@pytest.mark.parametrize("how", REPAIRS)
@pytest.mark.parametrize("framework", list(OWN_RESUME))
def test_repaired_from_outside_then_resumed_the_frameworks_way_runs_nothing_again(
    tmp_path: Path, framework: str, how: str
) -> None:
    """Killed inside the first of two parallel charges, after its effect. The
    repair answers the killed call outcome unknown (and the other one by what
    the log shows); the framework's own resume hands the model both answers
    under the original ids, and no charge runs again."""
    store, side = tmp_path / "store", tmp_path / "side"
    died = program(framework, "run", str(store), str(side), "--parallel", KILL_AT="1")
    assert died.returncode == SIGKILLED, died.stderr
    before = ledger(side)
    assert 1 in before and len(set(before)) == len(before)

    repair(how, store)
    resumed = program(framework, OWN_RESUME[framework], str(store), str(side), "--parallel")
    assert resumed.returncode == 0, resumed.stderr
    seen = last_json(resumed)
    assert seen["final"] == FINAL
    # The model's input on resume holds each call and an answer, same ids.
    assert seen["calls"] == ["call_1_1", "call_1_2"]
    assert sorted(seen["outputs"]) == seen["calls"]
    assert ledger(side) == before  # resuming ran no charge
    finished_and_valid(store)


@pytest.mark.parametrize("how", ["turnlog recover", "turnlog sweep"])
def test_langgraph_an_approval_resumed_after_a_crash_charges_once(tmp_path: Path, how: str) -> None:
    """`interrupt()` inside the tool. The run pauses and its process ends; a
    sweep (or recover) from a shell; the approval resumes with
    `Command(resume=True)` in a new process and is killed after the charge; the
    shell repairs again; the same `Command(resume=True)` once more. LangGraph
    re-runs the tool step each time: the charge ran once, and the last resume
    hands the model the recorded answer."""
    store, side = tmp_path / "store", tmp_path / "side"
    paused = program("langgraph", "run", str(store), str(side), APPROVAL="1")
    assert paused.returncode == 0, paused.stderr
    assert last_json(paused) == {"paused": ["call_1_1"]}
    assert ledger(side) == []
    # The pause is no crash of the call: repairing it settles nothing.
    repair(how, store)

    died = program("langgraph", "approve", str(store), str(side), APPROVAL="1", KILL_AT="1")
    assert died.returncode == SIGKILLED, died.stderr
    assert ledger(side) == [1]
    repair(how, store)

    resumed = program("langgraph", "approve", str(store), str(side), APPROVAL="1")
    assert resumed.returncode == 0, resumed.stderr
    seen = last_json(resumed)
    assert seen["final"] == FINAL and seen["outputs"] == ["call_1_1"]
    assert ledger(side) == [1]
    finished_and_valid(store)


def test_langgraph_revived_from_the_shell_resumes_with_the_notice(tmp_path: Path) -> None:
    """`turnlog revive` from a shell, then LangGraph's own `invoke(None)`: the
    tool step is handed the recorded answers and the resume notice after them,
    as `recover_thread(revive=True)` would write them; nothing runs again."""
    store, side = tmp_path / "store", tmp_path / "side"
    died = program("langgraph", "run", str(store), str(side), "--parallel", KILL_AT="1")
    assert died.returncode == SIGKILLED, died.stderr
    before = ledger(side)
    code, out, err = cli("revive", str(store / "run-1.jsonl"))
    assert code == 0, (out, err)

    resumed = program("langgraph", "resume-unrecovered", str(store), str(side), "--parallel")
    assert resumed.returncode == 0, resumed.stderr
    assert "HistoryMismatchWarning" not in resumed.stderr
    seen = last_json(resumed)
    assert seen["final"] == FINAL and sorted(seen["outputs"]) == ["call_1_1", "call_1_2"]
    assert seen["notice"] is True
    assert ledger(side) == before
    finished_and_valid(store)
    shown = turnlog.JSONLStore(store).read("run-1")
    notices = [e for e in shown if isinstance(e.data, turnlog.events.UserMessage)]
    assert [e.data.injected for e in notices] == [None, "revival"]


def test_openai_agents_a_run_state_resumed_after_a_sweep_runs_the_approved_call_once(
    tmp_path: Path,
) -> None:
    """The SDK's approval flow: `needs_approval` stops the run and its process
    ends. The log says the call waits for approval, so a sweep leaves the
    session byte for byte, and the approved `RunState` resumed in a new
    process runs the call once."""
    store, side = tmp_path / "store", tmp_path / "side"
    paused = program("openai-agents", "run", str(store), str(side), APPROVAL="1")
    assert paused.returncode == 0, paused.stderr
    assert last_json(paused) == {"paused": ["call_1_1"]}
    before = (store / "run-1.jsonl").read_bytes()
    repair("turnlog sweep", store)
    assert (store / "run-1.jsonl").read_bytes() == before
    assert turnlog.inspect(store / "run-1.jsonl").status == "paused"

    approved = program("openai-agents", "approve", str(store), str(side), APPROVAL="1")
    assert approved.returncode == 0, approved.stderr
    assert len(ledger(side)) == 1  # charged once


def test_openai_agents_a_decision_outside_the_run_state_is_refused_with_a_hint(
    tmp_path: Path,
) -> None:
    """The pause's decision lives in the SDK's `RunState`: a rejection from
    the command line could not stop a resume of an approved `RunState` (run
    without the hooks, it runs the tool unseen), so it is refused with a
    hint and nothing is written; the approved `RunState` then runs the call
    once."""
    store, side = tmp_path / "store", tmp_path / "side"
    paused = program("openai-agents", "run", str(store), str(side), APPROVAL="1")
    assert paused.returncode == 0, paused.stderr
    before = (store / "run-1.jsonl").read_bytes()
    reject = ["reject", str(store / "run-1.jsonl"), "call_1_1", "--by", "alice"]
    rejected = forkserver.run(
        [sys.executable, "-m", "turnlog", *reject],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert rejected.returncode != 0
    assert "waits for a decision kept in the Agents SDK's RunState" in rejected.stderr
    assert "hint: decide it there" in rejected.stderr
    assert (store / "run-1.jsonl").read_bytes() == before

    approved = program("openai-agents", "approve", str(store), str(side), APPROVAL="1")
    assert approved.returncode == 0, approved.stderr
    assert len(ledger(side)) == 1  # charged once


# -- in one process ---------------------------------------------------------------------


def test_langgraph_an_approval_in_the_same_process_runs_once_and_reused_ids_are_new_calls(
    tmp_path: Path,
) -> None:
    """`interrupt()` inside the tool, approved with `Command(resume=True)` in the
    same process: the wrapper records the pause as the call stopped mid-run,
    not as its answer, so the approved run dispatches it and it runs once. A
    later turn whose model reuses the call id is a new request, and runs."""
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
    from langchain_core.tools import tool
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.graph import START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode, tools_condition
    from langgraph.types import Command, interrupt

    from turnlog.integrations.langgraph import TurnlogToolWrapper

    ran: list[int] = []

    @tool
    def charge(amount: int) -> str:
        """Charge the card."""
        if not interrupt({"approve": amount}):
            return "declined"
        ran.append(amount)
        return f"charged {amount}"

    def model(state: Any) -> dict[str, Any]:
        last = state["messages"][-1]
        if isinstance(last, ToolMessage):
            return {"messages": [AIMessage(content=f"done: {last.content}")]}
        amount = len(ran) + 1
        call = {"id": "call_0", "name": "charge", "args": {"amount": amount}}
        return {"messages": [AIMessage(content="", tool_calls=[call])]}

    with TurnlogToolWrapper(tmp_path, "lg") as tools:
        graph = StateGraph(MessagesState)
        graph.add_node("agent", model)
        graph.add_node("tools", ToolNode([charge], wrap_tool_call=tools))
        graph.add_edge(START, "agent")
        graph.add_conditional_edges("agent", tools_condition)
        graph.add_edge("tools", "agent")
        app = graph.compile(checkpointer=InMemorySaver())
        config: Any = {"configurable": {"thread_id": "lg"}}
        for words in ("charge once", "charge again"):
            out = app.invoke({"messages": [HumanMessage(words)]}, config)
            assert "__interrupt__" in out
            out = app.invoke(Command(resume=True), config)
            tools.finish(out)
    assert ran == [1, 2]
    assert out["messages"][-1].content == "done: charged 2"
    assert turnlog.inspect(tmp_path, "lg").status == "finished"
    events = turnlog.JSONLStore(tmp_path).read("lg")
    results = [e.data.content for e in events if isinstance(e.data, turnlog.events.ToolResult)]
    assert results[1::2] == ["charged 1", "charged 2"]  # each after its pause
    with turnlog.open(tmp_path, "lg", create=False) as log:
        messages = log.messages
    for provider in PROVIDERS:
        assert (
            turnlog.providers.validate(provider, turnlog.providers.render(provider, messages)) == []
        )


def test_adk_plugin_hands_back_the_recorded_answer_of_a_call_it_runs_again(
    tmp_path: Path,
) -> None:
    """ADK asked to run a call the log has answered (the same call, its tool
    context as ADK built it): the plugin hands ADK the recorded answer as the
    call's response, writes nothing, and the tool does not run; ADK reporting
    that answer back as the tool's result writes nothing either."""
    from collections.abc import AsyncGenerator

    from google.adk.agents import LlmAgent
    from google.adk.apps import App
    from google.adk.models.base_llm import BaseLlm
    from google.adk.models.llm_request import LlmRequest
    from google.adk.models.llm_response import LlmResponse
    from google.adk.runners import Runner
    from google.adk.tools import FunctionTool, ToolContext
    from google.genai import types

    from turnlog.integrations.adk import TurnlogSessionService

    ran: list[int] = []
    contexts: list[ToolContext] = []

    class Scripted(BaseLlm):
        model: str = "scripted"

        async def generate_content_async(
            self, llm_request: LlmRequest, stream: bool = False
        ) -> AsyncGenerator[LlmResponse, None]:
            parts = [p for c in llm_request.contents for p in (c.parts or [])]
            if any(p.function_response for p in parts):
                reply = [types.Part(text=FINAL)]
            else:
                call = types.FunctionCall(id="call_1_1", name="charge", args={"amount": 1})
                reply = [types.Part(function_call=call)]
            yield LlmResponse(content=types.Content(role="model", parts=reply))

    async def charge(amount: int, tool_context: ToolContext) -> str:
        """Charge the card."""
        ran.append(amount)
        contexts.append(tool_context)
        return f"charged {amount}"

    tool = FunctionTool(charge)

    async def main() -> tuple[Any, Any]:
        async with TurnlogSessionService(tmp_path) as sessions:
            app = App(
                name="shop",
                root_agent=LlmAgent(name="payer", model=Scripted(), tools=[tool]),
                plugins=[sessions.plugin],
            )
            runner = Runner(app=app, session_service=sessions)
            await sessions.create_session(app_name="shop", user_id="u", session_id="s")
            message = types.Content(role="user", parts=[types.Part(text="charge")])
            async for _ in runner.run_async(user_id="u", session_id="s", new_message=message):
                pass
            before = (tmp_path / "s.jsonl").read_bytes()
            args = {"amount": 1}
            again = await sessions.plugin.before_tool_callback(
                tool=tool, tool_args=args, tool_context=contexts[0]
            )
            await sessions.plugin.after_tool_callback(
                tool=tool, tool_args=args, tool_context=contexts[0], result=again
            )
            return again, before

    again, before = asyncio.run(main())
    assert again == {"result": "charged 1"}
    assert ran == [1]
    assert (tmp_path / "s.jsonl").read_bytes() == before
    assert (
        Counter(type(e.data).__name__ for e in turnlog.JSONLStore(tmp_path).read("s"))[
            "ToolDispatch"
        ]
        == 1
    )
