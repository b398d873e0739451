"""Turn budgets: tool calls, steps and wall time a turn may spend, and the live result B1."""

from __future__ import annotations

import math
import numbers
import time
from typing import Final

import msgspec

from turnlog import events as ev
from turnlog.errors import UsageError
from turnlog.events import Risk, ToolCall
from turnlog.runtime.deadlines import describe_call

_BUDGET_SPENT_TEXT: Final = (
    "[turnlog] Tool call {what} was not run: the turn's budget of {budget} was spent, "
    "so it was not dispatched. It had no side effects. Run it again in a later turn "
    "if it is still needed."
)


def budget_spent_result(call: ToolCall, budget: str) -> ev.ToolResult:
    """B1: a call left undispatched because a budget of the turn was spent.
    A live writer's claim, like U2: it knows it did not dispatch the call."""
    return ev.ToolResult(
        call_id=call.id,
        name=call.name,
        content=_BUDGET_SPENT_TEXT.format(what=describe_call(call.id, call.name), budget=budget),
        is_error=True,
        risk=Risk.NOT_STARTED.value,
        rule="B1",
    )


def seconds(name: str, value: object) -> float | None:
    """A bound in seconds as the log stores it: a positive, finite float.

    Checked where it is given (a `Tool`, an `AgentSpec`, a loop's keyword),
    not where it is first used: a value the log's reader would refuse
    (`true`, a `Fraction`) must never reach a dispatch, and one that means
    no bound in disguise (`nan`, `inf`) must not pass for a bound.
    """
    if value is None:
        return None
    # bool is an int to Python, but `timeout_s=True` is a mistake, not 1 s.
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        number = float(value)
        if math.isfinite(number) and number > 0:
            return number
    raise UsageError(
        f"{name} must be a positive number of seconds, not {value!r}",
        hint=f"give {name} a positive, finite int or float (None for no bound)",
    )


def count(name: str, value: object, *, minimum: int, optional: bool = True) -> int | None:
    """A bound that counts (steps, tool calls): an int of at least `minimum`."""
    if value is None and optional:
        return None
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        number = int(value)
        if number >= minimum:
            return number
    bound = " (None for no bound)" if optional else ""
    raise UsageError(
        f"{name} must be an int of at least {minimum}, not {value!r}",
        hint=f"give {name} a whole number, {minimum} or more{bound}",
    )


class Budget(msgspec.Struct, frozen=True, kw_only=True):
    """What one turn may spend. None is no bound (steps are always bounded)."""

    max_steps: int
    max_tool_calls: int | None = None
    max_turn_s: float | None = None

    def __post_init__(self) -> None:
        # Stored as checked: an int count and a float of seconds, whatever
        # number type they were given as.
        steps = count("max_steps", self.max_steps, minimum=1, optional=False)
        msgspec.structs.force_setattr(self, "max_steps", steps)
        calls = count("max_tool_calls", self.max_tool_calls, minimum=0)
        msgspec.structs.force_setattr(self, "max_tool_calls", calls)
        msgspec.structs.force_setattr(self, "max_turn_s", seconds("max_turn_s", self.max_turn_s))


class BudgetClock:
    """What a running turn has spent of its budget, counted by this process
    from the moment the turn (or its resumption) began."""

    def __init__(self, budget: Budget) -> None:
        self.budget = budget
        self.started_s = time.monotonic()
        self.steps = 0
        self.tool_calls = 0

    def time_spent(self) -> str | None:
        """The wall-time budget, described, when the turn has spent it."""
        limit = self.budget.max_turn_s
        if limit is not None and time.monotonic() - self.started_s >= limit:
            return f"{limit:g} s of wall time"
        return None

    def remaining_s(self) -> float | None:
        """The seconds of wall time the turn has left (None: no bound)."""
        limit = self.budget.max_turn_s
        if limit is None:
            return None
        return max(0.0, limit - (time.monotonic() - self.started_s))

    def before_step(self) -> str | None:
        """The budget a new step would overspend, or None (then the step counts)."""
        if self.steps >= self.budget.max_steps:
            return f"{self.budget.max_steps} steps"
        spent = self.time_spent()
        if spent is None:
            self.steps += 1
        return spent

    def before_call(self) -> str | None:
        """The budget dispatching one more call would overspend, or None
        (then the call counts)."""
        limit = self.budget.max_tool_calls
        if limit is not None and self.tool_calls >= limit:
            return f"{limit} tool calls"
        spent = self.time_spent()
        if spent is None:
            self.tool_calls += 1
        return spent
