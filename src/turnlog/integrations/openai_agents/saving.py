"""Recording what the Agents SDK saves: each item as a transcript message unless
the hooks wrote it, and every `add_items` call's items as given."""

from __future__ import annotations

import json
from typing import Any

import msgspec

from turnlog import events as ev
from turnlog.core.pauses import Awaiting, awaiting_call
from turnlog.events import ToolCall
from turnlog.handle.log import Log
from turnlog.integrations.kit.boundaries import begin_step, end_turn
from turnlog.integrations.kit.runs import fail_run
from turnlog.integrations.openai_agents.items import SAVED_EVENT, SavedBatch, SessionView
from turnlog.runtime.approvals import undecided
from turnlog.text import foreign_text


def save(log: Log, view: SessionView, items: list[dict[str, Any]]) -> None:
    """One `add_items` call: each item as a transcript message (unless the
    hooks recorded it), then the items as given, naming the messages they
    stand for. Items recorded before a refusal are saved before it is raised,
    so nothing the log holds is lost to `get_items`."""
    with log.lock:
        covers: list[int] = []
        saved = 0
        try:
            for item in items:
                seq = _record(log, view, item)
                saved += 1
                if seq is not None:
                    covers.append(seq)
        finally:
            if saved:
                kept = items[:saved]
                event = log.append(
                    ev.Custom(type=SAVED_EVENT, fields={"items": kept, "covers": covers})
                )
                view.saved.append(
                    SavedBatch(event.seq, msgspec.json.encode(kept), frozenset(covers))
                )
        if _pause_unanswered(log, items):
            view.run = None  # the run stopped there; a resumed RunState is a run of its own
        elif view.answer_due:
            view.answer_due = False
            view.run = None
            end_run(log)
        elif view.run is None and _answers(items):
            # Without the hooks no `on_agent_end` ends the run's turn: the
            # SDK saving a final answer with nothing owed does.
            end_run(log)


# Where the decision about a paused call is kept: a run resumed from it, if it
# runs without the hooks, runs the call where the log cannot see it start.
DECIDED_IN = "the Agents SDK's RunState"


def _pause_unanswered(log: Log, items: list[dict[str, Any]]) -> bool:
    """Pause the calls the SDK saved with no output and never started: it
    saves a step's calls with the outputs of those that ran, and one saved
    without its output and without a tool start is one it stopped on for
    approval (`needs_approval`), now in the run's `result.interruptions`. The
    decision lives in the SDK's `RunState`; the log says the call waits, so no
    recovery or sweep takes the run for a crashed one, and where its decision
    is kept, so a pause dropped undecided reads "may have run" (A3). Returns whether any
    call was paused (the step then ends `paused`)."""
    turn = log.open_turn
    if turn is None:
        return False
    unstarted = {call.call_id for call in turn.calls if call.dispatch is None and not call.answered}
    outputs = {str(item.get("call_id")) for item in items if item.get("type") in OUTPUTS}
    paused = False
    for item in items:
        call_id = str(item.get("call_id"))
        if item.get("type") in CALLS and call_id in unstarted and call_id not in outputs:
            if _waiting(log, call_id) is None:
                log.pause(call_id, kind="approval", decided_in=DECIDED_IN)
            paused = True
    if paused:
        turn = log.open_turn
        # A call still in flight beside the pauses (a handoff, answered when
        # the next agent starts) keeps the step open until it is answered.
        if turn is not None and turn.open_step is not None and not turn.owed:
            step = turn.open_step
            log.append(ev.StepEnd(turn=step.turn, step=step.step, outcome="paused"))
    return paused


def _waiting(log: Log, call_id: str) -> Awaiting | None:
    """The open turn's pause of `call_id` not yet acted on, if it has one."""
    return awaiting_call(log.awaiting, call_id)


