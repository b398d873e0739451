"""turnlog under Pydantic AI: a capability that writes ahead of every tool.

    cap = TurnlogCapability("sessions", "support-42")
    result = await agent.run(text, message_history=cap.messages(), capabilities=[cap])

The capability writes the user's prompt and each model reply as they
happen, a durable `tool_dispatch` before each tool body runs, and the
result (or the error) after it. `cap.messages()` returns the session as
Pydantic AI messages: after a crash and `turnlog recover`, every owed call
has a `ToolReturnPart` saying what is known, so the run resumes with the
call answered instead of running the tool again.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from pydantic_ai import messages as pm
from pydantic_ai.capabilities import AbstractCapability

from turnlog import events as ev
from turnlog.aio import AsyncLog
from turnlog.events import ToolCall
from turnlog.fold import Message
from turnlog.formats.transcript import text_of
from turnlog.integrations import begin_step, end_turn, refuse_interrupted
from turnlog.log import Log
from turnlog.log import open as open_log
from turnlog.stores import Store


@dataclass
class TurnlogCapability(AbstractCapability[Any]):
    """Records a Pydantic AI run in a turnlog session (see the module docstring)."""

    target: str | os.PathLike[str] | Store
    session_id: str | None = None
    durability: str = "barrier"
    _log: AsyncLog | None = field(default=None, init=False, repr=False)

    @property
    def log(self) -> AsyncLog:
        if self._log is None:
            handle: Log = open_log(self.target, self.session_id, durability=self.durability)  # type: ignore[arg-type]
            try:
                refuse_interrupted(handle)
            except BaseException:
                handle.close()
                raise
            self._log = AsyncLog(handle)
            self.session_id = handle.session_id
        return self._log

    def messages(self) -> list[pm.ModelMessage]:
        """The session as Pydantic AI messages, synthetic results as `ToolReturnPart`s."""
        return to_model_messages(self.log.log.messages)

    async def close(self) -> None:
        if self._log is not None:
            await self._log.close()
            self._log = None

    # -- the hooks ------------------------------------------------------------------------

    async def before_run(self, ctx: Any) -> None:
        prompt = ctx.prompt
        if prompt:
            text = prompt if isinstance(prompt, str) else "\n".join(str(p) for p in prompt)
            await self.log.user(text)

    async def before_model_request(self, ctx: Any, request_context: Any) -> Any:
        await self.log.call(begin_step, self.log.log)
        return request_context

    async def after_model_request(self, ctx: Any, *, request_context: Any, response: Any) -> Any:
        parts: list[Any] = []
        calls: list[ToolCall] = []
        for part in response.parts:
            if isinstance(part, pm.TextPart):
                parts.append({"type": "text", "text": part.content})
            elif isinstance(part, pm.ThinkingPart):
                thinking: dict[str, Any] = {"type": "thinking", "thinking": part.content}
                if part.signature:
                    thinking["signature"] = part.signature
                parts.append(thinking)
            elif isinstance(part, pm.ToolCallPart):
                calls.append(
                    ToolCall(
                        id=part.tool_call_id, name=part.tool_name, arguments=part.args_as_dict()
                    )
                )
        await self.log.assistant(parts, calls)
        return response

    async def before_tool_execute(self, ctx: Any, *, call: Any, tool_def: Any, args: Any) -> Any:
        # Durable before the tool body runs: recovery's "not started" rests on it.
        await self.log.append(
            ev.ToolDispatch(call_id=call.tool_call_id, name=call.tool_name), sync=True
        )
        return args

    async def after_tool_execute(
        self, ctx: Any, *, call: Any, tool_def: Any, args: Any, result: Any
    ) -> Any:
        await self.log.append(
            ev.ToolResult(call_id=call.tool_call_id, name=call.tool_name, content=_text(result))
        )
        return result

    async def on_tool_execute_error(
        self, ctx: Any, *, call: Any, tool_def: Any, args: Any, error: Exception
    ) -> Any:
        await self.log.append(
            ev.ToolResult(
                call_id=call.tool_call_id,
                name=call.tool_name,
                content=f"{type(error).__name__}: {error}",
                is_error=True,
            )
        )
        raise error

    async def after_run(self, ctx: Any, *, result: Any) -> Any:
        await self.log.call(end_turn, self.log.log)
        return result


def _text(value: Any) -> str:
    """A tool's return value as the text the model will read."""
    return value if isinstance(value, str) else text_of(value)


def to_model_messages(messages: list[Message] | tuple[Message, ...]) -> list[pm.ModelMessage]:
    """A turnlog transcript as Pydantic AI messages: user, system and tool
    entries become `ModelRequest` parts, assistant entries `ModelResponse`s."""
    out: list[pm.ModelMessage] = []
    request: list[Any] = []
    names: dict[str, str] = {}

    def flush() -> None:
        nonlocal request
        if request:
            out.append(pm.ModelRequest(parts=request))
            request = []

    for message in messages:
        text = ev.content_text(message.content)
        if message.role == "system":
            request.append(pm.SystemPromptPart(content=text))
        elif message.role == "user":
            request.append(pm.UserPromptPart(content=text))
        elif message.role == "tool":
            call_id = str(message.call_id)
            request.append(
                pm.ToolReturnPart(
                    tool_name=message.name or names.get(call_id, "tool"),
                    content=text,
                    tool_call_id=call_id,
                )
            )
        else:
            flush()
            parts: list[Any] = []
            content = (
                message.content
                if isinstance(message.content, list)
                else [{"type": "text", "text": message.content}]
            )
            for part in content:
                if part.get("type") == "thinking":
                    parts.append(
                        pm.ThinkingPart(
                            content=part.get("thinking", ""), signature=part.get("signature")
                        )
                    )
                elif part.get("type") == "text" and part.get("text"):
                    parts.append(pm.TextPart(content=part["text"]))
            for call in message.tool_calls:
                names[call.id] = call.name
                parts.append(
                    pm.ToolCallPart(tool_name=call.name, args=call.arguments, tool_call_id=call.id)
                )
            if parts:
                out.append(pm.ModelResponse(parts=parts))
    flush()
    return out
