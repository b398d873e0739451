"""ADK's confirmations and long-running tools as turnlog pauses, decided by the ADK client's answer.

ADK stops a run on purpose three ways, and each is a pause in the log, so no
recovery or sweep takes the run for a crashed one:

- a tool declared `require_confirmation` (ADK's gate answers the call with a
  stand-in and asks the client with an `adk_request_confirmation` call):
  the call itself waits for approval, paused once the gate has asked (it
  never ran: no dispatch is written for it until the client confirms it);
- a tool body that calls `tool_context.request_confirmation()`: the body
  ran and answered its call, and the `adk_request_confirmation` call is what
  waits; once confirmed, ADK runs the body again, and that run is recorded
  as the confirmation call's dispatch and result;
- a `LongRunningFunctionTool`: its body starts an operation and the result
  arrives later as the client's function response; the call waits for it
  (`external`), paused before the body, and the client's response is
  delivered as its result.

The decision is the client's function response, appended as a user event:
it is recorded (approved, rejected, delivered) before ADK acts on it, and a
confirmation declined means the call never runs (turnlog hands ADK the
declined answer before its gate could run the body). ADK keeps that answer
in its session until it acts on it, so the pauses name it as where they are
decided (`decided_in`), and `turnlog approve` refuses them with a hint.
"""

from __future__ import annotations

from typing import Any, Final

from google.adk.events.event import Event as AdkEvent
from google.adk.sessions.session import Session
from google.adk.tools.tool_confirmation import ToolConfirmation

from turnlog import events as ev
from turnlog.core.pauses import Awaiting, awaiting_call
from turnlog.errors import TurnlogError
from turnlog.handle.log import Log
from turnlog.integrations.adk.plugin import result_text
from turnlog.integrations.kit.answered import recorded_answer
from turnlog.integrations.kit.boundaries import begin_step, end_step_paused
from turnlog.integrations.kit.pauses import PAUSE_PROMPT_MAX, call_prompt, hold_call
from turnlog.runtime.approvals import (
    Approve,
    DecisionInput,
    Deliver,
    Reject,
    fits,
    record_decisions,
)
from turnlog.text import foreign_text

# ADK's name for the call that asks its client to confirm a tool call.
CONFIRM: Final = "adk_request_confirmation"
DECIDED_IN: Final = "the ADK client's function response"
# Who decides, as the log records it: ADK's client speaks as the user.
_BY: Final = "user"
_PAYLOAD_MAX: Final = 1024


class UnpluggedPauseWarning(UserWarning):
    """ADK asked its client to confirm a call on a service run without
    `sessions.plugin`: nothing is paused, and the log keeps ADK's stand-in
    ("requires confirmation") as the call's answer; the run after the
    client's answer is kept only in ADK's own events."""


def original_of(call: Any) -> str | None:
    """The id of the call an `adk_request_confirmation` call asks about."""
    original = (call.args or {}).get("originalFunctionCall") or {}
    return str(original["id"]) if original.get("id") else None


def answers_confirmation(event: AdkEvent) -> bool:
    """A user event that answers a confirmation: the one kind of event whose
    recording needs the session's confirmation calls."""
    return event.author == "user" and any(
        response.name == CONFIRM for response in event.get_function_responses()
    )


def confirmation_targets(session: Session) -> dict[str, str]:
    """Each `adk_request_confirmation` call's id in the session, mapped to the
    id of the call it asks about (its `originalFunctionCall`)."""
    out = {}
    for event in session.events:
        for call in event.get_function_calls():
            original = original_of(call) if call.name == CONFIRM and call.id else None
            if original is not None:
                out[str(call.id)] = original
    return out


def consumed_confirmations(session: Session, event: AdkEvent) -> set[str]:
    """Those of the confirmations a user event answers that ADK has acted on
    before, by its own rule: a user event answered one, and a response for
    its original call came after (the call ran, or was answered, on that
    answer). ADK takes such an answer once."""
    answering = {r.id for r in event.get_function_responses() if r.name == CONFIRM and r.id}
    if event.author != "user" or not answering:
        return set()
    targets = {c: o for c, o in confirmation_targets(session).items() if c in answering}
    confirmation_of = {original: confirmation for confirmation, original in targets.items()}
    answered: set[str] = set()
    consumed: set[str] = set()
    for event in session.events:
        for response in event.get_function_responses():
            if not response.id:
                continue
            if event.author == "user":
                if response.id in targets:
                    answered.add(response.id)
            elif confirmation_of.get(response.id) in answered:
                consumed.add(confirmation_of[response.id])
    return consumed


def waiting(log: Log, call_id: str | None) -> Awaiting | None:
    """The call's pause, while it waits or is decided and not yet acted on."""
    return awaiting_call(log.awaiting, call_id) if call_id else None


def hold(log: Log, call_id: str, name: str, args: Any, kind: str) -> None:
    """Pause a call the open turn asked for and has neither dispatched nor
    answered (synced); the step ends `paused` once nothing in it is owed."""
    with log.lock:
        prompt = call_prompt(name, args)
        if hold_call(log, call_id, kind=kind, decided_in=DECIDED_IN, prompt=prompt):
            end_step_paused(log)


def ask(log: Log, calls: list[Any]) -> None:
    """The confirmation calls a tool body asked for (`request_confirmation`):
    each is a call of the turn, in a step of its own, that waits for approval."""
    with log.lock:
        begin_step(log)
        log.assistant(
            "",
            [ev.ToolCall(id=str(c.id), name=CONFIRM, arguments=dict(c.args or {})) for c in calls],
        )
        for call in calls:
            hint = ((call.args or {}).get("toolConfirmation") or {}).get("hint") or None
            prompt = hint[:PAUSE_PROMPT_MAX] if isinstance(hint, str) else None
            log.pause(str(call.id), kind="approval", prompt=prompt, decided_in=DECIDED_IN)
        end_step_paused(log)


