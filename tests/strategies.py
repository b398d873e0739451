"""Hypothesis strategies: well-formed agent sessions, as a harness would write them."""

from __future__ import annotations

from hypothesis import strategies as st

from turnlog import events as ev
from turnlog.events import Event, ToolCall


@st.composite
def sessions(draw: st.DrawFn, max_turns: int = 4) -> list[Event]:
    """A complete, well-formed session; cut it anywhere to get a crash."""
    items: list[ev.EventData] = [ev.Session(session_id="prop"), ev.SystemMessage(content="sys")]
    writes_dispatches = draw(st.booleans())
    counter = 0
    for turn in range(1, draw(st.integers(1, max_turns)) + 1):
        items.append(ev.UserMessage(content=f"request {turn}"))
        items.append(ev.TurnStart(turn=turn, revivals=0))
        steps = draw(st.integers(0, 3))
        for step in range(1, steps + 1):
            items.append(ev.StepStart(turn=turn, step=step))
            calls = []
            for _ in range(draw(st.integers(0, 3))):
                counter += 1
                calls.append(
                    ToolCall(
                        id=f"call_{counter}", name=draw(st.sampled_from(["read", "pay", "rm"]))
                    )
                )
            items.append(ev.AssistantMessage(content=f"step {step}", tool_calls=calls))
            parallel = draw(st.booleans())
            if parallel and writes_dispatches:
                for c in calls:
                    items.append(
                        ev.ToolDispatch(
                            call_id=c.id,
                            name=c.name,
                            idempotency=draw(st.sampled_from([None, "read_only", "destructive"])),
                        )
                    )
                for c in calls:
                    items.append(ev.ToolResult(call_id=c.id, name=c.name, content="out"))
            else:
                for c in calls:
                    if writes_dispatches:
                        items.append(ev.ToolDispatch(call_id=c.id, name=c.name))
                    items.append(ev.ToolResult(call_id=c.id, name=c.name, content="out"))
            items.append(ev.StepEnd(turn=turn, step=step, outcome="ok"))
        items.append(ev.TurnEnd(reason="complete", turn=turn, steps=steps))
    return [
        Event(seq=i, data=data, ts=f"2026-11-29T00:00:{i % 60:02d}.000000Z")
        for i, data in enumerate(items)
    ]
