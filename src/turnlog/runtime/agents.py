"""What an agent is made of: the model's `Reply`, its `Tool`s, the `AgentSpec` bounding a turn."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Final, TypeAlias

import msgspec

from turnlog.core.fold import Message
from turnlog.core.pauses import Awaiting
from turnlog.events import Content, IdempotencyValue, TokenUsage, ToolCall, check_idempotency
from turnlog.runtime import background
from turnlog.runtime.budgets import Budget, seconds

# A turn that keeps asking for tools is stopped here rather than run forever.
MAX_STEPS_PER_TURN: Final = 32


class Reply(msgspec.Struct, frozen=True, kw_only=True):
    """What a model returned: text (or parts) and the tools it asks for.

    A turn that stopped to wait for decisions returns the reply it stopped
    at with `awaiting` set: its paused calls (see `Tool.needs_approval`).
    """

    content: Content = ""
    tool_calls: tuple[ToolCall, ...] = ()
    awaiting: tuple[Awaiting, ...] = ()
    # The request's token usage, recorded on the assistant message.
    usage: TokenUsage | None = None

    @property
    def paused(self) -> bool:
        """True when the turn stopped to wait for decisions, not for good."""
        return bool(self.awaiting)


Model = Callable[[Sequence[Message]], Reply]


def check_deadline(timeout_s: float | None) -> float | None:
    """A deadline as a dispatch records it (a positive, finite float), or
    UsageError for one no call could meet or the log's reader would refuse."""
    return seconds("timeout_s", timeout_s)


#: What a tool body returns: content, or (a join tool) a delivered report.
ToolOutput: TypeAlias = Content | background.Delivered


class Tool(msgspec.Struct, frozen=True, kw_only=True):
    """A callable the model may ask for, and what running it twice would do.

    With `context=True` the tool is called as `run(context, **arguments)`,
    where `context` is a `ToolContext` (its call id makes a good idempotency
    key for the outside system). `agent_type` marks a tool that runs a
    subagent: its dispatch records `join: <agent_id>` (see `subagent_tool`).
    """

    # A coroutine function only under `turnlog.aio.arun_turn`.
    run: Callable[..., ToolOutput | Awaitable[ToolOutput]]
    idempotency: IdempotencyValue = "unknown"
    context: bool = False
    agent_type: str | None = None
    # The call's deadline in seconds (None: the loop's `timeout_s`, if any).
    # Past it the loop stops waiting and answers the call as outcome unknown
    # (D1); the step's calls not yet dispatched are answered not run (D2).
    timeout_s: float | None = None
    # A background subagent tool: the call returns an acknowledgement at once
    # and the child's report arrives later (see `subagent_tool`).
    background: bool = False
    # The agent a subagent tool runs (background ones are revived with it).
    spec: Any = None
    # The call waits for a person's approval before it runs: always (True),
    # or when `needs_approval(arguments)` says so. The turn pauses; resume it
    # with decisions (`turnlog.Approve`, `turnlog.Reject`).
    needs_approval: bool | Callable[[dict[str, Any]], bool] = False
    # The call is never run here: an outside system delivers its result
    # later (`turnlog.Deliver`); the turn pauses until then.
    external: bool = False

    def __post_init__(self) -> None:
        msgspec.structs.force_setattr(self, "timeout_s", check_deadline(self.timeout_s))
        check_idempotency(self.idempotency)


class AgentSpec(msgspec.Struct, frozen=True, kw_only=True):
    """What runs an agent: its model and its tools, and the bounds of each turn.

    `max_steps`, `max_tool_calls` and `max_turn_s` are the turn's budgets: a
    turn that spends one ends `budget_exhausted`, its undispatched calls
    answered not run (B1). `timeout_s` is the default deadline of each call.
    """

    model: Model
    tools: Mapping[str, Tool]
    max_steps: int = MAX_STEPS_PER_TURN
    max_tool_calls: int | None = None
    max_turn_s: float | None = None
    timeout_s: float | None = None

    def __post_init__(self) -> None:
        # Refused here, where the mistake is made, rather than by the first
        # run; and stored as the loop and the log use them.
        budget = Budget(
            max_steps=self.max_steps,
            max_tool_calls=self.max_tool_calls,
            max_turn_s=self.max_turn_s,
        )
        for name in ("max_steps", "max_tool_calls", "max_turn_s"):
            msgspec.structs.force_setattr(self, name, getattr(budget, name))
        msgspec.structs.force_setattr(self, "timeout_s", check_deadline(self.timeout_s))

    def limits(self, **overrides: Any) -> dict[str, Any]:
        """The keyword arguments of `run_turn` these bounds set; `overrides`
        replace them (None values are ignored)."""
        limits = {
            "max_steps": self.max_steps,
            "max_tool_calls": self.max_tool_calls,
            "max_turn_s": self.max_turn_s,
            "timeout_s": self.timeout_s,
        }
        limits.update({key: value for key, value in overrides.items() if value is not None})
        return limits
