"""Crash repairs: the events that close an open turn, and the in-memory patch. Pure."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import msgspec

from turnlog import events as ev
from turnlog.core.fold import CallSighting, Fold, Message, OpenTurn
from turnlog.core.verdict import Verdict, classify
from turnlog.errors import refuse_a_path
from turnlog.events import Event, Origin, Risk, TurnEndReason

_NOT_STARTED_TEXT = (
    "[turnlog] Tool call {what} did not run: the agent process ended before it was "
    "dispatched, so it had no side effects. Run it again if it is still needed."
)
# One honest answer for every in-flight call, whatever its idempotency: a
# read-only call's answer may be stale (the half of the batch that landed may
# have changed what it read), and nothing is ever replayed. The idempotency
# stays in the dispatch event for audits and for tools that want it.
_UNKNOWN_TEXT = (
    "[turnlog] The agent process ended while tool call {what} was in flight. It may "
    "have run, fully or in part, and its result was lost. It has NOT been retried: "
    "check the state of what it was changing before assuming either way."
)
_ORPHANED_TEXT = (
    "[turnlog] The agent process ended while tool call {what} was owed, and the message "
    "that asked for it is no longer in the transcript (compacted away, or never written). "
    "Whether it ran is unknown. This result is kept in the log for the record and is "
    "not shown to the model."
)
_NO_DISPATCH_LOG_TEXT = (
    "[turnlog] The agent process ended during the turn that requested tool call {what}. "
    "The log holds no dispatch record that could show whether the call started, so "
    "whether it ran is unknown. Check the state it was changing before running it "
    "again; do not retry it blindly."
)
_UNWIND_UNKNOWN_TEXT = (
    "[turnlog] Tool call {what} was running when the agent stopped it ({error}). It may "
    "have taken effect, fully or in part. It has NOT been retried: check the state of "
    "what it was changing before assuming either way."
)
_UNWIND_UNRECORDED_TEXT = (
    "[turnlog] Tool call {what} was left without a dispatch or a result when the agent "
    "stopped ({error}), so whether it ran is unknown. Check the state it was changing "
    "before running it again; do not retry it blindly."
)
_UNWIND_NOT_STARTED_TEXT = (
    "[turnlog] Tool call {what} did not run: the agent stopped ({error}) before "
    "dispatching it, so it had no side effects. Run it again if it is still needed."
)


def _describe(call_id: str, name: str | None) -> str:
    return f"`{name}` ({call_id})" if name else f"({call_id})"


def unwind_result(
    call_id: str, name: str | None, *, dispatched: bool, error: str, order_kept: bool = True
) -> ev.ToolResult:
    """The result a live writer records for a call its exception left unanswered.

    Live, the writer knows what the log alone cannot: while the program kept
    the write order, a call with no dispatch never ran (U2); a dispatched one
    may have (U1). When the exception is the writer refusing a broken order
    (a step closed with calls owed), an undispatched call may have run outside
    any dispatch, so it is outcome unknown too (U3).
    """
    what = _describe(call_id, name)
    if dispatched:
        risk, rule, text = Risk.OUTCOME_UNKNOWN, "U1", _UNWIND_UNKNOWN_TEXT
    elif not order_kept:
        risk, rule, text = Risk.OUTCOME_UNKNOWN, "U3", _UNWIND_UNRECORDED_TEXT
    else:
        risk, rule, text = Risk.NOT_STARTED, "U2", _UNWIND_NOT_STARTED_TEXT
    return ev.ToolResult(
        call_id=call_id,
        name=name,
        content=text.format(what=what, error=error),
        is_error=True,
        risk=risk.value,
        rule=rule,
    )


def result_text(call: CallSighting, risk: Risk, rule: str) -> str:
    """Plain words for what is known about one owed call."""
    what = _describe(call.call_id, call.name)
    if risk is Risk.NOT_STARTED:
        return _NOT_STARTED_TEXT.format(what=what)
    if rule == "R4":
        return _NO_DISPATCH_LOG_TEXT.format(what=what)
    return _UNKNOWN_TEXT.format(what=what)


def crashed_call_result(call: CallSighting) -> ev.ToolResult:
    """R1 for one call an engine runs again after its worker died inside it:
    the call's dispatch is durable and no result followed. Written with
    origin `recovery` where the run meets the call again, in the turn the
    engine carries on (`turnlog.at_most_once`)."""
    return ev.ToolResult(
        call_id=call.call_id,
        name=call.name,
        content=result_text(call, Risk.OUTCOME_UNKNOWN, "R1"),
        is_error=True,
        risk=Risk.OUTCOME_UNKNOWN.value,
        rule="R1",
    )


def _close_turn(
    turn: OpenTurn,
    *,
    next_seq: int,
    ts: str | None,
    origin: Origin,
    reason: str | None,
    error: str | None = None,
    order_kept: bool = True,
    pending: frozenset[str] = frozenset(),
    reports_owed: list[str] | None = None,
) -> list[Event]:
    """The events that close the open turn: results, step_end, then turn_end
    unless `reason` is None (a live step unwinding inside a turn that goes on).

    Calls in `pending` (waits on subagents being revived) get no result, and
    the turn stays open for them: they are answered when the children finish.
    Paused calls (`OpenTurn.waiting`) get none either: nothing repairs a
    pause. The open step is closed (`paused`) and the turn stays open for
    their decisions.
    """
    out: list[Event] = []
    seq = next_seq
    for call in turn.owed:
        if call.call_id in pending:
            continue
        if origin is Origin.UNWIND:
            data = unwind_result(
                call.call_id,
                call.name,
                dispatched=call.dispatch is not None,
                error=str(error),
                order_kept=order_kept,
            )
        else:
            risk, rule = classify(call, turn)
            data = ev.ToolResult(
                call_id=call.call_id,
                name=call.name,
                content=_ORPHANED_TEXT.format(what=_describe(call.call_id, call.name))
                if call.orphaned
                else result_text(call, risk, rule),
                is_error=True,
                risk=risk.value,
                rule=rule,
                orphaned=call.orphaned,
            )
        out.append(Event(seq=seq, data=data, ts=ts, origin=origin.value))
        seq += 1
    if pending:
        return out
    paused = bool(turn.waiting)
    if turn.open_step is not None:
        step = turn.open_step
        outcome = "paused" if paused else "error"
        data_end = ev.StepEnd(turn=step.turn, step=step.step, outcome=outcome)
        out.append(Event(seq=seq, data=data_end, ts=ts, origin=origin.value))
        seq += 1
    if reason is not None and not paused:
        turn_end = ev.TurnEnd(
            reason=reason, turn=turn.turn, steps=turn.steps, reports_owed=reports_owed or None
        )
        out.append(Event(seq=seq, data=turn_end, ts=ts, origin=origin.value))
    return out


class Plan(msgspec.Struct, frozen=True, kw_only=True):
    """The events recovery would append, and what looked wrong on the way."""

    events: tuple[Event, ...]
    warnings: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.events)


def plan_verdict(
    found: Verdict, *, pending: frozenset[str] = frozenset(), ts: str | None = None
) -> Plan:
    """The repair plan for a verdict (see `plan`). With `pending` (waits on
    subagents a tree revival brings back), only the other owed calls are
    answered and the turn stays open. `ts`: when the repair is written (a
    writer passes the time of the append, as every event has it); a plan
    made without writing takes the last event's, so it stays pure."""
    if found.open_turn is None or found.paused:
        # A paused turn owes recovery nothing: its calls wait on decisions,
        # and its bytes are left as they are, even a step left open.
        return Plan(events=())
    repairs = _close_turn(
        found.open_turn,
        next_seq=found.next_seq,
        ts=ts if ts is not None else found.last_ts,
        origin=Origin.RECOVERY,
        reason=TurnEndReason.INTERRUPTED.value,
        pending=pending,
        reports_owed=list(found.reports_owed),
    )
    return Plan(events=tuple(repairs))


