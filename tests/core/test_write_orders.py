"""Every write order the public API accepts recovers to a transcript every provider accepts.

Sequences of calls on a `turnlog.Log` are generated, including the orders
no loop should make (a dispatch nobody asked for, a turn inside a turn, a
compaction over a call in flight, a live `interrupted`, results and ends
out of place). Each call is either refused, writing nothing, or accepted.
The log is then cut after every event (a crash there), recovered, and
rendered for all four providers: none may reject it, every owed call is
answered exactly once, and the tail reader decides as a full fold does.
"""

from __future__ import annotations

import datetime
import sys
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings, strategies as st

import turnlog
from builders import assert_exports_valid
from turnlog import events as ev
from turnlog.core.fold import Fold, fold
from turnlog.core.tail import Tail, collect_tail
from turnlog.core.verdict import verdict
from turnlog.errors import TurnlogError
from turnlog.events import Event, ToolCall
from turnlog.ops.recover import plan
from turnlog.stores import MemoryStore

IDS = ["c1", "c2", "c3", "ghost"]
CONTENTS: list[Any] = ["", "  ", "thinking it over", [{"type": "text", "text": " \n"}]]

ids = st.sampled_from(IDS)
operations = st.one_of(
    st.tuples(st.just("user"), st.sampled_from(["more", "  "])),
    st.tuples(st.just("begin_turn")),
    st.tuples(st.just("raw_turn_start"), st.sampled_from([None, 0])),
    st.tuples(st.just("raw_turn_end"), st.sampled_from(["complete", "error", "interrupted"])),
    st.tuples(st.just("begin_step")),
    st.tuples(st.just("end_step")),
    st.tuples(st.just("raw_step_end")),
    st.tuples(
        st.just("assistant"),
        st.lists(ids, max_size=3),
        st.sampled_from(range(len(CONTENTS))),
    ),
    st.tuples(st.just("dispatch"), ids),
    st.tuples(st.just("ask_and_dispatch"), ids),
    st.tuples(st.just("result"), ids),
    st.tuples(st.just("raw_result"), ids, st.booleans()),
    st.tuples(st.just("compaction"), st.integers(0, 40)),
    st.tuples(st.just("batch"), ids),
    st.tuples(st.just("end_turn")),
    st.tuples(st.just("raw_orphaned"), ids),
    # Pauses: a call waits for a decision, which is then recorded and acted on.
    st.tuples(st.just("pause"), ids, st.sampled_from(["approval", "external", "input"])),
    st.tuples(st.just("approve"), ids),
    st.tuples(st.just("reject"), ids),
    st.tuples(st.just("deliver"), ids),
    st.tuples(st.just("expire")),
    st.tuples(st.just("raw_decision"), ids, st.sampled_from(["approved", "expired", "maybe"])),
    st.tuples(st.just("resume_turn")),
    # A step the model spoke in while a call waited, ended on that pause.
    st.tuples(st.just("paused_step_end")),
    st.tuples(st.just("ask_and_pause"), ids, st.sampled_from(["approval", "external"])),
)
# How the session opens: the user's request, an empty user message (which
# every export drops), or nothing before what the operations write.
OPENERS: list[str | None] = ["pay the invoice", "", None]
openers = st.sampled_from(OPENERS)

COUNTS: Counter[str] = Counter()


@pytest.fixture(scope="module", autouse=True)
def report_counts() -> Iterator[None]:
    yield
    if COUNTS:
        print(f"\nwrite orders: {dict(COUNTS)}", file=sys.__stderr__)


def run(log: turnlog.Log, op: tuple[Any, ...], handles: dict[str, turnlog.Dispatch]) -> None:
    kind = op[0]
    if kind == "user":
        log.user(op[1])
    elif kind == "begin_turn":
        log.begin_turn()
    elif kind == "raw_turn_start":
        log.append(ev.TurnStart(turn=(log.state.last_turn or 0) + 1, revivals=op[1]))
    elif kind == "raw_turn_end":
        log.append(ev.TurnEnd(reason=op[1]))
    elif kind == "begin_step":
        log.append(ev.StepStart())
    elif kind == "end_step":
        log.append(ev.StepEnd(outcome="ok"))
    elif kind == "raw_step_end":
        log.append(ev.StepEnd(outcome="error"))
    elif kind == "assistant":
        calls = [ToolCall(id=i, name="tool") for i in op[1]]
        log.assistant(CONTENTS[op[2]], calls)
    elif kind == "dispatch":
        handles[op[1]] = log.begin_dispatch(ToolCall(id=op[1], name="tool"))
    elif kind == "result":
        handle = handles.pop(op[1], None)
        if handle is None:
            raise turnlog.UsageError("no dispatch handle")
        handle.result("done")
    elif kind == "raw_result":
        log.append(ev.ToolResult(call_id=op[1], content="raw"), allow_undispatched=op[2])
    elif kind == "compaction":
        log.append(ev.Compaction(through_seq=op[1], summary="earlier work"))
    elif kind == "batch":
        log.append_many([ev.ToolDispatch(call_id=op[1], name="tool"), ev.ToolResult(call_id=op[1])])
    elif kind == "raw_orphaned":
        # What only recovery writes, written by a live writer.
        log.append(
            ev.ToolResult(
                call_id=op[1], content="lost", orphaned=True, risk="tool_outcome_unknown"
            ),
            origin="recovery",
        )
    elif kind == "pause":
        log.pause(op[1], kind=op[2], until="2030-01-01T00:00:00Z")
    elif kind == "approve":
        log.approve(op[1], by="alice")
    elif kind == "reject":
        log.reject(op[1], by="alice", reason="not now")
    elif kind == "deliver":
        log.deliver(op[1], "it arrived", by="erp")
    elif kind == "expire":
        log.expire(now=datetime.datetime(2031, 1, 1, tzinfo=datetime.UTC))
    elif kind == "raw_decision":
        log.append(ev.ToolDecision(call_id=op[1], decision=op[2]))
    elif kind == "resume_turn":
        log.begin_turn(resume=True)
    elif kind == "paused_step_end":
        log.append(ev.StepEnd(outcome="paused"))
    elif kind == "end_turn":
        if log.verdict().open_turn is None:
            raise turnlog.UsageError("no open turn")
        log.append(ev.TurnEnd(reason="complete"))


