"""The decisions of the reference turn loop, shared by its sync and asyncio shells.

`run_turn` and `arun_turn` differ only in how they wait (a thread, a task)
and how they run a step's calls (in order, or together). What a turn does at
each edge of a step — whether another step may start, whether an answer
ends the turn or waits for a background report, how a failing or unknown
tool reads to the model — is decided here, once.
"""

from __future__ import annotations

import enum
from collections.abc import Callable

from turnlog.events import TurnEndReason
from turnlog.runtime.agents import Reply
from turnlog.runtime.budgets import Budget, BudgetClock

BUDGET_EXHAUSTED = TurnEndReason.BUDGET_EXHAUSTED.value


class Next(enum.Enum):
    """What the turn does once a step (or the wait after an answer) is over."""

    STEP = "step"  # run another step
    WAIT = "wait"  # the model answered while background children run: wait for a report
    END = "end"  # the turn ends `complete`
    SPENT = "spent"  # the turn ends `budget_exhausted`


class TurnRules:
    """One turn's bounds and the decisions at its steps' edges."""

    __slots__ = ("await_background", "clock")

    def __init__(
        self,
        *,
        max_steps: int,
        max_tool_calls: int | None,
        max_turn_s: float | None,
        await_background: bool,
    ) -> None:
        self.clock = BudgetClock(
            Budget(max_steps=max_steps, max_tool_calls=max_tool_calls, max_turn_s=max_turn_s)
        )
        self.await_background = await_background

    def may_step(self) -> bool:
        """Whether another step may start (False: the budget is spent)."""
        return self.clock.before_step() is None

    def after_step(self, reply: Reply, spent: str | None) -> Next:
        """A step ended with `reply`; `spent` names a budget its calls spent."""
        if spent is not None:
            return Next.SPENT
        if reply.tool_calls:
            return Next.STEP
        return Next.WAIT if self.await_background else Next.END

    def wait_s(self) -> float | None:
        """How long an answer may wait for a background report: the turn's
        remaining time. A report that comes later goes to the next turn."""
        return self.clock.remaining_s()

    def after_wait(self, got_report: bool, children_running: Callable[[], bool]) -> Next:
        """The wait after an answer ended, with a report or without: a report
        is read in another step; a turn whose time ran out while children
        still run ends `budget_exhausted`, else `complete`."""
        if got_report:
            return Next.STEP
        if self.clock.time_spent() is not None and children_running():
            return Next.SPENT
        return Next.END


def tool_error_text(error: BaseException) -> str:
    """What the model reads when a tool raised: a failing tool is a result, not a crash."""
    return f"{type(error).__name__}: {error}"


def unknown_tool_text(name: str) -> str:
    """What the model reads when it asked for a tool the agent does not have."""
    return f"unknown tool {name!r}"
