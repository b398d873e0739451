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


@st.composite
def rich_sessions(draw: st.DrawFn, max_turns: int = 5) -> list[Event]:
    """Sessions as any writer may leave them: call ids reused across turns,
    calls left open when their step closed and answered in a later step,
    turns whose writer does not dispatch, compactions and revivals between
    turns, turns stamped with their revival count or not, custom events."""
    items: list[ev.EventData] = [ev.Session(session_id="rich"), ev.SystemMessage(content="sys")]
    revivals = 0
    ids = st.sampled_from(["c1", "c2", "c3", "c4", "c5"])
    for turn in range(1, draw(st.integers(1, max_turns)) + 1):
        if turn > 1 and draw(st.integers(0, 4)) == 0:
            items.append(
                ev.Compaction(through_seq=draw(st.integers(1, len(items) - 1)), summary="s")
            )
        if turn > 1 and draw(st.integers(0, 4)) == 0:
            revivals += 1
            items.append(ev.RunRevived(revival=revivals))
            items.append(ev.UserMessage(content="notice", injected="revival"))
        items.append(ev.UserMessage(content=f"request {turn}"))
        stamp = revivals if draw(st.booleans()) else None
        items.append(ev.TurnStart(turn=turn, revivals=stamp))
        writes_dispatches = draw(st.integers(0, 3)) > 0
        carried: list[ToolCall] = []  # asked in an earlier step, answered later
        steps = draw(st.integers(0, 3))
        for step in range(1, steps + 1):
            items.append(ev.StepStart(turn=turn, step=step))
            if draw(st.integers(0, 5)) == 0:
                items.append(ev.Custom(type="x_note", fields={"step": step}))
            taken = {c.id for c in carried}
            calls = [
                ToolCall(id=i, name=draw(st.sampled_from(["read", "pay"])))
                for i in draw(st.lists(ids, max_size=3, unique=True))
                if i not in taken
            ]
            items.append(ev.AssistantMessage(content=f"step {step}", tool_calls=calls))
            now, later = [], []
            for c in calls:
                (later if draw(st.integers(0, 4)) == 0 else now).append(c)
            for c in [*carried, *now]:
                if writes_dispatches:
                    idem = draw(st.sampled_from([None, "read_only", "destructive"]))
                    items.append(ev.ToolDispatch(call_id=c.id, name=c.name, idempotency=idem))
                items.append(ev.ToolResult(call_id=c.id, name=c.name, content="out"))
            carried = later
            items.append(ev.StepEnd(turn=turn, step=step, outcome="ok"))
        for c in carried:
            if writes_dispatches:
                items.append(ev.ToolDispatch(call_id=c.id, name=c.name))
            items.append(ev.ToolResult(call_id=c.id, name=c.name, content="out"))
        if steps and not carried:
            items.append(ev.AssistantMessage(content="done"))
        items.append(ev.TurnEnd(reason="complete", turn=turn, steps=steps))
    return [
        Event(seq=i, data=data, ts=f"2026-11-29T00:00:{i % 60:02d}.000000Z")
        for i, data in enumerate(items)
    ]
