"""A real framework running an agent with its own scripted model, whose `charge`
tool records every real execution in a side file (synced) and can SIGKILL
its own process: the crash the integrations must survive.

    python framework_program.py FRAMEWORK MODE STORE SIDE [--parallel]

FRAMEWORK: openai-agents | pydantic-ai | langgraph | adk
MODE: run (killed inside `charge`), resume, resume-unrecovered (LangGraph's own
`invoke(None)`, without recover_thread), resume-own-history (Pydantic AI on the
history the app saved itself); plain-run, plain-resume (the framework's own
persistence, without turnlog); approve (with APPROVAL=1, below). `resume` prints
one JSON object: the final text and what the model was sent on resume.

With APPROVAL=1 `charge` waits for a person's approval (the Agents SDK's
`needs_approval`, LangGraph's `interrupt()` inside the tool): `run` stops
there, and `approve` approves and resumes in a new process (the Agents SDK
from the `RunState` that `run` saved, LangGraph with `Command(resume=True)`).
"""

import ast
import asyncio
import inspect
import json
import os
import re
import signal
import sys
from pathlib import Path
from typing import Any

import kill_points

SESSION = "run-1"
FINAL = "all charges settled"


# The revival notice's frame (turnlog.notices), as the model reads it.
NOTICE = "[turnlog: automated notification (revival)"


