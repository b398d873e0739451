"""docs/integrations.md's approval flows, run as written, one process per block.

The Agents SDK's three blocks (the run pauses, a person decides on the saved
`RunState`, the run resumes), Pydantic AI's two (the run defers, the run
resumes with `deferred_tool_results`), LangGraph's two (the wrapper
interrupts, the thread resumes with `Command(resume=...)`) and ADK's two (the
gate asks its client, the client's answer resumes the run), with `turnlog
sweep --revive` over the store between them. `agent` is the reader's own; each harness supplies
one whose `charge` needs approval and writes a ledger.
"""

from __future__ import annotations

import re
import sys
import textwrap
from pathlib import Path

import pytest

import forkserver
import turnlog
from paths import ROOT
from turnlog.core.fold import Fold
from turnlog.providers import PROVIDERS, render, validate
from turnlog.stores import JSONLStore

DOC = ROOT / "docs" / "integrations.md"

CHARGE = '''
import asyncio
import os


def charge(order: int) -> str:
    """Charge the refund of an order."""
    with open("ledger.txt", "a") as ledger:
        ledger.write(f"{{order}}\\n")
        ledger.flush()
        os.fsync(ledger.fileno())
    return f"refunded order {{order}}"

'''
MAIN = """

async def main() -> None:
{body}


asyncio.run(main())
"""
AGENTS_SDK = """
from agents import Agent, function_tool, set_tracing_disabled
from agents.testing import ScriptedModel, assistant_message, function_call

set_tracing_disabled(True)
agent = Agent(
    name="support",
    model=ScriptedModel({script}),
    tools=[function_tool(charge, needs_approval=True)],
)
"""
PYDANTIC_AI = """
from pydantic_ai import Agent, DeferredToolRequests, ToolDenied
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import FunctionModel


def model(messages, info):
    returned = [p for p in messages[-1].parts if isinstance(p, ToolReturnPart)]
    if returned:
        return ModelResponse(parts=[TextPart("order 7: " + str(returned[-1].content))])
    return ModelResponse(parts=[ToolCallPart("charge", {{"order": 7}}, tool_call_id="call_1")])


agent = Agent(FunctionModel(model), output_type=[str, DeferredToolRequests])
agent.tool_plain(requires_approval=True)(charge)
"""
LANGGRAPH = """
import sqlite3

from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition


def model(state):
    answers = [m.content for m in state["messages"] if isinstance(m, ToolMessage)]
    if answers:
        said = "refunded" if "refunded" in answers[-1] else "declined"
        return {{"messages": [AIMessage(content="order 7: " + said, id="ai-final")]}}
    asks = [{{"id": "call_1", "name": "charge", "args": {{"order": 7}}}}]
    return {{"messages": [AIMessage(content="", id="ai-1", tool_calls=asks)]}}


def build_graph(tools):
    graph = StateGraph(MessagesState)
    graph.add_node("agent", model)
    graph.add_node("tools", ToolNode([tool(charge)], wrap_tool_call=tools))
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition)
    graph.add_edge("tools", "agent")
    saver = SqliteSaver(sqlite3.connect("checkpoints.db", check_same_thread=False))
    return graph.compile(checkpointer=saver)
"""
ADK = """
from google.adk.agents import LlmAgent
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_response import LlmResponse
from google.adk.tools import FunctionTool
from google.genai import types


class Scripted(BaseLlm):
    model: str = "scripted"

    async def generate_content_async(self, llm_request, stream=False):
        last = llm_request.contents[-1].parts or []
        answers = [str(p.function_response.response) for p in last if p.function_response]
        if answers:
            said = "refunded" if "refunded" in answers[-1] else "declined"
            part = types.Part(text="order 7: " + said)
        else:
            asks = types.FunctionCall(id="call_1", name="charge", args={{"order": 7}})
            part = types.Part(function_call=asks)
        yield LlmResponse(content=types.Content(role="model", parts=[part]))


agent = LlmAgent(
    name="support", model=Scripted(), tools=[FunctionTool(charge, require_confirmation=True)]
)
"""
HARNESS = {
    "openai-agents": AGENTS_SDK,
    "pydantic-ai": PYDANTIC_AI,
    "langgraph": LANGGRAPH,
    "adk": ADK,
}
FRAMEWORKS = ["openai-agents", "pydantic-ai", "langgraph", "adk"]
SCRIPTS = {
    "pause": '[[function_call("charge", {"order": 7}, call_id="call_1")]]',
    "decide": "[]",
    "resume": '[[assistant_message("order 7 refunded")]]',
}
STEPS = {
    "openai-agents": ["pause", "decide", "resume"],
    "pydantic-ai": ["pause", "resume"],
    "langgraph": ["pause", "resume"],
    "adk": ["pause", "resume"],
}
# How each framework says no, in place of the approval its docs show.
REJECT = {
    "openai-agents": ("state.approve(interruption)", "state.reject(interruption)"),
    "pydantic-ai": ('approvals={"call_1": True}', 'approvals={"call_1": ToolDenied("no")}'),
    "langgraph": ("Command(resume=True)", "Command(resume=False)"),
    "adk": ('{"confirmed": True}', '{"confirmed": False}'),
}
FINAL = {
    ("openai-agents", "approve"): "order 7 refunded\n",
    ("openai-agents", "reject"): "order 7 refunded\n",
    ("pydantic-ai", "approve"): "order 7: refunded order 7\n",
    ("pydantic-ai", "reject"): "order 7: no\n",
    ("langgraph", "approve"): "order 7: refunded\n",
    ("langgraph", "reject"): "order 7: declined\n",
    ("adk", "approve"): "order 7: refunded\n",
    ("adk", "reject"): "order 7: declined\n",
}


