"""The crash verdict: what a session's newest events say about it, decided in one place. Pure.

Both the full path (`plan(events)`) and the tail path (`inspect`, `recover`)
fold their events and ask `decide`; the tail reader only feeds it fewer
events. Every input `decide` reads lies after the last turn boundary (or is
counted by the tail's revival anchor), which is what makes the two equal.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

import msgspec

from turnlog import events as ev
from turnlog.core.fold import CallSighting, Fold, OpenTurn
from turnlog.core.pauses import Awaiting, awaiting_of
from turnlog.errors import refuse_a_path
from turnlog.events import Content, Event, Risk
from turnlog.text import says_something


class OwedCall(msgspec.Struct, frozen=True, kw_only=True):
    """A call of the open turn that no result answered, with its risk class."""

    call_id: str
    name: str | None
    risk: str
    rule: str
    idempotency: str | None = None


class Wait(msgspec.Struct, frozen=True, kw_only=True):
    """An owed call of the open turn that waits on a subagent: its dispatch
    says `join: <agent_id>`, or the call spawned the agent."""

    call_id: str
    name: str | None
    agent_id: str
    # The child's session id when the spawn named it; else the default name.
    child: str | None = None


class Verdict(msgspec.Struct, frozen=True, kw_only=True):
    """What recovery and revival need to know, and nothing the tail cannot see.

    `empty` is a session holding only its header; `finished` one whose last
    message answers without asking for tools, with no open turn, or in an
    open turn that owes nothing (it died before its `turn_end`), and no
    background child's report still owed.
    """

    session: ev.Session | None
    next_seq: int
    last_ts: str | None
    open_turn: OpenTurn | None
    owed: tuple[OwedCall, ...]
    revivals: int
    empty: bool
    finished: bool
    needs_response: bool
    waits: tuple[Wait, ...] = ()
    # Background children whose report is not delivered yet, by agent id.
    reports_owed: tuple[str, ...] = ()
    # Calls of the open turn paused for a decision: never owed to recovery.
    awaiting: tuple[Awaiting, ...] = ()

    @property
    def paused(self) -> bool:
        """The open turn stopped on purpose: calls wait on decisions, and
        nothing is owed to recovery. (With owed calls too, the run crashed
        while paused: recovery answers those, and the pause stands.) A turn
        whose pauses are all decided is paused until it resumes (`held`)."""
        # One rule: the open turn's own (its `awaiting` and `owed` are this
        # verdict's, read from the same calls).
        return self.open_turn is not None and self.open_turn.paused


def classify(call: CallSighting, turn: OpenTurn) -> tuple[Risk, str]:
    """The decision table (DESIGN §5): first match wins.

    Keyed on event types only. Saying "did not run" wrongly is how a duplicate
    charge happens, so every case the log cannot prove lands on
    `tool_outcome_unknown`. R2 and R3 rest on write-ahead dispatch: a turn
    showing a result with no dispatch before it was written by something
    that does not dispatch ahead, so it proves nothing about its other calls.
    """
    if call.dispatch is not None:
        return Risk.OUTCOME_UNKNOWN, "R1"
    # A call carried from a turn left open, or one no live message asks for,
    # was written in an order no turnlog writer keeps: the turn's other facts
    # prove nothing about it.
    if (
        not turn.result_without_dispatch
        and not turn.stray_dispatch
        and not call.carried
        and not call.orphaned
    ):
        if turn.dispatched_any:
            # The harness writes dispatches ahead of running tools, and it
            # wrote some in this turn: a call without one never ran.
            return Risk.NOT_STARTED, "R2"
        if call.step_closed:
            # A closed step had nothing in flight.
            return Risk.NOT_STARTED, "R3"
    return Risk.OUTCOME_UNKNOWN, "R4"


def owed_calls(turn: OpenTurn | None) -> tuple[OwedCall, ...]:
    """The open turn's unanswered calls, classified, in order of first sighting."""
    if turn is None:
        return ()
    out = []
    for call in turn.owed:
        risk, rule = classify(call, turn)
        out.append(
            OwedCall(
                call_id=call.call_id,
                name=call.name,
                risk=risk.value,
                rule=rule,
                idempotency=call.dispatch.idempotency if call.dispatch is not None else None,
            )
        )
    return tuple(out)


def waits_of(turn: OpenTurn | None) -> tuple[Wait, ...]:
    """The open turn's owed calls that wait on subagents, in call order."""
    if turn is None:
        return ()
    spawns = {spawn.call_id: spawn for spawn in turn.spawns}
    out = []
    for call in turn.owed:
        spawn = spawns.get(call.call_id)
        if (call.dispatch is not None and call.dispatch.background) or (
            spawn is not None and spawn.background
        ):
            # A background spawn is answered by its acknowledgement, never by
            # the child: recovery settles it like any other call, and the
            # child's report is delivered on its own (`turnlog.runtime.background`).
            continue
        join = call.dispatch.join if call.dispatch is not None else None
        agent_id = join or (spawn.agent_id if spawn is not None else None)
        if agent_id is None:
            continue
        child = spawn.child if spawn is not None and spawn.agent_id == agent_id else None
        out.append(Wait(call_id=call.call_id, name=call.name, agent_id=agent_id, child=child))
    return tuple(out)


# Content parts that are a model's reasoning, not something it said.
REASONING_PARTS: Final = frozenset({"thinking", "redacted_thinking", "reasoning"})


def only_reasoning(content: Content) -> bool:
    """True for content made of reasoning parts alone: a response cut after
    it thought and before it said or asked anything."""
    return (
        isinstance(content, list)
        and bool(content)
        and all(part.get("type") in REASONING_PARTS for part in content)
    )


def decide(fold: Fold) -> Verdict:
    """The verdict of a fold, full or fed from a tail."""
    turn = fold.open_turn
    last = fold.last_message()
    owed = owed_calls(turn)
    waits = waits_of(turn)
    awaiting = awaiting_of(turn)
    reports_owed = tuple(fold.reports_owed())
    # An answer says something: a reply with no text (empty, or reasoning
    # alone) is a response cut short, not a run that finished.
    answered = (
        last is not None
        and last.role == "assistant"
        and not last.tool_calls
        and says_something(last.content)
    )
    # A run whose last word is the assistant's answer, asking for nothing,
    # finished: also when it died before its `turn_end`, if that answer came
    # in the open turn and the turn owes nothing. Recovery still closes the
    # turn; nothing is left to run.
    # A run that still owes a background child's report has not finished,
    # whatever it said last: the report is delivered, or reported lost.
    finished = (
        answered
        and not awaiting
        and not reports_owed
        and (turn is None or (not owed and not waits and last is not None and last.seq > turn.seq))
    )
    return Verdict(
        session=fold.session,
        next_seq=fold.next_seq,
        last_ts=fold.last_ts,
        open_turn=turn,
        owed=owed,
        revivals=fold.revivals,
        empty=fold.next_seq <= 1 and fold.session is not None,
        finished=finished,
        needs_response=fold.needs_response,
        waits=waits,
        reports_owed=reports_owed,
        awaiting=awaiting,
    )


def verdict(events: Iterable[Event]) -> Verdict:
    """The verdict of a whole log."""
    refuse_a_path(events, function="turnlog.core.verdict", instead="turnlog.inspect(PATH)")
    return decide(Fold(events))


def is_finished(events: Iterable[Event]) -> bool:
    """True when the log's last message answers without asking for tools and
    no turn is open: the agent is done, and there is nothing to revive."""
    refuse_a_path(events, function="turnlog.is_finished", instead="turnlog.inspect(PATH).status")
    return verdict(events).finished
