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

import sys
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import turnlog
from builders import assert_exports_valid
from turnlog import events as ev
from turnlog.core.fold import fold
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


def tail_verdict(events: list[Event]) -> Any:
    kept, revivals_before = collect_tail(reversed(events))
    header = events[0] if kept and kept[0].seq != 0 else None
    return Tail(header=header, events=tuple(kept), revivals_before=revivals_before).verdict()


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