def _answer_paused(log: Log, call_id: str, name: str | None, item: dict[str, Any]) -> int:
    """The SDK's output for a call the log holds paused: the `RunState` was
    decided and resumed. A call the hooks saw start was approved and
    dispatched there; one answered with no tool start was not seen to run, so
    the log records what it can prove: the SDK delivered this answer (its
    words for a rejection, or the result of a run no hook showed)."""
    content = foreign_text(item.get("output")) or str(item.get("output"))
    waiting = _waiting(log, call_id)
    if waiting is not None and waiting.decision == "approved":
        # Approved in the log (`turnlog approve`), run by the SDK unseen.
        answer = ev.ToolResult(
            call_id=call_id, name=name, content=content, is_error=item.get("status") == "failed"
        )
        return log.append(answer, allow_undispatched=True).seq
    # Not a decision mapped from an answer (`record_decisions`, which fits
    # each to its pause's kind): what the SDK did, whatever the kind was.
    failed = item.get("status") == "failed"
    written = log.deliver(call_id, content, by="openai-agents", is_error=failed, keeper=DECIDED_IN)
    return written[-1].seq


def agent_ended(log: Log, view: SessionView) -> bool:
    """`on_agent_end`: the turn ends, unless calls still wait, when the SDK
    has yet to save its answers to them (a rejection, under
    `stop_on_first_tool`, is saved after the run's end): that save ends it."""
    with log.lock:
        if undecided(log):
            view.answer_due = True
            return False
        return end_run(log)


def drop_undecided(log: Log) -> None:
    """A model call of a run while calls wait undecided: the SDK went on
    without their decisions (it ran the approved ones detached, with no
    session), so they end as calls that may have run (A3)."""
    with log.lock:
        if undecided(log):
            log.expire(
                because="the run asked the model again without a decision for it",
                keep_turn_open=True,
            )


def end_run(log: Log) -> bool:
    """The run gave its final answer: a call it left paused, undecided, was
    never answered in the session (the SDK ran it detached, with no session,
    or left it behind), so it is settled as one a run may have acted on
    unseen (A3) before the turn ends. True when the turn ended."""
    with log.lock:
        if undecided(log):
            log.expire(
                because="the run gave its final answer without saving one for it",
                keep_turn_open=True,
            )
        return end_turn(log)


def _answers(items: list[dict[str, Any]]) -> bool:
    """Whether a batch ends with the model's words (not a call, not reasoning)."""
    last = items[-1] if items else None
    return (
        last is not None
        and last.get("role") == "assistant"
        and last.get("type", "message") == "message"
    )


def _record(log: Log, view: SessionView, item: dict[str, Any]) -> int | None:
    """The seq of the transcript message `item` is, written now unless the
    hooks (or recovery) wrote it; None for an item turnlog keeps only as saved
    (a hosted tool's item, say)."""
    kind = item.get("type", "message" if "role" in item else None)
    if kind == "message" and item.get("role") in ("user", "system", "developer"):
        return _say(log, view, item)
    recorded = view.recorded(f"item:{item['id']}") if isinstance(item.get("id"), str) else None
    if recorded is not None:
        return recorded
    owed = log.owed_calls()
    if (kind in CALLS or kind in ("reasoning", "message")) and _before_any_user(log):
        # The SDK's own sessions take a history the assistant opens (its
        # tests seed one); no provider takes such a transcript. The item is
        # kept in the saved batch, handed back by `get_items` as saved, and
        # is no transcript message: its call's output is none either.
        return None
    if kind in CALLS:
        call_id = str(item.get("call_id"))
        asked = view.recorded(f"call:{call_id}")
        if call_id in owed or asked is not None:
            return asked
        begin_step(log, open_step=False)
        event = log.assistant("", [tool_call(item)])
        view.seq_of[f"call:{call_id}"] = event.seq
        return event.seq
    if kind in OUTPUTS or (
        # The output of a function call the SDK answered with its apply_patch
        # editor (see `_run_by_the_sdk`) is such an item; for a call the log
        # holds as a function call, it is that call's result.
        str(kind).endswith("_call_output") and str(item.get("call_id")) in owed
    ):
        call_id = str(item.get("call_id"))
        if call_id not in owed:
            return view.recorded(f"output:{call_id}")  # the hooks or recovery answered it
        if _waiting(log, call_id) is not None:
            seq = _answer_paused(log, call_id, owed[call_id], item)
            view.seq_of[f"output:{call_id}"] = seq
            return seq
        # A handoff's transfer message, the editor's output, or the SDK's own
        # words for a call it did not run: dispatched ahead when the SDK ran
        # it, else recorded without a dispatch (it never started).
        result = log.append(
            ev.ToolResult(
                call_id=call_id,
                name=owed[call_id],
                content=foreign_text(item.get("output")) or str(item.get("output")),
                is_error=item.get("status") == "failed",
            ),
            allow_undispatched=True,
        )
        view.seq_of[f"output:{call_id}"] = result.seq
        return result.seq
    if kind == "message" and item.get("role") == "assistant":
        begin_step(log, open_step=False)
        return log.assistant([{"type": "text", "text": foreign_text(item.get("content"))}]).seq
    if kind == "reasoning":
        begin_step(log, open_step=False)
        return log.assistant([item]).seq
    return None


