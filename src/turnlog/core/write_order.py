"""The write-order rules: which appends a live writer refuses, and why. Pure.

Every order the writer accepts must recover to a transcript every provider
accepts (DESIGN §5). An order that cannot (a dispatch nobody asked for, a
turn inside a turn, a compaction that swallows an owed call, a turn ended
with calls owed) is refused here, before anything is written; a log that has
one anyway (hand-made, imported) is still recovered by the fold's rules.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from turnlog import events as ev
from turnlog.core.fold import Fold
from turnlog.errors import UsageError, WriteOrderError
from turnlog.events import (
    IDEMPOTENCY_VALUES,
    Decision,
    EventData,
    Origin,
    PauseKind,
    TurnEndReason,
    check_idempotency,
)
from turnlog.text import says_something

# Origins of turnlog's own repairs: recovery closes what a crash left open.
_REPAIR_ORIGINS: Final = frozenset({Origin.RECOVERY.value, Origin.UNWIND.value})


def _orphaned(fold: Fold, data: ev.ToolResult, origin: str | None) -> WriteOrderError | None:
    if origin != Origin.RECOVERY:
        # An orphaned result answers its call and is never shown: written live,
        # it would leave the request in the transcript with no answer.
        return WriteOrderError(
            f"result for call {data.call_id!r} marked orphaned, which only recovery writes",
            hint="leave `orphaned` out: a live result is shown beside the call it answers",
        )
    if fold.is_requested(data.call_id):
        # Whoever writes it: the request is in the transcript, and hiding its
        # only answer leaves every provider's export invalid.
        return WriteOrderError(
            f"result for call {data.call_id!r} marked orphaned, but the transcript asks for "
            "that call",
            hint="leave `orphaned` out: only a call whose request is no longer in the "
            "transcript (compacted away, or never asked for) is settled orphaned",
        )
    return None


# What lets a paused call be answered without a dispatch: the decision that
# it will not run (rejected, expired) or that its result came from outside.
_ANSWERED_BY_DECISION: Final = frozenset(
    {Decision.REJECTED.value, Decision.EXPIRED.value, Decision.DELIVERED.value}
)
_KINDS: Final = frozenset(kind.value for kind in PauseKind)
_DECISIONS: Final = frozenset(decision.value for decision in Decision)


def _waiting_result(
    fold: Fold, data: ev.ToolResult, *, undispatched: bool = False
) -> tuple[bool, WriteOrderError | None]:
    """The rule for a result of a paused call: (True, None) accepted, (True,
    error) refused, (False, None) when the call is not paused (the usual
    rules decide). `undispatched`: the writer does not dispatch (a framework
    ran the approved call where no hook showed it starting), so an approved
    call's result comes without one."""
    call = fold.waiting_call(data.call_id)
    if call is None:
        return False, None
    decision = call.decision.decision if call.decision is not None else None
    if decision in _ANSWERED_BY_DECISION:
        return True, None
    if decision == Decision.APPROVED:
        if undispatched:
            return True, None
        return True, WriteOrderError(
            f"result for call {data.call_id!r}, approved and not yet dispatched",
            hint="run the approved call inside `with log.dispatch(call)`, as every call",
        )
    kind = call.pause.kind if call.pause is not None else "approval"
    return True, WriteOrderError(
        f"result for call {data.call_id!r}, which is paused waiting for {kind}",
        hint="record the decision first: `log.approve(...)` then dispatch it, "
        "`log.reject(...)`, or `log.deliver(...)` with the result that arrived",
    )


def _result(fold: Fold, data: ev.ToolResult, origin: str | None) -> UsageError | None:
    if not isinstance(data.content, str | list):
        return _content(data)
    if data.orphaned:
        return _orphaned(fold, data, origin)
    paused, refused = _waiting_result(fold, data)
    if paused:
        return refused
    if fold.is_dispatched(data.call_id):
        return None
    return WriteOrderError(
        f"result for call {data.call_id!r}, which the open turn has not dispatched",
        hint="dispatch it with `log.dispatch(call)` before running the tool, or pass "
        "allow_undispatched=True for results whose dispatch is unknown (an import)",
    )


def _undispatched_result(fold: Fold, data: ev.ToolResult, origin: str | None) -> UsageError | None:
    # Without a dispatch the call must still be one the open turn asked for
    # and owes: a result for anything else is one a provider rejects.
    if not isinstance(data.content, str | list):
        return _content(data)
    if data.orphaned:
        return _orphaned(fold, data, origin)
    paused, refused = _waiting_result(fold, data, undispatched=True)
    if paused:
        return refused
    if fold.is_requested(data.call_id):
        return None
    return WriteOrderError(
        f"result for call {data.call_id!r}, which no assistant message of the open turn "
        "asked for (or which is already answered)",
        hint="record the assistant message that asks for the call first; every result "
        "answers exactly one requested call",
    )


