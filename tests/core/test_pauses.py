"""Pauses as the log proves them: what waits, what a decision allows, what recovery leaves."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

import turnlog
from builders import dispatch, number, paused_session, put, session, step_start, turn_start
from turnlog import events as ev
from turnlog.errors import UsageError, WriteOrderError
from turnlog.events import ToolCall
from turnlog.ops.sweep import sweep
from turnlog.stores import JSONLStore, MemoryStore

PAY = ToolCall(id="c1", name="pay", arguments={"amount": 5})
LOOK = ToolCall(id="c2", name="look")


# Where a framework keeps a pause's decision, for the pauses it owns.
KEPT = "the Agents SDK's RunState"


def paused_log(
    store: turnlog.Store, *, until: str | None = None, decided_in: str | None = None
) -> None:
    with turnlog.open(store, "s", create=True) as log:
        log.user("pay bob 5")
        with log.turn(), log.step():
            log.assistant("", [PAY, LOOK])
            log.pause("c1", until=until, prompt="pay bob 5?", decided_in=decided_in)
            with log.dispatch(LOOK) as running:
                running.result("balance 10")


def test_a_pause_leaves_the_turn_open_and_owes_recovery_nothing() -> None:
    store = MemoryStore()
    paused_log(store)
    events = store.read("s")
    assert [e.type for e in events[-3:]] == ["tool_dispatch", "tool_result", "step_end"]
    assert events[-1].data == ev.StepEnd(turn=1, step=1, outcome="paused")
    found = turnlog.inspect(store, "s")
    assert (found.status, found.revivable, found.reason) == ("paused", False, "paused")
    assert found.owed_calls == ()
    (waiting,) = found.awaiting
    assert (waiting.call_id, waiting.name, waiting.kind, waiting.prompt) == (
        "c1",
        "pay",
        "approval",
        "pay bob 5?",
    )
    assert waiting.since == events[5].ts
    assert turnlog.recover(store, "s").plan.events == ()
    assert turnlog.revive(store, "s").reason == "paused"
    assert store.read("s") == events
    # The revival cap counts no pause.
    assert turnlog.inspect(store, "s").revivals == 0


def test_a_framework_that_holds_the_approval_delivers_its_answer() -> None:
    """The Agents SDK decides on its RunState: turnlog records the answer it
    saved as delivered (neither approved nor rejected: the log cannot tell),
    and an approval recorded here may be answered without a dispatch by a
    writer that does not dispatch."""
    store = MemoryStore()
    paused_log(store, decided_in=KEPT)
    with turnlog.open(store, "s") as log:
        decision, result = log.deliver(
            "c1", "Tool execution was not approved.", by="openai-agents", keeper=KEPT
        )
        assert decision.data.decision == "delivered" and result.data.risk is None
        # Answered, and held for the resume that lets the model read it.
        assert log.paused and not log.awaiting and log.verdict().owed == ()
    store = MemoryStore()
    paused_log(store)
    with turnlog.open(store, "s") as log:
        log.approve("c1")
        with pytest.raises(WriteOrderError, match="approved and not yet dispatched"):
            log.append(ev.ToolResult(call_id="c1", content="paid"))
        log.append(ev.ToolResult(call_id="c1", content="paid"), allow_undispatched=True)
        assert log.paused and not log.awaiting and log.verdict().owed == ()


def test_a_pause_dropped_by_a_new_run_expires_for_its_reason() -> None:
    store = MemoryStore()
    paused_log(store)
    with turnlog.open(store, "s") as log:
        written = log.expire(because="a new run began before any decision")
        decision, result = written[0].data, written[1].data
        assert isinstance(decision, ev.ToolDecision) and decision.decision == "expired"
        assert isinstance(result, ev.ToolResult) and result.rule == "A2"
        assert "a new run began before any decision" in str(result.content)
        assert not log.turn_open


def test_opening_a_paused_session_is_not_a_crash() -> None:
    store = MemoryStore()
    paused_log(store)
    with turnlog.open(store, "s") as log:
        assert not log.crashed and log.paused
        with pytest.raises(WriteOrderError, match="paused and waits for approval"):
            log.begin_dispatch(PAY)
        with pytest.raises(WriteOrderError, match="paused waiting for approval"):
            log.append(ev.ToolResult(call_id="c1", content="paid"), allow_undispatched=True)
        with pytest.raises(WriteOrderError, match="calls are paused"):
            log.append(ev.TurnEnd(reason="complete"))
        with pytest.raises(WriteOrderError, match="written by expiry only"):
            log.append(ev.ToolDecision(call_id="c1", decision="expired"))
        with pytest.raises(WriteOrderError, match="waits for approval; its result is not"):
            log.deliver("c1", "paid")
        log.approve("c1", by="alice")
        with pytest.raises(WriteOrderError, match="already approved"):
            log.reject("c1")
        # Approved and not yet dispatched: still paused, still owed to nobody.
        assert log.paused and log.awaiting[0].decision == "approved"
        assert log.verdict().owed == ()
        with log.turn(resume=True), log.step():
            with log.dispatch(PAY) as running:
                running.result("paid bob 5")
            log.assistant("paid")
    assert turnlog.inspect(store, "s").status == "finished"


def test_a_rejection_answers_the_call_as_not_run() -> None:
    store = MemoryStore()
    paused_log(store)
    with turnlog.open(store, "s") as log:
        decision, result = log.reject("c1", by="alice", reason="wrong account")
        assert isinstance(decision.data, ev.ToolDecision) and decision.origin == "decision"
        assert isinstance(result.data, ev.ToolResult)
        assert (result.data.rule, result.data.risk, result.data.is_error) == (
            "A1",
            "tool_not_started",
            True,
        )
        assert "alice declined it (wrong account)" in ev.content_text(result.data.content)
        # Nothing waits, and the turn is held for the resume the model reads it in.
        assert log.paused and not log.awaiting and log.turn_open
        with log.turn(resume=True):
            pass
    assert store.read("s")[-1].data == ev.TurnEnd(reason="complete", turn=1, steps=1)


def test_pausing_needs_an_owed_call_never_dispatched() -> None:
    with turnlog.open(MemoryStore(), "s") as log:
        log.user("go")
        with log.turn(), log.step():
            log.assistant("", [PAY, LOOK])
            with pytest.raises(WriteOrderError, match="no assistant message"):
                log.pause("ghost")
            with pytest.raises(UsageError, match="pause kind 'later'"):
                log.pause("c1", kind="later")
            with pytest.raises(UsageError, match="no time zone"):
                log.pause("c1", until=dt.datetime(2030, 1, 1))
            running = log.begin_dispatch(LOOK)
            with pytest.raises(WriteOrderError, match="already dispatched"):
                log.pause("c2")
            running.result("ok")
            log.pause("c1")
            with pytest.raises(WriteOrderError, match="already paused"):
                log.pause("c1")


def test_a_crash_beside_a_pause_is_repaired_and_the_pause_stands() -> None:
    store = MemoryStore()
    # The process was killed while `look` ran, after `pay` was paused.
    put(
        store,
        number(
            [
                session("s"),
                ev.UserMessage(content="pay bob 5"),
                turn_start(1),
                step_start(1, 1),
                ev.AssistantMessage(tool_calls=[PAY, LOOK]),
                ev.ToolPaused(call_id="c1", name="pay", kind="approval"),
                dispatch("c2", "look"),
            ]
        ),
    )
    found = turnlog.inspect(store, "s")
    assert found.status == "interrupted"
    assert [(c.call_id, c.rule) for c in found.owed_calls] == [("c2", "R1")]
    repairs = turnlog.recover(store, "s").plan.events
    assert [e.type for e in repairs] == ["tool_result", "step_end"]
    assert repairs[-1].data == ev.StepEnd(turn=1, step=1, outcome="paused")
    assert turnlog.inspect(store, "s").status == "paused"
    assert turnlog.recover(store, "s").plan.events == ()


def test_expiry_settles_undecided_pauses_as_not_run(tmp_path: Path) -> None:
    store = JSONLStore(tmp_path)
    put(store, paused_session("due", until="2026-01-01T00:00:00Z"))
    put(store, paused_session("open"))
    before = (tmp_path / "open.jsonl").read_bytes()
    swept = {s.session_id: s for s in sweep(store)}
    assert swept["due"].action == "expired" and swept["due"].appended == 3
    assert swept["open"].action == "skipped"
    assert swept["open"].reason.startswith("paused: waiting for approval of pay (c1) since ")
    assert (tmp_path / "open.jsonl").read_bytes() == before
    events = store.read("due")
    assert [e.type for e in events[-3:]] == ["tool_decision", "tool_result", "turn_end"]
    assert {e.origin for e in events[-3:]} == {"expiry"}
    assert events[-2].data.rule == "A2"  # type: ignore[union-attr]
    assert "approval expired at 2026-01-01T00:00:00Z" in ev.content_text(
        events[-2].data.content  # type: ignore[union-attr]
    )
    assert events[-1].data.reason == "expired"  # type: ignore[union-attr]
    assert turnlog.inspect(store, "due").status == "idle"
    # With a maximum age, a pause with no deadline expires too.
    swept_again = sweep(store, paused_max_age_s=60)
    assert [(s.session_id, s.action) for s in swept_again] == [("open", "expired")]
    assert "no decision came within 1m" in ev.content_text(
        store.read("open")[-2].data.content  # type: ignore[union-attr]
    )


def test_a_decided_pause_never_expires() -> None:
    store = MemoryStore()
    paused_log(store, until="2026-01-01T00:00:00Z")
    with turnlog.open(store, "s") as log:
        log.approve("c1")
        assert log.expire() == []
        assert log.paused


def test_a_turn_whose_pauses_are_decided_reads_paused_until_it_resumes(tmp_path: Path) -> None:
    """Rejected from outside (the command line), the only paused call is
    answered at once; the turn is held for its resume, and neither inspect
    nor a sweep takes it for an interrupted one."""
    store = JSONLStore(tmp_path)
    paused_log(store)
    with turnlog.open(store, "s") as log:
        log.reject("c1", by="alice")
    before = store.read("s")
    found = turnlog.inspect(store, "s")
    assert (found.status, found.awaiting, found.owed_calls) == ("paused", (), ())
    assert turnlog.recover(store, "s").plan.events == ()
    assert store.read("s") == before


def test_a_framework_keeps_its_decisions() -> None:
    """A pause whose decision a framework keeps (`decided_in`) is decided by
    that keeper only: a decision from anywhere else is refused, nothing written."""
    store = MemoryStore()
    paused_log(store, decided_in=KEPT)
    with turnlog.open(store, "s") as log:
        before = log.next_seq
        for decide in (log.approve, log.reject):
            with pytest.raises(UsageError, match="kept in the Agents SDK's RunState"):
                decide("c1", by="alice")
        assert log.next_seq == before
        log.approve("c1", keeper=KEPT)
        assert log.awaiting[0].decision == "approved"


def test_an_approved_call_dropped_by_its_framework_may_have_run() -> None:
    store = MemoryStore()
    paused_log(store, decided_in=KEPT)
    with turnlog.open(store, "s") as log:
        log.approve("c1", keeper=KEPT)
        (answer,) = log.expire(because="a new run began")[:1]
        assert isinstance(answer.data, ev.ToolResult)
        assert (answer.data.rule, answer.data.risk) == ("A3", "tool_outcome_unknown")
        assert not log.turn_open


def test_an_approved_call_answered_without_a_dispatch_proves_nothing_of_others() -> None:
    """A writer that ran an approved call with no dispatch (a framework whose
    hook never showed it start) does not dispatch ahead: its turn's other
    undispatched calls read R4, not R2."""
    store = MemoryStore()
    with turnlog.open(store, "s", create=True) as log:
        log.user("go")
        log.begin_turn()
        log.begin_step()
        log.assistant("", [PAY, LOOK])
        log.pause("c1")
        log.approve("c1")
        with log.dispatch(LOOK) as running:
            running.result("ok")
        log.append(ev.ToolResult(call_id="c1", content="paid"), allow_undispatched=True)
        log.end_step()
        log.begin_step()
        log.assistant("", [ToolCall(id="c3", name="pay")])
    (owed,) = turnlog.verdict(store.read("s")).owed
    assert (owed.call_id, owed.rule) == ("c3", "R4")


def test_a_pause_due_before_year_1000_is_stored_as_a_reader_reads_it() -> None:
    store = MemoryStore()
    paused_log(store, until="0999-06-01T00:00:00+00:00")
    with turnlog.open(store, "s") as log:
        (waiting,) = log.awaiting
        assert waiting.until == "0999-06-01T00:00:00.000000Z"
        assert [e.type for e in log.expire()] == ["tool_decision", "tool_result", "turn_end"]


@pytest.mark.parametrize("max_age_s", [float("nan"), float("inf"), -5])
def test_an_impossible_maximum_age_is_refused(max_age_s: float) -> None:
    store = MemoryStore()
    paused_log(store)
    with turnlog.open(store, "s") as log:
        with pytest.raises(UsageError, match="finite number of seconds"):
            log.expire(max_age_s=max_age_s)
        assert log.paused and len(log.awaiting) == 1
