"""A call the log has answered is never run again: the answer a framework is handed instead."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NoReturn

from turnlog.core.state import newest_answer
from turnlog.errors import TurnlogError
from turnlog.events import Origin
from turnlog.handle.log import Log
from turnlog.text import display_text


class AnsweredCallError(TurnlogError):
    """A framework was about to run a tool call the log has already answered.
    Nothing was dispatched and the tool did not run."""

    hint = (
        "the recorded answer is in the session: run on the session with new input and "
        "let the model decide whether to ask for the call again (under a new id)"
    )


@dataclass(frozen=True)
class RecordedAnswer:
    """The result the log holds for a tool call, as a framework is handed it."""

    call_id: str
    name: str | None
    text: str
    is_error: bool
    # The result's event; who wrote it (None: the tool or the framework
    # itself) and, for turnlog's own answers, what it knows of the call.
    seq: int
    origin: str | None = None
    risk: str | None = None

    def describe(self) -> str:
        """Who answered the call, in a few words."""
        if self.origin == Origin.RECOVERY.value:
            return f"by recovery after a crash: {self.risk or 'tool_outcome_unknown'}"
        if self.origin is not None:
            return f"by turnlog ({self.origin}): {self.risk or 'an error'}"
        return "with the tool's own result" + (" (an error)" if self.is_error else "")


def owed_here(log: Log, call_id: str) -> bool:
    """The open turn asked for `call_id` and nothing has answered it: a run
    about to dispatch it is the run that asked for it."""
    with log.lock:
        turn = log.open_turn
        if turn is None:
            return False
        return any(c.call_id == call_id and c.requested and not c.answered for c in turn.calls)


def recorded_answer(log: Log, call_id: str) -> RecordedAnswer | None:
    """The result the log holds for the newest request of `call_id`; None
    while that request is unanswered, or when the log never asked for it
    (`turnlog.core.state.newest_answer`)."""
    with log.lock:
        messages = log.messages
    message = newest_answer(messages, call_id)
    if message is None:
        return None
    return RecordedAnswer(
        call_id=call_id,
        name=message.name,
        text=display_text(message.content),
        is_error=message.is_error,
        seq=message.seq,
        origin=message.origin,
        risk=message.risk,
    )


def answer_before_dispatch(log: Log, call_id: str) -> RecordedAnswer | None:
    """What a hook about to dispatch `call_id` must know first: None when the
    open turn owes the call (dispatch it as usual), else the answer the log
    holds (hand it to the framework, or refuse), else None for a call the log
    never heard of (the write order decides)."""
    with log.lock:
        if owed_here(log, call_id):
            return None
        return recorded_answer(log, call_id)


def refuse_answered(log: Log, answer: RecordedAnswer, *, how: str | None = None) -> NoReturn:
    """Refuse to run a call the log has answered, before anything is written."""
    what = f"`{answer.name}` ({answer.call_id})" if answer.name else repr(answer.call_id)
    raise AnsweredCallError(
        f"tool call {what} of session {log.session_id!r} is already answered "
        f"({answer.describe()}); it is not run again under the same id",
        hint=how,
    )