def _dispatch(fold: Fold, data: ev.ToolDispatch, origin: str | None) -> UsageError | None:
    # The order first: a dispatch that may not happen at all is refused as
    # such, whatever it says of its tool.
    if not fold.turn_open:
        return WriteOrderError(
            f"dispatch of call {data.call_id!r} outside any turn",
            hint="use `with log.turn():` first",
        )
    if fold.is_dispatched(data.call_id):
        return WriteOrderError(f"call {data.call_id!r} is already dispatched and running")
    paused = fold.waiting_call(data.call_id)
    if paused is not None and (
        paused.decision is None or paused.decision.decision != Decision.APPROVED
    ):
        state = (
            f"was {paused.decision.decision}"
            if paused.decision is not None
            else f"waits for {paused.pause.kind if paused.pause is not None else 'approval'}"
        )
        return WriteOrderError(
            f"dispatch of call {data.call_id!r}, which is paused and {state}",
            hint="a paused call runs only once approved: `log.approve(call_id)` records "
            "the decision, then dispatch it",
        )
    if not fold.is_requested(data.call_id):
        return WriteOrderError(
            f"dispatch of call {data.call_id!r}, which no assistant message of the open turn "
            "asked for (or which is already answered)",
            hint="record the assistant message that asks for the call before dispatching it; "
            "a hosted tool, which runs at the provider inside the reply, is not dispatched",
        )
    if data.idempotency is not None and data.idempotency not in IDEMPOTENCY_VALUES:
        try:
            check_idempotency(data.idempotency, tool=data.name)
        except UsageError as error:
            return error
    return None


def _paused(fold: Fold, data: ev.ToolPaused, origin: str | None) -> UsageError | None:
    if data.kind not in _KINDS:
        return UsageError(
            f"pause kind {data.kind!r} is not one of {', '.join(sorted(_KINDS))}",
            hint="'approval', 'external' (an outside system delivers the result) or 'input'",
        )
    if fold.waiting_call(data.call_id) is not None:
        return WriteOrderError(f"call {data.call_id!r} is already paused")
    if fold.is_dispatched(data.call_id):
        return WriteOrderError(
            f"pause of call {data.call_id!r}, which is already dispatched",
            hint="pause a call before it is dispatched: once dispatched it may be running",
        )
    if not fold.is_requested(data.call_id):
        return WriteOrderError(
            f"pause of call {data.call_id!r}, which no assistant message of the open turn "
            "asked for (or which is already answered)",
            hint="record the assistant message that asks for the call, then pause it",
        )
    return None


def _decision(fold: Fold, data: ev.ToolDecision, origin: str | None) -> UsageError | None:
    if data.decision not in _DECISIONS:
        return UsageError(
            f"decision {data.decision!r} is not one of {', '.join(sorted(_DECISIONS))}"
        )
    if data.decision == Decision.EXPIRED and origin != Origin.EXPIRY:
        return WriteOrderError(
            "a decision 'expired' is written by expiry only",
            hint="reject the call to decline it; `turnlog sweep` expires pauses past their "
            "deadline",
        )
    call = fold.waiting_call(data.call_id)
    decided = fold.open_call(data.call_id) if call is None else None
    if decided is not None and decided.decision is not None:
        # Acted on already (a rejection answers its call in the same write).
        by = f" by {decided.decision.by}" if decided.decision.by else ""
        return WriteOrderError(
            f"call {data.call_id!r} was already {decided.decision.decision}{by}",
            hint="a decision is final; resume the run to act on it",
        )
    if call is None:
        return WriteOrderError(
            f"decision for call {data.call_id!r}, which is not paused in the open turn",
            hint="only a call paused with `log.pause(call_id)`, and not yet acted on, takes "
            "a decision",
        )
    if call.decision is not None:
        return WriteOrderError(
            f"call {data.call_id!r} was already {call.decision.decision}",
            hint="a decision is final; resume the run to act on it",
        )
    kind = call.pause.kind if call.pause is not None else PauseKind.APPROVAL
    if data.decision == Decision.APPROVED and kind != PauseKind.APPROVAL:
        return WriteOrderError(
            f"call {data.call_id!r} waits for {kind}, not approval",
            hint="deliver its result with `log.deliver(...)`, or reject it",
        )
    # A result delivered for an approval pause is one the framework that holds
    # the decision (`decided_in`: the Agents SDK's RunState) answered where
    # turnlog could not see whether the call was approved and ran: it claims
    # no more than that. A decision kept in the log is approved or rejected.
    if (
        data.decision == Decision.DELIVERED
        and kind == PauseKind.APPROVAL
        and (call.pause is None or call.pause.decided_in is None)
    ):
        return WriteOrderError(
            f"call {data.call_id!r} waits for approval; its result is not delivered",
            hint="approve it and run it, or reject it",
        )
    return None