def blocks(framework: str) -> dict[str, str]:
    pattern = rf"<!-- approval: {framework} (\S+) -->\n```python\n(.*?)```"
    return dict(re.findall(pattern, DOC.read_text(), re.S))


def run(framework: str, step: str, code: str, workdir: Path) -> str:
    harness = HARNESS[framework].format(script=SCRIPTS[step])
    program = CHARGE.format() + harness + MAIN.format(body=textwrap.indent(code, "    "))
    done = forkserver.run(
        [sys.executable, "-c", program], cwd=workdir, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def sweep(workdir: Path) -> None:
    """A sweep over the store leaves the paused session byte for byte."""
    path = workdir / "sessions" / "support-42.jsonl"
    before = path.read_bytes()
    done = forkserver.run(
        [sys.executable, "-m", "turnlog", "sweep", "--store", "sessions", "--revive"],
        cwd=workdir,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "paused: waiting for approval of charge (call_1)" in done.stdout + done.stderr
    assert path.read_bytes() == before


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_the_blocks_are_the_section(framework: str) -> None:
    assert list(blocks(framework)) == STEPS[framework]


@pytest.mark.parametrize("framework", FRAMEWORKS)
@pytest.mark.parametrize("decision", ["approve", "reject"])
def test_pause_decide_resume_in_separate_processes(
    framework: str, decision: str, tmp_path: Path
) -> None:
    modules = {
        "openai-agents": "agents",
        "langgraph": "langgraph.checkpoint.sqlite",
        "adk": "google.adk",
    }
    pytest.importorskip(modules.get(framework, "pydantic_ai"))
    code = blocks(framework)
    *first, last = STEPS[framework]
    for step in first:
        text = code[step]
        if decision == "reject":
            text = text.replace(*REJECT[framework])
        run(framework, step, text, tmp_path)
        assert turnlog.inspect(tmp_path / "sessions" / "support-42.jsonl").status == "paused"
        sweep(tmp_path)
    resume = code[last].replace(*REJECT[framework]) if decision == "reject" else code[last]
    assert run(framework, last, resume, tmp_path) == FINAL[(framework, decision)]
    ledger = tmp_path / "ledger.txt"
    charged = ledger.read_text().split() if ledger.exists() else []
    assert charged == (["7"] if decision == "approve" else [])
    state = Fold(JSONLStore(tmp_path / "sessions").iter_events("support-42")).state
    assert state.open_turn is None
    for provider in PROVIDERS:
        assert validate(provider, render(provider, state.messages)) == [], provider
