"""Turn budgets: tool calls, steps and wall time a turn may spend, and the live result B1."""

from __future__ import annotations

import time
from typing import Final

import msgspec

from turnlog import events as ev
from turnlog.deadlines import describe_call
from turnlog.errors import UsageError
from turnlog.events import Risk, ToolCall

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


class Budget(msgspec.Struct, frozen=True, kw_only=True):
    """What one turn may spend. None is no bound (steps are always bounded)."""

    max_steps: int
    max_tool_calls: int | None = None
    max_turn_s: float | None = None

    def __post_init__(self) -> None:
        if self.max_steps < 1:
            raise UsageError(f"max_steps must be at least 1, not {self.max_steps}")
        if self.max_tool_calls is not None and self.max_tool_calls < 0:
            raise UsageError(f"max_tool_calls must be >= 0, not {self.max_tool_calls}")
        if self.max_turn_s is not None and self.max_turn_s <= 0:
            raise UsageError(f"max_turn_s must be > 0, not {self.max_turn_s}")


class BudgetClock:
    """What a running turn has spent of its budget, counted by this process
    from the moment the turn (or its resumption) began."""

    def __init__(self, budget: Budget) -> None:
        self.budget = budget
        self.started_s = time.monotonic()
        self.steps = 0
        self.tool_calls = 0

    def _time_spent(self) -> str | None:
        limit = self.budget.max_turn_s
        if limit is not None and time.monotonic() - self.started_s >= limit:
            return f"{limit:g} s of wall time"
        return None

    def before_step(self) -> str | None:
        """The budget a new step would overspend, or None (then the step counts)."""
        if self.steps >= self.budget.max_steps:
            return f"{self.budget.max_steps} steps"
        spent = self._time_spent()
        if spent is None:
            self.steps += 1
        return spent

    def before_call(self) -> str | None:
        """The budget dispatching one more call would overspend, or None
        (then the call counts)."""
        limit = self.budget.max_tool_calls
        if limit is not None and self.tool_calls >= limit:
            return f"{limit} tool calls"
        spent = self._time_spent()
        if spent is None:
            self.tool_calls += 1
        return spent