def _turn_start(fold: Fold, data: ev.TurnStart, origin: str | None) -> WriteOrderError | None:
    if fold.turn_open:
        return WriteOrderError(
            "turn_start while a turn is open; turns never nest",
            hint="end the open turn first, or recover the session if it crashed",
        )
    if data.revivals is not None and data.revivals != fold.revivals:
        # Tail readers trust the stamp instead of counting: it must be true.
        return WriteOrderError(
            f"turn_start stamped with {data.revivals} revivals; the log holds {fold.revivals}",
            hint="use `log.next_turn_start()`, or leave `revivals` out",
        )
    return _reports_stamp(fold, data.reports_owed, "turn_start")


def _reports_stamp(fold: Fold, stamped: list[str] | None, what: str) -> WriteOrderError | None:
    # A tail reader trusts the stamp for the reports still owed: a boundary
    # that leaves it out while reports are owed would make a session that
    # owes one read finished.
    owed = fold.reports_owed()
    if set(stamped or ()) != set(owed):
        return WriteOrderError(
            f"{what} stamped as owing the reports of {sorted(stamped or ())}; the log owes "
            f"{sorted(owed)}",
            hint="end turns with `with log.turn():` (or start them with "
            "`log.next_turn_start()`), which stamp what is owed",
        )
    return None


def _run_revived(fold: Fold, data: ev.RunRevived, origin: str | None) -> WriteOrderError | None:
    if data.revival != fold.revivals + 1:
        # The revival cap and every tail reader take this number as the count.
        return WriteOrderError(
            f"run_revived numbered {data.revival}; the next revival of this log is "
            f"{fold.revivals + 1}",
            hint="revive with `turnlog.revive(log)`, which numbers it",
        )
    return None


def _turn_end(fold: Fold, data: ev.TurnEnd, origin: str | None) -> WriteOrderError | None:
    if data.reason == TurnEndReason.INTERRUPTED and origin != Origin.RECOVERY:
        return WriteOrderError(
            "turn_end with reason 'interrupted' is written by recovery only",
            hint="a live turn ends 'complete', 'rejected', 'error' or 'cancelled'; "
            "`turnlog recover` writes 'interrupted' after a crash",
        )
    if data.reason == TurnEndReason.EXPIRED and origin != Origin.EXPIRY:
        return WriteOrderError(
            "turn_end with reason 'expired' is written by expiry only",
            hint="reject the paused calls to end the turn yourself",
        )
    if not fold.turn_open:
        return WriteOrderError("turn_end with no open turn", hint="start a turn first")
    waiting = fold.waiting_calls()
    if waiting:
        return WriteOrderError(
            f"turn_end while calls are paused for a decision: {', '.join(waiting)}",
            hint="a paused turn stays open until its calls are decided and answered; "
            "leave `with log.turn():` as it is, and resume it with `log.turn(resume=True)`",
        )
    owed = fold.owed_in_open_turn()
    if owed:
        return WriteOrderError(
            f"turn_end while calls are unanswered: {', '.join(owed)}",
            hint="record a result for every call the turn requested before ending it "
            "(`with log.turn():` does this when the block raises)",
        )
    return _reports_stamp(fold, data.reports_owed, "turn_end")


def _step_start(fold: Fold, data: ev.StepStart, origin: str | None) -> WriteOrderError | None:
    if not fold.turn_open:
        return WriteOrderError("step_start outside any turn", hint="use `with log.turn():` first")
    if fold.step_open:
        return WriteOrderError("step_start while a step is open; steps never nest")
    return None


def _step_end(fold: Fold, data: ev.StepEnd, origin: str | None) -> WriteOrderError | None:
    if not fold.step_open:
        return WriteOrderError("step_end with no open step")
    owed = fold.owed_in_open_step()
    if owed and origin not in _REPAIR_ORIGINS:
        # A closed step says nothing was in flight: recovery would call these
        # calls "not started" (R3) even if the program runs them afterwards.
        return WriteOrderError(
            f"step_end while calls of the step are unanswered: {', '.join(owed)}",
            hint="run each requested call inside `with log.dispatch(call)` and record its "
            "result before the step ends",
        )
    return None