def record(side: str, amount: int) -> None:
    fd = os.open(side, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        os.write(fd, f"{amount}\n".encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    if os.environ.get("KILL_AT") == str(amount):
        os.kill(os.getpid(), signal.SIGKILL)


def amounts(parallel: bool) -> list[int]:
    return [1, 2] if parallel else [1]


def approval() -> bool:
    return os.environ.get("APPROVAL") == "1"


def report(
    final: str, calls: list[str], outputs: list[str], first: Any = None, **more: Any
) -> None:
    """One JSON line: the final text, and the calls, outputs and whether the
    resume notice were in the model's first input (and what `more` adds)."""
    notice = NOTICE in str(first)
    print(
        json.dumps({"final": final, "calls": calls, "outputs": outputs, "notice": notice, **more})
    )


# -- OpenAI Agents SDK ---------------------------------------------------------------


def openai_agents(mode: str, store: str, side: str, parallel: bool) -> None:
    from agents import Agent, Runner, RunState, SQLiteSession, function_tool
    from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call

    from turnlog.integrations.openai_agents import TurnlogSession

    seen: list[list[dict[str, Any]]] = []

    def respond(call: Any) -> Any:
        items = [i if isinstance(i, dict) else i.model_dump() for i in call.input]
        seen.append(items)
        if any(i.get("type") == "function_call_output" for i in items):
            return [assistant_message(FINAL)]
        step = len(seen)
        return [
            function_call("charge", {"amount": a}, call_id=f"call_{step}_{a}")
            for a in amounts(parallel)
        ]

    @function_tool(needs_approval=approval())
    def charge(amount: int) -> str:
        """Charge the card."""
        record(side, amount)
        return f"charged {amount}"

    model = ScriptedModel([ModelStep.respond(respond) for _ in range(4)])
    agent = Agent(name="payer", model=model, tools=[charge])
    paused = Path(store) / "run-state.json"

    async def main() -> None:
        if mode.startswith("plain"):
            Path(store).mkdir(parents=True, exist_ok=True)
            session: Any = SQLiteSession(SESSION, str(Path(store) / "agents.db"))
            hooks = None
        else:
            # The kill sweeps' knobs: how the crashed session is opened
            # (OPEN_WITH=revive|recover), a streamed run, a run without hooks.
            opened = {os.environ["OPEN_WITH"]: True} if os.environ.get("OPEN_WITH") else {}
            session = TurnlogSession(
                store, SESSION, idempotency={"charge": "destructive"}, **opened
            )
            hooks = None if os.environ.get("NO_HOOKS") else session.hooks
        text = "charge the card" if mode.endswith("run") else "continue"
        handed: list[Any] = []
        if isinstance(session, TurnlogSession) and not mode.endswith("run"):
            handed = [(i.get("type"), i.get("call_id")) for i in await session.get_items()]
        if mode == "approve":
            # The SDK's own approval flow: the paused run's state, approved.
            state: Any = await RunState.from_string(agent, paused.read_text())
            for pending in state.get_interruptions():
                state.approve(pending)
            result = await Runner.run(agent, state, session=session, hooks=hooks)
        elif os.environ.get("STREAMED"):
            streamed = Runner.run_streamed(agent, text, session=session, hooks=hooks)
            async for _ in streamed.stream_events():
                pass
            result = streamed
        else:
            result = await Runner.run(agent, text, session=session, hooks=hooks)
        if isinstance(session, TurnlogSession):
            await session.close()
        if result.interruptions:
            paused.write_text(result.to_state().to_string())
            print(json.dumps({"paused": [i.raw_item.call_id for i in result.interruptions]}))
            return
        first = seen[0]
        report(
            str(result.final_output),
            [i["call_id"] for i in first if i.get("type") == "function_call"],
            [i["call_id"] for i in first if i.get("type") == "function_call_output"],
            first,
            handed=handed,
        )

    asyncio.run(main())


# -- Pydantic AI ---------------------------------------------------------------------


def pydantic_ai(mode: str, store: str, side: str, parallel: bool) -> None:
    from pydantic_ai import Agent
    from pydantic_ai.capabilities import AbstractCapability
    from pydantic_ai.messages import (
        ModelMessagesTypeAdapter,
        ModelRequest,
        ModelResponse,
        TextPart,
        ToolCallPart,
        ToolReturnPart,
    )
    from pydantic_ai.models.function import FunctionModel

    from turnlog.integrations.pydantic_ai import TurnlogCapability

    seen: list[list[Any]] = []

    def respond(messages: list[Any], info: Any) -> ModelResponse:
        seen.append(messages)
        if any(isinstance(p, ToolReturnPart) for m in messages for p in m.parts):
            return ModelResponse(parts=[TextPart(FINAL)])
        return ModelResponse(
            parts=[
                ToolCallPart("charge", {"amount": a}, tool_call_id=f"call_{len(seen)}_{a}")
                for a in amounts(parallel)
            ]
        )

    agent = Agent(FunctionModel(respond))

    @agent.tool_plain
    def charge(amount: int) -> str:
        record(side, amount)
        return f"charged {amount}"

    saved = Path(store) / "history.json"

    class SaveHistory(AbstractCapability[Any]):
        """What an app without turnlog does: persist the history after each reply."""

        async def after_model_request(
            self, ctx: Any, *, request_context: Any, response: Any
        ) -> Any:
            saved.write_bytes(ModelMessagesTypeAdapter.dump_json([*ctx.messages, response]))
            return response

    async def main() -> None:
        if mode == "plain-run":
            Path(store).mkdir(parents=True, exist_ok=True)
            result = await agent.run("charge the card", capabilities=[SaveHistory()])
        elif mode == "plain-resume":
            history = ModelMessagesTypeAdapter.validate_json(saved.read_bytes())
            result = await agent.run(None, message_history=history)
        elif mode == "resume-own-history":
            # Pydantic AI's own resume, on the history the app saved itself
            # (before the tools' results): the run starts with those calls.
            history = ModelMessagesTypeAdapter.validate_json(saved.read_bytes())
            cap = TurnlogCapability(store, SESSION)
            result = await agent.run(None, message_history=history, capabilities=[cap])
            await cap.close()
        else:
            cap = TurnlogCapability(store, SESSION)
            text = "charge the card" if mode == "run" else "continue"
            result = await agent.run(
                text, message_history=cap.messages(), capabilities=[cap, SaveHistory()]
            )
            await cap.close()
        first = seen[0]
        parts = [p for m in first for p in m.parts]
        report(
            str(result.output),
            [p.tool_call_id for p in parts if isinstance(p, ToolCallPart)],
            [
                p.tool_call_id
                for m in first
                if isinstance(m, ModelRequest)
                for p in m.parts
                if isinstance(p, ToolReturnPart)
            ],
            first,
        )

    asyncio.run(main())


# -- LangGraph ------------------------------------------------------------------------


def langgraph(mode: str, store: str, side: str, parallel: bool) -> None:
    import sqlite3
    from typing import Annotated, TypedDict

    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
    from langchain_core.tools import tool
    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.graph import START, StateGraph
    from langgraph.graph.message import add_messages
    from langgraph.prebuilt import ToolNode, tools_condition
    from langgraph.types import Command, interrupt

    from turnlog.integrations.langgraph import TurnlogToolWrapper

    @tool
    def charge(amount: int) -> str:
        """Charge the card."""
        if approval() and not interrupt({"approve": amount}):
            return "declined"
        record(side, amount)
        return f"charged {amount}"

    class State(TypedDict):
        messages: Annotated[list[Any], add_messages]

    seen: list[list[Any]] = []

    def model(state: State) -> dict[str, Any]:
        messages = state["messages"]
        seen.append(list(messages))
        if any(isinstance(m, ToolMessage) for m in messages):
            return {"messages": [AIMessage(content=FINAL)]}
        calls = [
            {"id": f"call_{len(seen)}_{a}", "name": "charge", "args": {"amount": a}}
            for a in amounts(parallel)
        ]
        return {"messages": [AIMessage(content="", tool_calls=calls)]}

    Path(store).mkdir(parents=True, exist_ok=True)
    connection = sqlite3.connect(str(Path(store) / "checkpoints.db"), check_same_thread=False)
    config: Any = {"configurable": {"thread_id": SESSION}}

    class Saver(SqliteSaver):
        """LangGraph's SQLite checkpointer; with KILL_AFTER_CHECKPOINT set, the
        process dies right after the checkpoint that holds the model's tool
        calls is committed, before the tool node runs: the window where the
        thread knows calls that turnlog never saw."""

        def put(self, config: Any, checkpoint: Any, *args: Any, **kwargs: Any) -> Any:
            saved = super().put(config, checkpoint, *args, **kwargs)
            messages = checkpoint.get("channel_values", {}).get("messages", [])
            if (
                os.environ.get("KILL_AFTER_CHECKPOINT")
                and messages
                and getattr(messages[-1], "tool_calls", None)
            ):
                os.kill(os.getpid(), signal.SIGKILL)
            return saved

    def compiled(wrapper: TurnlogToolWrapper | None) -> Any:
        graph = StateGraph(State)
        graph.add_node("agent", model)
        graph.add_node("tools", ToolNode([charge], wrap_tool_call=wrapper))
        graph.add_edge(START, "agent")
        graph.add_conditional_edges("agent", tools_condition)
        graph.add_edge("tools", "agent")
        return graph.compile(checkpointer=Saver(connection))

    wrapper = None if mode.startswith("plain") else TurnlogToolWrapper(store, SESSION)
    app = compiled(wrapper)
    if mode in ("resume", "revive") and wrapper is not None:
        # ("resume-unrecovered" skips this, to show the refusal.) The one graph
        # built is the one recovered: the thread gets the tool node's output
        # from turnlog, and the next step is the model.
        wrapper.recover_thread(app, config, revive=mode == "revive")
    if mode.endswith("run"):
        start: Any = {"messages": [HumanMessage("charge the card")]}
        out = app.invoke(start, config, durability="sync")
    elif mode == "approve":
        out = app.invoke(Command(resume=True), config, durability="sync")
    elif not app.get_state(config).values:
        # Killed before the thread's first checkpoint: the app starts it again.
        out = app.invoke({"messages": [HumanMessage("charge the card")]}, config, durability="sync")
    else:
        out = app.invoke(None, config, durability="sync")
    if wrapper is not None:
        wrapper.finish(out)
        wrapper.close()
    if "__interrupt__" in out:
        calls = [c["id"] for c in out["messages"][-1].tool_calls]
        print(json.dumps({"paused": calls}))
        return
    # A thread whose last checkpoint holds the final answer calls no model.
    first = seen[0] if seen else []
    report(
        str(out["messages"][-1].content),
        [c["id"] for m in first for c in (getattr(m, "tool_calls", None) or [])],
        [m.tool_call_id for m in first if isinstance(m, ToolMessage)],
        first,
        model_called=bool(seen),
    )


# -- Google ADK ------------------------------------------------------------------------


def adk(mode: str, store: str, side: str, parallel: bool) -> None:
    from collections.abc import AsyncGenerator

    from google.adk.agents import LlmAgent
    from google.adk.apps import App
    from google.adk.models.base_llm import BaseLlm
    from google.adk.models.llm_request import LlmRequest
    from google.adk.models.llm_response import LlmResponse
    from google.adk.runners import Runner
    from google.adk.sessions.sqlite_session_service import SqliteSessionService
    from google.genai import types

    from turnlog.integrations.adk import TurnlogSessionService

    seen: list[list[Any]] = []

    class Scripted(BaseLlm):
        """The model: asks for the charges until it sees a result, then answers."""

        model: str = "scripted"

        async def generate_content_async(
            self, llm_request: LlmRequest, stream: bool = False
        ) -> AsyncGenerator[LlmResponse, None]:
            contents = list(llm_request.contents)
            seen.append(contents)
            parts = [p for c in contents for p in (c.parts or [])]
            if any(p.function_response for p in parts):
                reply = [types.Part(text=FINAL)]
            else:
                reply = [
                    types.Part(
                        function_call=types.FunctionCall(
                            id=f"call_{len(seen)}_{a}", name="charge", args={"amount": a}
                        )
                    )
                    for a in amounts(parallel)
                ]
            yield LlmResponse(content=types.Content(role="model", parts=reply))

    async def charge(amount: int) -> str:
        """Charge the card."""
        record(side, amount)
        return f"charged {amount}"

    agent = LlmAgent(name="payer", model=Scripted(), tools=[charge])

    async def main() -> None:
        Path(store).mkdir(parents=True, exist_ok=True)
        if mode.startswith("plain"):
            sessions: Any = SqliteSessionService(str(Path(store) / "adk.db"))
            app = App(name="shop", root_agent=agent)
        else:
            sessions = TurnlogSessionService(store, revive=mode == "revive")
            app = App(name="shop", root_agent=agent, plugins=[sessions.plugin])
        runner = Runner(app=app, session_service=sessions)
        if mode.endswith("run"):
            await sessions.create_session(app_name="shop", user_id="u", session_id=SESSION)
        text = "charge the card" if mode.endswith("run") else "continue"
        final = ""
        message = types.Content(role="user", parts=[types.Part(text=text)])
        async for event in runner.run_async(user_id="u", session_id=SESSION, new_message=message):
            if event.is_final_response() and event.content and event.content.parts:
                final = "".join(p.text or "" for p in event.content.parts)
        if isinstance(sessions, TurnlogSessionService):
            await sessions.close()
        parts = [p for c in seen[0] for p in (c.parts or [])]
        report(
            final,
            [str(p.function_call.id) for p in parts if p.function_call],
            [str(p.function_response.id) for p in parts if p.function_response],
            seen[0],
        )

    asyncio.run(main())


# -- calls the framework runs itself -----------------------------------------------------
#
# Each reply asks for `charge` (amount 1, a tool with a hook of its own) and,
# in the same reply, a call whose code the framework runs itself, which
# records amount 2: Pydantic AI's output function, the Agents SDK's handoff
# callback and its apply_patch editor, ADK's task-mode sub-agent (whose
# before-agent callback records 3, and whose own tool records 2). KILL_AT
# kills the process inside one of them, as `record` does for `charge`.
#
#     python framework_program.py FRAMEWORK framework-MODE STORE SIDE
#
# pydantic-ai: output-run (END_STRATEGY picks the end strategy; with
# CHARGE_AFTER_OUTPUT=1 `charge` waits until the output function has run),
# output-resume-own-history. openai-agents: handoff, apply-patch. adk:
# task-delegation. Each prints one JSON object, as `report` does.


def wait_for(side: str, amount: int) -> None:
    """Until `side` shows `amount` recorded (another call of the step ran)."""
    import time

    for _ in range(400):
        if os.path.exists(side) and str(amount) in Path(side).read_text().split():
            return
        time.sleep(0.025)


def framework_run_pydantic_ai(mode: str, store: str, side: str) -> None:
    from pydantic_ai import Agent, ToolOutput
    from pydantic_ai.capabilities import AbstractCapability
    from pydantic_ai.messages import (
        ModelMessagesTypeAdapter,
        ModelResponse,
        RetryPromptPart,
        TextPart,
        ToolCallPart,
        ToolReturnPart,
    )
    from pydantic_ai.models.function import FunctionModel

    from turnlog.integrations.pydantic_ai import TurnlogCapability

    seen: list[list[Any]] = []

    def respond(messages: list[Any], info: Any) -> ModelResponse:
        seen.append(messages)
        answered = (ToolReturnPart, RetryPromptPart)
        if any(isinstance(p, answered) for m in messages for p in m.parts):
            return ModelResponse(parts=[TextPart(FINAL)])
        output = info.output_tools[0].name
        return ModelResponse(
            parts=[
                ToolCallPart("charge", {"amount": 1}, tool_call_id="call_1_1"),
                ToolCallPart(output, {"order": "o1"}, tool_call_id="call_1_2"),
            ]
        )

    def place_order(order: str) -> str:
        """The output function: it charges too."""
        record(side, 2)
        return FINAL

    strategy: Any = os.environ.get("END_STRATEGY", "graceful")
    agent = Agent(
        FunctionModel(respond), output_type=[ToolOutput(place_order), str], end_strategy=strategy
    )

    @agent.tool_plain
    def charge(amount: int) -> str:
        if os.environ.get("CHARGE_AFTER_OUTPUT"):
            wait_for(side, 2)
        record(side, amount)
        return f"charged {amount}"

    saved = Path(store) / "history.json"

    class SaveHistory(AbstractCapability[Any]):
        """What an app keeping its own history does: save it after each reply."""

        async def after_model_request(
            self, ctx: Any, *, request_context: Any, response: Any
        ) -> Any:
            saved.write_bytes(ModelMessagesTypeAdapter.dump_json([*ctx.messages, response]))
            return response

    async def main() -> None:
        Path(store).mkdir(parents=True, exist_ok=True)
        async with TurnlogCapability(store, SESSION) as cap:
            if mode == "output-resume-own-history":
                history = ModelMessagesTypeAdapter.validate_json(saved.read_bytes())
                result = await agent.run(None, message_history=history, capabilities=[cap])
            else:
                result = await agent.run(
                    "charge and order",
                    message_history=cap.messages(),
                    capabilities=[cap, SaveHistory()],
                )
        parts = [p for m in (seen[0] if seen else []) for p in m.parts]
        report(
            str(result.output),
            [p.tool_call_id for p in parts if isinstance(p, ToolCallPart)],
            [p.tool_call_id for p in parts if isinstance(p, ToolReturnPart)],
        )

    asyncio.run(main())


def framework_run_openai_agents(mode: str, store: str, side: str) -> None:
    from agents import Agent, ApplyPatchTool, Runner, function_tool, handoff
    from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call

    from turnlog.integrations.openai_agents import TurnlogSession

    @function_tool
    def charge(amount: int) -> str:
        """Charge the card."""
        record(side, amount)
        return f"charged {amount}"

    class Ledger:
        """An apply_patch editor whose writes are charges."""

        def create_file(self, operation: Any) -> str:
            record(side, 2)
            return "created"

        def update_file(self, operation: Any) -> str:
            return "updated"

        def delete_file(self, operation: Any) -> str:
            return "deleted"

    def answered(call: Any) -> bool:
        items = [i if isinstance(i, dict) else i.model_dump() for i in call.input]
        return any(str(i.get("type", "")).endswith("_output") for i in items)

    if mode == "handoff":
        done = ModelStep.respond(lambda call: [assistant_message(FINAL)])
        shipper = Agent(name="shipper", model=ScriptedModel([done]))
        second: Any = function_call("transfer_to_shipper", {}, call_id="call_1_2")
        tools: list[Any] = [charge]

        def notify(context: Any) -> None:
            record(side, 2)

        handoffs: list[Any] = [handoff(shipper, on_handoff=notify)]
    else:
        patch = {"type": "create_file", "path": "receipt.txt", "diff": "+paid\n"}
        second = function_call("apply_patch", patch, call_id="call_1_2")
        tools = [charge, ApplyPatchTool(editor=Ledger())]
        handoffs = []

    def respond(call: Any) -> Any:
        if answered(call):
            return [assistant_message(FINAL)]
        return [function_call("charge", {"amount": 1}, call_id="call_1_1"), second]

    model = ScriptedModel([ModelStep.respond(respond) for _ in range(3)])
    agent = Agent(name="payer", model=model, tools=tools, handoffs=handoffs)

    async def main() -> None:
        async with TurnlogSession(store, SESSION) as session:
            result = await Runner.run(
                agent, "charge and ship", session=session, hooks=session.hooks
            )
        report(str(result.final_output), [], [])

    asyncio.run(main())


def framework_run_adk(mode: str, store: str, side: str) -> None:
    from collections.abc import AsyncGenerator

    from google.adk.agents import LlmAgent
    from google.adk.apps import App
    from google.adk.models.base_llm import BaseLlm
    from google.adk.models.llm_request import LlmRequest
    from google.adk.models.llm_response import LlmResponse
    from google.adk.runners import Runner
    from google.genai import types

    from turnlog.integrations.adk import TurnlogSessionService

    def answers(request: LlmRequest, name: str) -> bool:
        parts = [p for c in request.contents for p in (c.parts or [])]
        return any(p.function_response and p.function_response.name == name for p in parts)

    def reply(*parts: types.Part) -> LlmResponse:
        return LlmResponse(content=types.Content(role="model", parts=list(parts)))

    def call(call_id: str, name: str, **args: Any) -> types.Part:
        return types.Part(function_call=types.FunctionCall(id=call_id, name=name, args=args))

    class Payer(BaseLlm):
        """Asks for a charge and delegates the shipping, in one reply."""

        model: str = "payer"

        async def generate_content_async(
            self, llm_request: LlmRequest, stream: bool = False
        ) -> AsyncGenerator[LlmResponse, None]:
            if answers(llm_request, "shipper"):
                yield reply(types.Part(text=FINAL))
                return
            yield reply(
                call("call_1_1", "charge", amount=1),
                call("call_1_2", "shipper", request="ship order o1"),
            )

    class Shipper(BaseLlm):
        """The task-mode sub-agent's model: ships, then finishes its task."""

        model: str = "shipper"

        async def generate_content_async(
            self, llm_request: LlmRequest, stream: bool = False
        ) -> AsyncGenerator[LlmResponse, None]:
            if answers(llm_request, "ship"):
                yield reply(call("call_2_finish", "finish_task", result="shipped"))
                return
            yield reply(call("call_2_ship", "ship"))

    async def charge(amount: int) -> str:
        """Charge the card."""
        record(side, amount)
        return f"charged {amount}"

    async def ship() -> str:
        """Ship the order (it charges for the postage)."""
        record(side, 2)
        return "shipped"

    def starting(callback_context: Any) -> None:
        record(side, 3)

    shipper = LlmAgent(
        name="shipper",
        description="Ships orders.",
        model=Shipper(),
        tools=[ship],
        mode="task",
        before_agent_callback=starting,
    )
    agent = LlmAgent(name="payer", model=Payer(), tools=[charge], sub_agents=[shipper])

    async def main() -> None:
        Path(store).mkdir(parents=True, exist_ok=True)
        async with TurnlogSessionService(store) as sessions:
            app = App(name="shop", root_agent=agent, plugins=[sessions.plugin])
            runner = Runner(app=app, session_service=sessions)
            await sessions.create_session(app_name="shop", user_id="u", session_id=SESSION)
            message = types.Content(role="user", parts=[types.Part(text="charge and ship")])
            final = ""
            async for event in runner.run_async(
                user_id="u", session_id=SESSION, new_message=message
            ):
                if event.is_final_response() and event.content and event.content.parts:
                    final = "".join(p.text or "" for p in event.content.parts)
        report(final, [], [])

    asyncio.run(main())


FRAMEWORK_RUN = {
    "pydantic-ai": framework_run_pydantic_ai,
    "openai-agents": framework_run_openai_agents,
    "adk": framework_run_adk,
}


# -- docs/integrations.md, run as written ------------------------------------------------

DOCS = Path(__file__).parents[2] / "docs" / "integrations.md"


def doc_blocks(framework: str) -> dict[str, str]:
    """The doc's code blocks for one framework, by step (`<!-- program: FW STEP -->`)."""
    found = re.findall(
        r"<!-- program: (\S+) (\S+) -->\n```python\n(.*?)```", DOCS.read_text(), re.S
    )
    return {step: code for fw, step, code in found if fw == framework}


def run_block(code: str, namespace: dict[str, Any]) -> None:
    """One block as a top-level program (top-level `await` and `async with` allowed),
    on the store the test chose (`DOC_STORE`, else the doc's own "sessions")."""
    store = os.environ.get("DOC_STORE")
    if store:
        code = code.replace('"sessions"', repr(store))
    compiled = compile(code, str(DOCS), "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    result = eval(compiled, namespace)
    if inspect.iscoroutine(result):
        asyncio.run(result)


def doc_fixtures(framework: str, side: str, parallel: bool, seen: list[Any]) -> dict[str, Any]:
    """What the doc leaves to the reader: the agent (or model node), the `charge`
    tool (records each real execution, can SIGKILL its process), a checkpointer.
    Each scripted model asks for the charges until it sees a tool result, then
    answers FINAL; `seen` collects what it was sent."""

    def asks(count: int) -> list[tuple[str, int]]:
        return [(f"call_{count}_{a}", a) for a in amounts(parallel)]

    if framework == "openai-agents":
        from agents import Agent, function_tool, set_tracing_disabled
        from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call

        set_tracing_disabled(True)

        def respond(call: Any) -> Any:
            items = [i if isinstance(i, dict) else i.model_dump() for i in call.input]
            seen.append(items)
            if any(i.get("type") == "function_call_output" for i in items):
                return [assistant_message(FINAL)]
            return [function_call("charge", {"amount": a}, call_id=i) for i, a in asks(len(seen))]

        @function_tool
        def charge_tool(amount: int) -> str:
            """Charge the card."""
            record(side, amount)
            return f"charged {amount}"

        charge_tool.name = "charge"
        model = ScriptedModel([ModelStep.respond(respond) for _ in range(4)])
        return {"agent": Agent(name="payer", model=model, tools=[charge_tool])}
    if framework == "pydantic-ai":
        from pydantic_ai import Agent
        from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart
        from pydantic_ai.models.function import FunctionModel

        def reply(messages: list[Any], info: Any) -> ModelResponse:
            seen.append(messages)
            if any(isinstance(p, ToolReturnPart) for m in messages for p in m.parts):
                return ModelResponse(parts=[TextPart(FINAL)])
            return ModelResponse(
                parts=[
                    ToolCallPart("charge", {"amount": a}, tool_call_id=i)
                    for i, a in asks(len(seen))
                ]
            )

        agent = Agent(FunctionModel(reply))

        @agent.tool_plain
        def charge(amount: int) -> str:
            record(side, amount)
            return f"charged {amount}"

        return {"agent": agent}
    if framework == "langgraph":
        import sqlite3

        from langchain_core.messages import AIMessage, ToolMessage
        from langchain_core.tools import tool
        from langgraph.checkpoint.sqlite import SqliteSaver

        @tool
        def charge(amount: int) -> str:
            """Charge the card."""
            record(side, amount)
            return f"charged {amount}"

        def call_model(state: Any) -> dict[str, Any]:
            messages = state["messages"]
            seen.append(list(messages))
            if any(isinstance(m, ToolMessage) for m in messages):
                return {"messages": [AIMessage(content=FINAL)]}
            calls = [{"id": i, "name": "charge", "args": {"amount": a}} for i, a in asks(len(seen))]
            return {"messages": [AIMessage(content="", tool_calls=calls)]}

        connection = sqlite3.connect("checkpoints.db", check_same_thread=False)
        return {"charge": charge, "call_model": call_model, "checkpointer": SqliteSaver(connection)}
    from collections.abc import AsyncGenerator

    from google.adk.agents import LlmAgent
    from google.adk.models.base_llm import BaseLlm
    from google.adk.models.llm_request import LlmRequest
    from google.adk.models.llm_response import LlmResponse
    from google.genai import types

    class Scripted(BaseLlm):
        model: str = "scripted"

        async def generate_content_async(
            self, llm_request: LlmRequest, stream: bool = False
        ) -> AsyncGenerator[LlmResponse, None]:
            contents = list(llm_request.contents)
            seen.append(contents)
            if any(p.function_response for c in contents for p in (c.parts or [])):
                parts = [types.Part(text=FINAL)]
            else:
                parts = [
                    types.Part(
                        function_call=types.FunctionCall(id=i, name="charge", args={"amount": a})
                    )
                    for i, a in asks(len(seen))
                ]
            yield LlmResponse(content=types.Content(role="model", parts=parts))

    async def charge(amount: int) -> str:
        """Charge the card."""
        record(side, amount)
        return f"charged {amount}"

    return {"agent": LlmAgent(name="payer", model=Scripted(), tools=[charge])}


def doc_program(framework: str, step: str, workdir: str, side: str, parallel: bool) -> None:
    """Run the doc's section for `framework`: `run` (killed inside `charge` when
    KILL_AT says so) or `revive`; print the final text and the model's first input."""
    side = os.path.abspath(side)
    os.makedirs(workdir, exist_ok=True)
    os.chdir(workdir)
    blocks = doc_blocks(framework)
    seen: list[Any] = []
    namespace = {"__name__": "__doc__", **doc_fixtures(framework, side, parallel, seen)}
    if "build" in blocks:
        run_block(blocks["build"], namespace)
    run_block(blocks[step], namespace)
    if framework == "openai-agents":
        final = str(namespace["result"].final_output)
        first = seen[0]
        calls = [i["call_id"] for i in first if i.get("type") == "function_call"]
        outputs = [i["call_id"] for i in first if i.get("type") == "function_call_output"]
    elif framework == "pydantic-ai":
        final = str(namespace["result"].output)
        parts = [p for m in seen[0] for p in m.parts]
        calls = [p.tool_call_id for p in parts if p.part_kind == "tool-call"]
        outputs = [p.tool_call_id for p in parts if p.part_kind == "tool-return"]
    elif framework == "langgraph":
        final = str(namespace["out"]["messages"][-1].content)
        calls = [c["id"] for m in seen[0] for c in (getattr(m, "tool_calls", None) or [])]
        outputs = [m.tool_call_id for m in seen[0] if getattr(m, "type", "") == "tool"]
    else:
        event = namespace["event"]
        final = "".join(p.text or "" for p in event.content.parts)
        parts = [p for c in seen[0] for p in (c.parts or [])]
        calls = [str(p.function_call.id) for p in parts if p.function_call]
        outputs = [str(p.function_response.id) for p in parts if p.function_response]
    print(
        json.dumps(
            {
                "final": final,
                "calls": calls,
                "outputs": outputs,
                "notice": NOTICE in str(seen[0]),
                "model_calls": len(seen),
            }
        )
    )


def main(argv: list[str]) -> None:
    kill_points.arm()
    framework, mode, store, side = argv[:4]
    parallel = "--parallel" in argv
    if mode.startswith("doc-"):
        doc_program(framework, mode.removeprefix("doc-"), store, side, parallel)
        return
    if mode.startswith("framework-"):
        FRAMEWORK_RUN[framework](mode.removeprefix("framework-"), store, side)
        return
    programs = {
        "openai-agents": openai_agents,
        "pydantic-ai": pydantic_ai,
        "langgraph": langgraph,
        "adk": adk,
    }
    programs[framework](mode, store, side, parallel)


if __name__ == "__main__":
    main(sys.argv[1:])
