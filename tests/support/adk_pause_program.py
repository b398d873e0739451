"""A crash-test program for Google ADK's confirmations and long-running tools on TurnlogSessionService, killed with SIGKILL.

    python adk_pause_program.py STEP STORE LEDGER DECISION KILL MODE

MODE is how `pay` waits: `gate` (`FunctionTool(pay, require_confirmation=
True)`, with `look` beside it; `guarded`: the same, with a policy callback
that blocks pay before the gate asks), `asks` (pay's body calls
`tool_context.request_confirmation()`) or `long` (a `LongRunningFunctionTool`
whose body starts the charge, with `look` beside it; the client sends the
result). STEP is `run` (the model asks for pay; the run stops waiting),
`decide` (a second process appends the client's answer to the session and
does not run the agent), `resume` (a process runs the agent on the client's
answer, DECISION `approve` or `deny`; for `long`, the delivered result) or
`continue` (a new message on the session). DECISION may list several
answers for one message (`approve,deny`). STORE is a store target; LEDGER
a file pay appends its call id to, synced, when it charges; KILL the
instant to die at: `waiting` (the run stopped), `decided` (the answer is
appended), `in_body` (pay's ledger line is synced, its result not written)
or `none`. Prints the session's status and the run's last words as JSON.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any

from google.adk.agents.llm_agent import LlmAgent
from google.adk.apps.app import App
from google.adk.events.event import Event
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import Runner
from google.adk.tools.function_tool import FunctionTool
from google.adk.tools.long_running_tool import LongRunningFunctionTool
from google.adk.tools.tool_context import ToolContext
from google.genai import types

import turnlog
from pause_ledger import KILL, LEDGER, charge, die
from turnlog.integrations.adk import TurnlogSessionService

APP, USER, SESSION = "shop", "u", "pay"
MODE = ["gate"]


class Scripted(BaseLlm):
    """Asks for pay (and look) on the user's words; sums up what came back."""

    model: str = "scripted"

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        last = [p for p in (llm_request.contents[-1].parts or [])]
        said = [p.text for p in last if p.text]
        if said and said[-1] == "continue":
            reply = [types.Part(text="carried on")]
        elif said:
            reply = [
                types.Part(
                    function_call=types.FunctionCall(
                        id="c1", name="pay", args={"to": "bob", "amount": 5}
                    )
                )
            ]
            if MODE[0] != "asks":
                reply.append(
                    types.Part(
                        function_call=types.FunctionCall(id="c2", name="look", args={"q": "b"})
                    )
                )
        else:
            answers = [
                json.dumps(p.function_response.response, sort_keys=True)
                for p in last
                if p.function_response
            ]
            reply = [types.Part(text="done: " + "; ".join(answers))]
        yield LlmResponse(content=types.Content(role="model", parts=reply))


def pay(to: str, amount: int) -> str:
    """Pay someone."""
    return charge(to, amount)


def pay_asking(to: str, amount: int, tool_context: ToolContext) -> str:
    """Pay someone, once a person confirmed it."""
    confirmation = tool_context.tool_confirmation
    if confirmation is None:
        tool_context.request_confirmation(hint=f"pay {to} {amount}?")
        return "awaiting approval"
    if not confirmation.confirmed:
        return "declined"  # never reached on turnlog: a declined call is answered first
    return charge(to, amount)


def start_pay(to: str, amount: int) -> dict[str, str]:
    """Start paying someone; the bank confirms later."""
    charge(to, amount)
    return {"status": "pending"}


def look(q: str) -> str:
    """Look something up."""
    return f"{q}: 100"


def guard(tool: Any, args: dict[str, Any], tool_context: ToolContext) -> dict[str, str] | None:
    """A policy callback that blocks pay before ADK's gate could ask (`guarded`)."""
    return {"error": "blocked by policy"} if tool.name == "pay" else None


def tools() -> list[Any]:
    if MODE[0] in ("gate", "guarded"):
        return [FunctionTool(pay, require_confirmation=True), look]
    if MODE[0] == "asks":
        pay_asking.__name__ = "pay"
        return [FunctionTool(pay_asking)]
    start_pay.__name__ = "pay"
    return [LongRunningFunctionTool(start_pay), look]


def answer(session: Any, decision: str) -> types.Content:
    """The client's function response: its answer to the confirmation, or the bank's result."""
    if MODE[0] == "long":
        response = types.FunctionResponse(id="c1", name="pay", response={"status": "paid"})
    else:
        asked = [
            call
            for event in session.events
            for call in event.get_function_calls()
            if call.name == "adk_request_confirmation"
        ][-1]
        # Several answers in one message (`approve,deny`): ADK takes the last.
        return types.Content(
            role="user",
            parts=[
                types.Part(
                    function_response=types.FunctionResponse(
                        id=asked.id,
                        name="adk_request_confirmation",
                        response={"confirmed": one == "approve"},
                    )
                )
                for one in decision.split(",")
            ],
        )
    return types.Content(role="user", parts=[types.Part(function_response=response)])


async def main(step: str, target: str, decision: str) -> dict[str, Any]:
    said = await act(step, target, decision)
    # Read once the service has let the session go (while it holds it, it is running).
    return {"status": turnlog.inspect(target, SESSION).status, "output": said}


async def act(step: str, target: str, decision: str) -> str | None:
    async with TurnlogSessionService(target) as sessions:
        callback = guard if MODE[0] == "guarded" else None
        agent = LlmAgent(
            name="clerk", model=Scripted(), tools=tools(), before_tool_callback=callback
        )
        app = App(name=APP, root_agent=agent, plugins=[sessions.plugin])
        runner = Runner(app=app, session_service=sessions)
        if step == "run":
            await sessions.create_session(app_name=APP, user_id=USER, session_id=SESSION)
            message = types.Content(role="user", parts=[types.Part(text="pay bob 5")])
        else:
            session = await sessions.get_session(app_name=APP, user_id=USER, session_id=SESSION)
            assert session is not None
            if step == "continue":
                message = types.Content(role="user", parts=[types.Part(text="continue")])
            else:
                message = answer(session, decision)
            if step == "decide":
                event = Event(
                    author="user", invocation_id=session.events[-1].invocation_id, content=message
                )
                await sessions.append_event(session, event)
                if KILL[0] == "decided":
                    die()
                return None
        said = None
        async for event in runner.run_async(user_id=USER, session_id=SESSION, new_message=message):
            if event.content and any(p.text for p in event.content.parts or []):
                said = "".join(p.text or "" for p in event.content.parts or [])
        if step == "run" and KILL[0] == "waiting":
            die()
        return said


if __name__ == "__main__":
    STEP, TARGET, LEDGER_PATH, DECISION, KILL[0], MODE[0] = sys.argv[1:7]
    LEDGER.append(Path(LEDGER_PATH))
    print(json.dumps(asyncio.run(main(STEP, TARGET, DECISION))))
