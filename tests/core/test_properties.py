"""The laws, over generated sessions cut at every event boundary."""

from __future__ import annotations

from collections import Counter

from hypothesis import given, settings

from strategies import rich_sessions, sessions
from turnlog import events as ev
from turnlog.core.fold import Fold, fold
from turnlog.core.recovery import interrupted, patch_dangling_tool_calls
from turnlog.events import Event
from turnlog.ops.recover import plan


def calls_in_last_turn(events: list[Event]) -> set[str]:
    start = max(i for i, e in enumerate(events) if e.type == "turn_start")
    ids: set[str] = set()
    for event in events[start:]:
        if isinstance(event.data, ev.AssistantMessage):
            ids.update(c.id for c in event.data.tool_calls)
        elif isinstance(event.data, ev.ToolDispatch):
            ids.add(event.data.call_id)
    return ids


@settings(max_examples=60, deadline=None)
@given(sessions())
def test_recovery_laws_at_every_cut(session: list[Event]) -> None:
    for cut in range(1, len(session) + 1):
        log = session[:cut]
        repairs = plan(log)
        repaired = [*log, *repairs.events]
        # Append-only: the original events survive, with their seqs.
        assert repaired[:cut] == log
        assert [e.seq for e in repaired] == list(range(len(repaired)))
        assert all(e.type != "turn_start" for e in repairs.events)
        assert all(e.origin == "recovery" for e in repairs.events)
        # No open turn, and the plan of the result is empty (idempotent).
        assert not interrupted(repaired)
        assert plan(repaired).events == ()
        if any(e.type == "turn_start" for e in log):
            results = Counter(e.data.call_id for e in repaired if isinstance(e.data, ev.ToolResult))
            for call_id in calls_in_last_turn(repaired):
                assert results[call_id] == 1, (cut, call_id)
        # Nothing was owed before the crash that the patch still finds.
        messages = fold(repaired).messages
        assert patch_dangling_tool_calls(messages) == list(messages)


@settings(max_examples=60, deadline=None)
@given(sessions())
def test_synthetic_risk_is_honest(session: list[Event]) -> None:
    # A call that has a dispatch on disk is never called "not started".
    for cut in range(1, len(session) + 1):
        log = session[:cut]
        dispatched = {e.data.call_id for e in log if isinstance(e.data, ev.ToolDispatch)}
        for event in plan(log).events:
            if isinstance(event.data, ev.ToolResult) and event.data.call_id in dispatched:
                assert event.data.risk == "tool_outcome_unknown"


@settings(max_examples=40, deadline=None)
@given(sessions())
def test_incremental_fold_equals_fresh(session: list[Event]) -> None:
    folder = Fold()
    for i, event in enumerate(session):
        folder.apply(event)
        if i % 3 == 0 or i == len(session) - 1:
            assert folder.state == fold(session[: i + 1])


@settings(max_examples=40, deadline=None)
@given(sessions())
def test_codec_round_trip(session: list[Event]) -> None:
    for event in session:
        assert ev.decode_event(ev.encode_event(event)) == event


@settings(max_examples=80, deadline=None)
@given(rich_sessions())
def test_recovery_laws_with_reused_ids_compactions_and_revivals(session: list[Event]) -> None:
    for cut in range(1, len(session) + 1):
        log = session[:cut]
        owed = [c.call_id for c in fold(log).owed_calls]
        repairs = plan(log)
        repaired = [*log, *repairs.events]
        # Append-only, contiguous, idempotent.
        assert repaired[:cut] == log
        assert [e.seq for e in repaired] == list(range(len(repaired)))
        assert plan(repaired).events == ()
        assert not interrupted(repaired)
        # Every owed call answered exactly once, and nothing else answered.
        answered = [e.data.call_id for e in repairs.events if isinstance(e.data, ev.ToolResult)]
        assert answered == owed
        assert len(set(answered)) == len(answered)


@settings(max_examples=60, deadline=None)
@given(rich_sessions())
def test_a_fold_without_a_transcript_decides_as_one_with_it(session: list[Event]) -> None:
    # Checks that stream a whole log keep no transcript; their verdict,
    # `finished` included, is the one a full fold gives.
    from turnlog.core.verdict import decide

    for cut in range(1, len(session) + 1, 2):
        log = session[:cut]
        assert decide(Fold(log, keep_transcript=False)) == decide(Fold(log))