def unwind_events(
    fold: Fold,
    *,
    reason: str | None,
    error: str,
    order_kept: bool = True,
    ts: str | None = None,
) -> list[Event]:
    """The events a live writer appends when an exception unwinds a step or turn.

    `reason=None` closes the owed calls and the open step only.
    """
    turn = fold.open_turn
    if turn is None:
        return []
    return _close_turn(
        turn,
        next_seq=fold.next_seq,
        ts=ts,
        origin=Origin.UNWIND,
        reason=reason,
        error=error,
        order_kept=order_kept,
        reports_owed=fold.reports_owed(),
    )


def interrupted(events: Iterable[Event]) -> bool:
    """True when the log has an open turn: the signature of a crashed run."""
    refuse_a_path(events, function="turnlog.interrupted", instead="turnlog.inspect(PATH)")
    return Fold(events).turn_open


_PATCH_TEXT = (
    "[turnlog] No result was recorded for tool call {what}; whether it ran is unknown. "
    "Check the state it was changing before running it again."
)


def patch_dangling_tool_calls(messages: Sequence[Message]) -> list[Message]:
    """Answer every unanswered tool call in a transcript, in memory only.

    Turn-blind and risk-blind: for logs you may not change, right before a
    provider request. Each patch goes right after its assistant message and
    the results already there, in call order; nothing is persisted.
    """
    refuse_a_path(
        messages,
        function="turnlog.patch_dangling_tool_calls",
        instead="turnlog.open(PATH).messages",
        takes="messages",
    )
    answered = {m.call_id for m in messages if m.role == "tool"}
    out: list[Message] = []
    pending: list[Message] = []
    for message in messages:
        if pending and message.role != "tool":
            out += pending
            pending = []
        out.append(message)
        if message.role == "assistant":
            for call in message.tool_calls:
                if call.id in answered:
                    continue
                answered.add(call.id)
                what = _describe(call.id, call.name)
                pending.append(
                    Message(
                        role="tool",
                        content=_PATCH_TEXT.format(what=what),
                        seq=message.seq,
                        call_id=call.id,
                        name=call.name,
                        is_error=True,
                        origin=Origin.PATCH.value,
                    )
                )
    out += pending
    return out
