"""A reference agent loop that writes events in the order recovery relies on."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

import msgspec

from turnlog.events import Content, ToolCall
from turnlog.fold import Message
from turnlog.log import Log

# A turn that keeps asking for tools is stopped here rather than run forever.
MAX_STEPS_PER_TURN: Final = 32


class Reply(msgspec.Struct, frozen=True, kw_only=True):
    """What a model returned: text (or parts) and the tools it asks for."""

    content: Content = ""
    tool_calls: tuple[ToolCall, ...] = ()


class Tool(msgspec.Struct, frozen=True, kw_only=True):
    """A callable the model may ask for, and what running it twice would do."""

    run: Callable[..., Content]
    idempotency: str = "unknown"


Model = Callable[[Sequence[Message]], Reply]


def run_turn(
    log: Log,
    model: Model,
    tools: Mapping[str, Tool],
    user_text: Content | None = None,
    *,
    max_steps: int = MAX_STEPS_PER_TURN,
) -> Reply:
    """Run one turn to its answer and return the final reply.

    The order is the contract: the user message before the turn; inside each
    step the assistant message, then for each call a durable `tool_dispatch`
    *before* the tool body runs, then its result. A crash anywhere leaves a
    log the decision table classifies honestly.
    """
    if user_text is not None:
        log.user(user_text)
    reply = Reply()
    with log.turn() as turn:
        for _ in range(max_steps):
            with log.step():
                reply = model(log.messages)
                log.assistant(reply.content, reply.tool_calls)
                for call in reply.tool_calls:
                    _run_call(log, tools, call)
            if not reply.tool_calls:
                return reply
        turn.reason = "error"
    return reply


def _run_call(log: Log, tools: Mapping[str, Tool], call: ToolCall) -> None:
    tool = tools.get(call.name)
    with log.dispatch(call, idempotency=tool.idempotency if tool else None) as running:
        if tool is None:
            running.result(f"unknown tool {call.name!r}", is_error=True)
            return
        arguments: Any = call.arguments if isinstance(call.arguments, dict) else {}
        try:
            output = tool.run(**arguments)
        except Exception as exc:  # a failing tool is a result the model sees, not a crash
            running.result(f"{type(exc).__name__}: {exc}", is_error=True)
        else:
            running.result(output)