def _before_any_user(log: Log) -> bool:
    """Whether no user message with text is in the log yet (the write order
    refuses an assistant message then)."""
    return log.held.fold.user_spoke is False


def _say(log: Log, view: SessionView, item: dict[str, Any]) -> int:
    """A run's input. The SDK saves it before the run's first model call, so
    a turn open now was left by an earlier run this process saw end unseen
    (an exception no hook saw, or a run without the hooks, whose turn ends
    only at its final answer): it is closed first as a run that raised is
    (`fail_run`), so the new words start a turn of their own."""
    turn = log.open_turn
    if turn is not None and undecided(log):
        # A new run while calls wait for approval: the SDK leaves them out of
        # what the model reads, and no RunState decision will come for them
        # (A3: a resume without the hooks may have run one unseen).
        log.expire(because="a new run began on the session before any decision")
        turn = log.open_turn
    if turn is not None and not _said_since(log, turn.seq):
        pass  # the run's own input, saved after its first model call began
    elif turn is not None:
        fail_run(log, RunEndedUnseen("the run ended without its final answer being saved"))
        view.run = None
    text = foreign_text(item.get("content"))
    said: ev.UserMessage | ev.SystemMessage = (
        ev.UserMessage(content=text)
        if item.get("role") == "user"
        else ev.SystemMessage(content=text)
    )
    return log.append(said).seq


def _said_since(log: Log, seq: int) -> bool:
    """Whether the log holds a message written after `seq`."""
    last = log.last_message()
    return last is not None and last.seq > seq


class RunEndedUnseen(Exception):
    """What closes a turn an earlier run left open: the run ended (it raised,
    or was cancelled) where no hook of the SDK could see it."""


# The calls of a reply that run here, as a function tool or a custom tool
# (free-form input) runs, and their outputs. Other items naming a call (a
# hosted tool's, which runs at the provider, or a shell or computer action)
# are kept as the SDK saved them, and are not dispatched.
CALLS = frozenset({"function_call", "custom_tool_call"})
OUTPUTS = frozenset({"function_call_output", "custom_tool_call_output"})


def tool_call(item: dict[str, Any]) -> ToolCall:
    if item.get("type") == "custom_tool_call":
        return ToolCall(
            id=str(item.get("call_id")),
            name=str(item.get("name")),
            arguments={"input": item.get("input")},
            extra={"item_id": item["id"]} if isinstance(item.get("id"), str) else None,
        )
    raw = item.get("arguments")
    try:
        arguments = json.loads(raw) if isinstance(raw, str) else (raw or {})
    except ValueError:
        arguments = {"raw": raw}
    extra = {"item_id": item["id"]} if isinstance(item.get("id"), str) else None
    return ToolCall(
        id=str(item.get("call_id")), name=str(item.get("name")), arguments=arguments, extra=extra
    )
