"""Replay (`turnlog.core.replay`): an engine run executed again meets its earlier writes, in order."""

from __future__ import annotations

import pytest

from builders import assistant, dispatch, number
from turnlog import events as ev
from turnlog.core.replay import Replay
from turnlog.errors import ReplayDivergedError
from turnlog.events import Event, ToolCall

C1, C2 = ToolCall(id="c1", name="a"), ToolCall(id="c2", name="b")


def run_events() -> list[Event]:
    """A run's writes: its turn, a prompt, a step asking two calls that
    finished in the other order, then a reply."""
    return number(
        [
            ev.TurnStart(turn=1),
            ev.UserMessage(content="go"),
            ev.StepStart(turn=1, step=1),
            assistant(C1, C2),
            dispatch("c1", "a"),
            dispatch("c2", "b"),
            ev.ToolResult(call_id="c2", name="b", content="B"),
            ev.ToolResult(call_id="c1", name="a", content="A"),
            ev.StepEnd(turn=1, step=1, outcome="ok"),
        ]
    )[1:]


def replay_of(events: list[Event]) -> tuple[Replay, list[Event]]:
    applied: list[Event] = []
    return Replay(events, applied.append), applied


def test_writes_made_again_are_met_and_applied_in_the_log_order() -> None:
    events = run_events()
    replay, applied = replay_of(events)
    assert replay.match(ev.TurnStart(turn=1), None) is events[0]
    assert replay.match(ev.UserMessage(content="go"), None) is events[1]
    assert replay.match(ev.StepStart(turn=1, step=1), None) is events[2]
    assert replay.match(assistant(C1, C2), None) is events[3]
    # The calls' events follow the message at once: a finished step writes
    # nothing again, so they are applied without waiting for a write.
    assert applied == events[:8]
    assert replay.match(ev.StepEnd(turn=1, step=1, outcome="ok"), None) is events[8]
    assert replay.done and applied == events
    assert replay.match(ev.UserMessage(content="next"), None) is None


def test_a_call_event_is_met_by_its_call_id_ahead_of_its_place() -> None:
    events = run_events()
    extra = number([ev.UserMessage(content="x")])[1]
    # A message between the answers: c1's result waits behind it.
    pending = [*events[:6], extra, events[7], events[6]]
    replay, applied = replay_of(pending)
    for event in pending[:4]:
        replay.match(event.data, None)
    assert replay.recorded_result("c2") is events[6]
    found = replay.match(ev.ToolResult(call_id="c2", name="b", content="B"), None)
    assert found is events[6] and events[6] not in applied  # applied when it comes up


@pytest.mark.parametrize(
    ("data", "origin"),
    [
        (ev.UserMessage(content="something else"), None),
        (ev.UserMessage(content="go"), "revival"),
        (ev.SystemMessage(content="go"), None),
    ],
)
def test_any_other_write_diverges(data: ev.EventData, origin: str | None) -> None:
    replay, applied = replay_of(run_events())
    replay.match(ev.TurnStart(turn=1), None)
    with pytest.raises(ReplayDivergedError, match="seq 2"):
        replay.match(data, origin)
    assert len(applied) == 1


def test_a_call_event_the_log_does_not_hold_diverges() -> None:
    replay, _ = replay_of(run_events())
    with pytest.raises(ReplayDivergedError, match="tool_dispatch of call 'c9'"):
        replay.match(dispatch("c9"), None)


def test_a_decision_and_the_result_it_wrote_are_both_met_when_made_again() -> None:
    """A rejection (or a delivery) is one batch: the decision, then the
    result it writes. Made again, the decision is met and the result behind
    it applied at once; the result's own write is then met, not written twice."""
    decision = ev.ToolDecision(call_id="c2", decision="rejected", by="alice")
    result = ev.ToolResult(call_id="c2", name="b", content="declined")
    events = number([ev.UserMessage(content="go"), decision, result])[1:]
    replay, applied = replay_of(events)
    assert replay.match(ev.UserMessage(content="go"), None) is events[0]
    assert replay.match(decision, None) is events[1]
    assert applied == events and replay.done
    assert replay.match(result, None) is events[2]
    # Met once: a later write of it is new (and the write order refuses it).
    assert replay.match(result, None) is None


def test_a_call_event_applied_ahead_is_met_only_by_the_same_write() -> None:
    """A result the replay applied as it reached the front is met by the
    same result made again, never by a different write for the call."""
    stored = ev.ToolResult(call_id="c1", name="a", content="A")
    events = number([stored])[1:]
    replay, applied = replay_of(events)
    assert applied == events and replay.done
    assert replay.match(ev.ToolResult(call_id="c1", name="a", content="other"), None) is None
    assert replay.match(stored, None) is events[0]