def expand(ops: list[tuple[Any, ...]]) -> Iterator[tuple[Any, ...]]:
    """The calls to make: `ask_and_dispatch` is a request, then its dispatch."""
    for op in ops:
        if op[0] == "ask_and_dispatch":
            yield ("assistant", [op[1]], 2)
            yield ("dispatch", op[1])
        elif op[0] == "ask_and_pause":
            yield ("assistant", [op[1]], 2)
            yield ("pause", op[1], op[2])
        else:
            yield op


def write(
    ops: list[tuple[Any, ...]], *, in_turn: bool, opener: str | None = OPENERS[0]
) -> list[Event]:
    store = MemoryStore()
    with turnlog.open(store, "orders") as log:
        if opener is not None:
            log.user(opener)
        if in_turn:
            log.begin_turn()
            log.append(ev.StepStart())
        handles: dict[str, turnlog.Dispatch] = {}
        for op in expand(ops):
            before = log.next_seq
            try:
                run(log, op, handles)
            except TurnlogError:
                # Refused: nothing may have been written.
                assert log.next_seq == before, op
                assert len(store.read("orders")) == before, op
                COUNTS["refused"] += 1
            else:
                COUNTS["accepted"] += 1
    return store.read("orders")


def decide_every_pause(events: list[Event]) -> list[Event]:
    """Act on every pause of a paused log as a resumed run does: run the
    approved calls, reject the others, then end the turn."""
    store = MemoryStore()
    store.write_session(events)
    with turnlog.open(store, "orders") as log:
        log.settle_decided()
        # A pause expired before the cut, its result not written: answered now.
        log.expire(now=datetime.datetime(2000, 1, 1, tzinfo=datetime.UTC))
        if not log.turn_open:
            return store.read("orders")  # that expiry settled the turn's last wait
        for waiting in log.awaiting:
            if waiting.decision == "approved":
                log.begin_dispatch(ToolCall(id=waiting.call_id, name="tool")).result("ran")
            else:
                log.reject(waiting.call_id, by="the test")
        with log.turn(resume=True):
            pass
    return store.read("orders")


def tail_verdict(events: list[Event]) -> Any:
    kept, revivals_before = collect_tail(reversed(events))
    header = events[0] if kept and kept[0].seq != 0 else None
    return Tail(header=header, events=tuple(kept), revivals_before=revivals_before).verdict()


def check_open_call(events: list[Event]) -> None:
    """The one-call lookup (the guard's) agrees with the open turn's snapshot."""
    folded = Fold(events)
    turn = folded.open_turn
    calls = {} if turn is None else {call.call_id: call for call in turn.calls}
    for call_id in {*calls, "no-such-call"}:
        assert folded.open_call(call_id) == calls.get(call_id)


def check_every_crash(events: list[Event]) -> None:
    for cut in range(1, len(events) + 1):
        log = events[:cut]
        owed = [call.call_id for call in fold(log).owed_calls]
        repairs = plan(log).events
        repaired = [*log, *repairs]
        COUNTS["crashes"] += 1
        # Append-only and idempotent, every owed call answered exactly once.
        assert [e.seq for e in repaired] == list(range(len(repaired)))
        assert plan(repaired).events == ()
        answered = Counter(e.data.call_id for e in repairs if isinstance(e.data, ev.ToolResult))
        assert sorted(answered) == sorted(owed) and set(answered.values()) <= {1}
        check_open_call(log)
        left = fold(repaired).open_turn
        if left is not None:
            # Nothing repairs a pause: only calls waiting on decisions are
            # left, and once decided the turn ends and every export is valid.
            assert left.paused, cut
            COUNTS["paused"] += 1
            repaired = decide_every_pause(repaired)
            assert fold(repaired).open_turn is None
        # One verdict: the tail decides as the whole log does.
        assert tail_verdict(log) == verdict(log), cut
        messages = fold(repaired).messages
        if not any(m.role == "assistant" or m.role == "tool" for m in messages):
            continue  # nothing said back yet: no request to make
        assert_exports_valid(messages)
        COUNTS["exports validated"] += 4


@settings(max_examples=150, deadline=None)
@given(st.lists(operations, max_size=24), st.booleans(), openers)
def test_every_accepted_write_order_recovers_to_valid_exports(
    ops: list[tuple[Any, ...]], in_turn: bool, opener: str | None
) -> None:
    COUNTS["sequences"] += 1
    check_every_crash(write(ops, in_turn=in_turn, opener=opener))


@pytest.mark.slow
@settings(max_examples=3000, deadline=None)
@given(st.lists(operations, max_size=40), st.booleans(), openers)
def test_every_accepted_write_order_recovers_to_valid_exports_long(
    ops: list[tuple[Any, ...]], in_turn: bool, opener: str | None
) -> None:
    COUNTS["sequences"] += 1
    check_every_crash(write(ops, in_turn=in_turn, opener=opener))
