"""The reference loop's decisions at a step's edges (runtime/turn_rules.py), which
`run_turn` and `arun_turn` both take: one table, two shells."""

from __future__ import annotations

import pytest

from turnlog.events import ToolCall
from turnlog.runtime.agents import Reply
from turnlog.runtime.turn_rules import Next, TurnRules, tool_error_text, unknown_tool_text

ASKS = Reply(tool_calls=[ToolCall(id="c1", name="ls")])
ANSWERS = Reply(content="done")


def rules(*, await_background: bool = True, max_steps: int = 3) -> TurnRules:
    return TurnRules(
        max_steps=max_steps, max_tool_calls=None, max_turn_s=None, await_background=await_background
    )


@pytest.mark.parametrize(
    ("reply", "spent", "await_background", "expected"),
    [
        (ASKS, None, True, Next.STEP),
        (ASKS, "max_tool_calls", True, Next.SPENT),
        (ANSWERS, "max_turn_s", True, Next.SPENT),
        (ANSWERS, None, True, Next.WAIT),
        (ANSWERS, None, False, Next.END),
    ],
)
def test_after_a_step(
    reply: Reply, spent: str | None, await_background: bool, expected: Next
) -> None:
    assert rules(await_background=await_background).after_step(reply, spent) is expected


def test_after_the_wait_a_report_is_read_in_another_step() -> None:
    turn = rules()
    assert turn.after_wait(True, lambda: True) is Next.STEP
    # Time left: an answer with children still running ends the turn complete.
    assert turn.after_wait(False, lambda: True) is Next.END


def test_the_step_budget_is_counted_by_may_step() -> None:
    turn = rules(max_steps=2)
    assert [turn.may_step() for _ in range(3)] == [True, True, False]


def test_what_the_model_reads_of_a_failing_or_unknown_tool() -> None:
    assert tool_error_text(ValueError("bad city")) == "ValueError: bad city"
    assert unknown_tool_text("ls") == "unknown tool 'ls'"
