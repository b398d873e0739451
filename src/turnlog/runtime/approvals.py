"""The reference loops' pauses: which calls wait for a decision, and what a resume decides."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypeAlias

import msgspec

from turnlog.core.fold import Message
from turnlog.core.pauses import Awaiting, decision_fits, undecided as pauses_undecided
from turnlog.errors import UsageError
from turnlog.events import Content, Decision, PauseKind, ToolCall
from turnlog.handle.log import Log
from turnlog.handle.pauses import DecisionRecord, decide_together
from turnlog.runtime.agents import Tool


class Approve(msgspec.Struct, frozen=True, kw_only=True):
    """Run the paused call (once, dispatched write-ahead) when the turn resumes."""

    by: str | None = None
    reason: str | None = None


class Reject(msgspec.Struct, frozen=True, kw_only=True):
    """Never run the paused call; the model reads that it was declined (A1)."""

    by: str | None = None
    reason: str | None = None


class Deliver(msgspec.Struct, frozen=True, kw_only=True):
    """The result an outside system (or a person) gives a paused `external` or `input` call."""

    content: Content
    by: str | None = None
    is_error: bool = False


#: What a resume may say of one paused call.
DecisionInput: TypeAlias = Approve | Reject | Deliver


def pause_kind(tool: Tool | None, call: ToolCall) -> str | None:
    """The kind of pause `call` takes before it may run, or None to run it now."""
    if tool is None:
        return None
    if tool.external:
        return PauseKind.EXTERNAL.value
    needs = tool.needs_approval
    if callable(needs):
        arguments: Any = call.arguments if isinstance(call.arguments, dict) else {}
        needs = bool(needs(arguments))
    return PauseKind.APPROVAL.value if needs else None


def split_step(
    tools: Mapping[str, Tool], calls: Sequence[ToolCall]
) -> tuple[list[tuple[ToolCall, str]], list[ToolCall]]:
    """A step's calls: those to pause (with their kind), then those to run now, in order."""
    to_pause: list[tuple[ToolCall, str]] = []
    to_run: list[ToolCall] = []
    for call in calls:
        kind = pause_kind(tools.get(call.name), call)
        if kind is None:
            to_run.append(call)
        else:
            to_pause.append((call, kind))
    return to_pause, to_run


# The decision each input records, as the log names it.
_DECISION_OF: dict[type, str] = {
    Approve: Decision.APPROVED.value,
    Reject: Decision.REJECTED.value,
    Deliver: Decision.DELIVERED.value,
}


def record_decisions(
    log: Log, decisions: Mapping[str, DecisionInput], *, keeper: str | None = None
) -> None:
    """Record the decisions in one write: all of them or none. Every one is
    checked against the log first (it names a call that waits undecided, and
    fits its pause), so a bad one writes none, and a crash cannot leave some
    recorded and the rest not. The one way a decision mapped from an answer
    reaches a log: the reference loops' resumes and every framework's
    (`keeper` names where a framework keeps them: its pauses are decided
    there only)."""
    with log.lock:
        waiting = {one.call_id: one for one in log.awaiting}
        records = []
        for call_id, decision in decisions.items():
            _check_decision(waiting.get(call_id), call_id, decision)
            kind = Decision(_DECISION_OF[type(decision)])
            if isinstance(decision, Deliver):
                record = DecisionRecord(
                    kind,
                    call_id,
                    by=decision.by,
                    content=decision.content,
                    is_error=decision.is_error,
                )
            else:
                record = DecisionRecord(kind, call_id, by=decision.by, reason=decision.reason)
            records.append(record)
        if records:
            decide_together(log.held, records, keeper=keeper)


def _check_decision(one: Awaiting | None, call_id: str, decision: object) -> None:
    if one is None:
        raise UsageError(
            f"a decision for call {call_id!r}, which does not wait in the open turn",
            hint="decide only calls the paused run lists (`reply.awaiting`, "
            "`turnlog inspect`); a call decided before is not decided again",
        )
    if one.decision is not None:
        raise UsageError(
            f"call {call_id!r} was already {one.decision}",
            hint="a decision is final; resume without it",
        )
    if not isinstance(decision, Approve | Reject | Deliver):
        raise UsageError(
            f"the decision for {call_id!r} is {decision!r}",
            hint="pass turnlog.Approve(), turnlog.Reject(reason=...) or "
            "turnlog.Deliver(content=...)",
        )
    if not decision_fits(one.kind, _DECISION_OF[type(decision)]):
        raise UsageError(
            f"call {call_id!r} waits for {one.kind}; {type(decision).__name__} does not answer it",
            hint="approve or reject an approval; deliver (or reject) an external or input call",
        )


def fits(one: Awaiting, decision: DecisionInput) -> bool:
    """Whether `decision` may settle the pause `one` (see `decision_fits`)."""
    return decision_fits(one.kind, _DECISION_OF[type(decision)])


def approved_calls(log: Log) -> list[ToolCall]:
    """The paused calls approved and not yet run, as the model asked for
    them (with their arguments), in order of asking."""
    approved = {one.call_id for one in log.awaiting if one.decision == Decision.APPROVED.value}
    if not approved:
        return []
    return _asked(log.messages, approved)


def _asked(messages: Sequence[Message], call_ids: set[str]) -> list[ToolCall]:
    # The newest request of each id: ids may repeat across turns.
    found: dict[str, ToolCall] = {}
    for message in messages:
        for call in message.tool_calls:
            if call.id in call_ids:
                found.pop(call.id, None)
                found[call.id] = call
    return list(found.values())


def undecided(log: Log) -> bool:
    """True while a paused call of the open turn has no decision yet."""
    return pauses_undecided(log.awaiting)


def check_turn_input(log: Log, user_text: Content | None, resume: bool) -> None:
    """Refuse a turn that cannot start as asked: new words while the turn is
    paused, or no words when the model has nothing to answer (its last
    message was its final answer, and no child's report is on its way)."""
    paused = bool(log.awaiting or log.paused)
    if user_text is not None and paused:
        raise UsageError(
            "the session's turn is paused; a new message cannot start another turn",
            hint="decide its paused calls (`decisions=`, or `turnlog approve` / `turnlog "
            "reject`) and resume it with run_turn(..., resume=True) and no user_text",
        )
    if user_text is None and not resume and not paused:
        with log.lock:
            fold = log.held.fold
            idle = not fold.needs_response and not fold.reports_owed()
        if idle:
            raise UsageError(
                "no user_text, and the model has nothing to answer: the session's last "
                "message is its own final answer",
                hint='pass what the user says next: run_turn(log, model, tools, "...")',
            )