def _assistant(fold: Fold, data: ev.AssistantMessage, origin: str | None) -> UsageError | None:
    if not isinstance(data.content, str | list):
        return _content(data)
    if fold.user_spoke is False:
        # Anthropic and Gemini refuse a conversation the assistant opens, and
        # an empty user message is dropped from every export.
        return WriteOrderError(
            "an assistant message before any user message with text",
            hint="record what the user asked first, with `log.user(...)` and a message that "
            "is not empty or only white space; every provider's transcript starts with the user",
        )
    calls = data.tool_calls
    if not calls:
        return None
    if not fold.turn_open:
        return WriteOrderError(
            "an assistant message that asks for tool calls outside any turn",
            hint="record it inside `with log.turn():`, where recovery can answer its calls",
        )
    # A loop, not comprehensions: this runs on every message asking for tools.
    ids = []
    for call in calls:
        ids.append(call.id)
    if len(set(ids)) != len(ids):
        repeated = sorted({i for i in ids if ids.count(i) > 1})
        return WriteOrderError(
            f"an assistant message asks for call id(s) {', '.join(repeated)} twice",
            hint="every tool call of a message needs its own id",
        )
    owed = fold.requested_among(ids)
    if owed:
        return WriteOrderError(
            f"an assistant message asks again for call(s) still unanswered: {', '.join(owed)}",
            hint="answer the earlier request first, or give the new call a new id",
        )
    return None


def _compaction(fold: Fold, data: ev.Compaction, origin: str | None) -> WriteOrderError | None:
    if not says_something(data.summary):
        # The summary stands in for what it replaces, as a user message: with
        # no text it is dropped from every export, and the transcript could
        # open with the assistant.
        return WriteOrderError(
            "a compaction whose summary has no text",
            hint="summarize what the compaction replaces; an empty summary leaves nothing "
            "in its place",
        )
    if data.through_seq >= fold.next_seq:
        return WriteOrderError(
            f"compaction through seq {data.through_seq}, which is not written yet "
            f"(the next seq is {fold.next_seq})"
        )
    swallowed = fold.owed_requested_through(data.through_seq)
    if swallowed:
        return WriteOrderError(
            f"compaction through seq {data.through_seq} would remove the request of owed "
            f"call(s) {', '.join(swallowed)}",
            hint="compact between turns, or only up to before the message that asked for "
            "calls still in flight",
        )
    return None


def _content(data: EventData) -> UsageError | None:
    """A message's content is text or a list of parts: anything else (None, a
    number) would be written and then refused by every reader, the session
    with it."""
    content = getattr(data, "content", "")
    if isinstance(content, str | list):
        return None
    return UsageError(
        f"{data.TYPE} content {type(content).__name__!r} is neither text nor a list of parts",
        hint='pass a string ("" for none) or a list of content parts',
    )


def _said(fold: Fold, data: EventData, origin: str | None) -> UsageError | None:
    return _content(data)


def _session(fold: Fold, data: ev.Session, origin: str | None) -> WriteOrderError | None:
    return WriteOrderError("a session header is written only at seq 0, when the log is created")


#: Each checked payload type's rule: why appending it now breaks the order, or None.
ORDER_RULES: Final[dict[type, Callable[[Fold, EventData, str | None], UsageError | None]]] = {
    ev.ToolResult: _result,  # type: ignore[dict-item]
    ev.ToolDispatch: _dispatch,  # type: ignore[dict-item]
    ev.ToolPaused: _paused,  # type: ignore[dict-item]
    ev.ToolDecision: _decision,  # type: ignore[dict-item]
    ev.TurnStart: _turn_start,  # type: ignore[dict-item]
    ev.TurnEnd: _turn_end,  # type: ignore[dict-item]
    ev.StepStart: _step_start,  # type: ignore[dict-item]
    ev.StepEnd: _step_end,  # type: ignore[dict-item]
    ev.AssistantMessage: _assistant,  # type: ignore[dict-item]
    ev.Compaction: _compaction,  # type: ignore[dict-item]
    ev.Session: _session,  # type: ignore[dict-item]
    ev.RunRevived: _run_revived,  # type: ignore[dict-item]
    ev.UserMessage: _said,
    ev.SystemMessage: _said,
}

#: The payload types whose append depends on the state of the open turn.
CHECKED_TYPES: Final = frozenset(ORDER_RULES)


def order_error(
    fold: Fold, data: EventData, origin: str | None, *, allow_undispatched: bool = False
) -> UsageError | None:
    """Why appending `data` now would break the write order (a `WriteOrderError`)
    or the vocabulary (a `UsageError`), or None."""
    rule = ORDER_RULES.get(type(data))
    if rule is None:
        return None
    if allow_undispatched and type(data) is ev.ToolResult:
        return _undispatched_result(fold, data, origin)
    return rule(fold, data, origin)