def record_client_answers(
    log: Log, event: AdkEvent, targets: dict[str, str], consumed: set[str]
) -> None:
    """The client's function responses in a user event, recorded as the
    decisions of the calls they answer before ADK acts on them, read as ADK
    reads them: the last response for an id counts, and a confirmation ADK
    acted on before (`consumed_confirmations`) is not taken again. A response for a call
    that does not wait, or was decided before (the same answer sent again),
    and one ADK cannot read as a confirmation, record nothing."""
    parts = (event.content.parts or []) if event.content else []
    responses = {
        str(part.function_response.id): part.function_response
        for part in parts
        if part.function_response is not None and part.function_response.id is not None
    }
    with log.lock:
        decisions: dict[str, DecisionInput] = {}
        for response_id, response in responses.items():
            decision: DecisionInput
            if response.name == CONFIRM:
                if response_id in consumed:
                    continue
                # The gate's call waits itself; a body's request waits as the
                # confirmation call.
                pause = waiting(log, targets.get(response_id)) or waiting(log, response_id)
                confirmation = _confirmation(response.response)
                if confirmation is None:
                    continue
                if confirmation.confirmed:
                    reason = "confirmed in adk_request_confirmation" + _payload(confirmation)
                    decision = Approve(by=_BY, reason=reason)
                else:
                    decision = Reject(by=_BY, reason="declined in adk_request_confirmation")
            else:
                pause = waiting(log, response_id)
                decision = Deliver(content=result_text(response.response), by=_BY)
            # The first answer for a pause counts; one for a call that does
            # not wait undecided, or that does not fit its pause, records nothing.
            if pause is None or pause.decision is not None or pause.call_id in decisions:
                continue
            if fits(pause, decision):
                decisions[pause.call_id] = decision
        record_decisions(log, decisions, keeper=DECIDED_IN)


def _confirmation(response: Any) -> ToolConfirmation | None:
    """The client's answer as ADK reads it; None for none (ADK ignores an
    empty answer) or one ADK cannot read (it fails the run): no decision."""
    if not response:
        return None
    try:
        return ToolConfirmation.from_response_dict(response)
    except (ValueError, TypeError):
        return None


def _payload(confirmation: ToolConfirmation) -> str:
    """The data the client sent with its approval, as the decision's reason
    keeps it (the body reads it): bounded, as every reason is."""
    if confirmation.payload is None:
        return ""
    text = foreign_text(confirmation.payload) or str(confirmation.payload)
    return f" with payload {text[:_PAYLOAD_MAX]}"


class DecisionMismatchError(TurnlogError):
    """ADK was about to act on a confirmation the log does not hold (declined
    where the log holds the call approved, or never recorded). Nothing was
    dispatched and the tool did not run."""

    hint = (
        "the log's decision and ADK's session disagree (answers sent out of order, or "
        "edited by hand); send the client's answer again as one function response"
    )


def check_agrees(log: Log, call_id: str, confirmed: bool | None) -> None:
    """Refuse to act on a confirmation ADK reads as declined for a call the
    log holds approved: one of the two would be wrong about what ran."""
    pause = waiting(log, call_id)
    if confirmed is None or pause is None:
        return
    if confirmed is False and pause.decision == "approved":
        raise DecisionMismatchError(
            f"ADK's confirmation declines call {call_id!r}, which the log holds approved"
        )
    if pause.decision is None:
        raise DecisionMismatchError(
            f"ADK acts on a confirmation of call {call_id!r} that the log has not recorded"
        )


def acting_on(log: Log, call_id: str) -> None:
    """A decided paused call is about to be acted on: a step of the resumed
    turn holds its dispatch (or the answer handed to ADK)."""
    with log.lock:
        if waiting(log, call_id) is not None:
            begin_step(log, open_step=False)


def rerun_of(log: Log, session: Session, call_id: str) -> str | None:
    """The confirmation call that stands for ADK running `call_id`'s body
    again: the newest one asked about it that the log holds as a call (a
    body that asked with `request_confirmation`, its client since answered)."""
    asked = [c for c, original in confirmation_targets(session).items() if original == call_id]
    for confirmation_id in reversed(asked):
        if waiting(log, confirmation_id) is not None or recorded_answer(log, confirmation_id):
            return confirmation_id
    return None


def stand_ins(log: Log, event: AdkEvent) -> list[str]:
    """The ids of the responses in an ADK event that are ADK's stand-in for
    a call that waits (its gate's "requires confirmation", a long-running
    tool's first reply): kept as ADK's, never as the call's result."""
    parts = (event.content.parts or []) if event.content else []
    out = []
    for part in parts:
        response = part.function_response
        if response is None or response.id is None or response.name == CONFIRM:
            continue
        pause = waiting(log, response.id)
        if pause is not None and pause.decision is None:
            out.append(str(response.id))
    return out


def record_late(log: Log, responses: list[Any]) -> None:
    """A client's result for a call the log has answered (its wait expired,
    a new message ended it, or the same result came before): ADK hands it to
    the model, so the transcript keeps it, as the user's words, and the call
    keeps its answer."""
    with log.lock:
        for response in responses:
            if response.id is None or response.name == CONFIRM:
                continue
            answer = recorded_answer(log, str(response.id))
            text = result_text(response.response)
            if answer is None or waiting(log, str(response.id)) is not None:
                continue
            how = "was sent again" if answer.text == text else "arrived late"
            log.user(f"The result of {response.name} ({response.id}) {how}: {text}")
