"""Recording what the Agents SDK saves: each item as a transcript message unless
the hooks wrote it, and every `add_items` call's items as given."""

from __future__ import annotations

import json
from typing import Any

import msgspec

from turnlog import events as ev
from turnlog.events import ToolCall
from turnlog.handle.log import Log
from turnlog.integrations import begin_step, end_turn, fail_run
from turnlog.integrations.openai_agents_items import SAVED_EVENT, SavedBatch, SessionView
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
        if view.run is None and _answers(items):
            # Without the hooks no `on_agent_end` ends the run's turn: the
            # SDK saving a final answer with nothing owed does.
            end_turn(log)


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


def _say(log: Log, view: SessionView, item: dict[str, Any]) -> int:
    """A run's input. The SDK saves it before the run's first model call, so
    a turn open now was left by an earlier run this process saw end unseen
    (an exception no hook saw, or a run without the hooks, whose turn ends
    only at its final answer): it is closed first as a run that raised is
    (`fail_run`), so the new words start a turn of their own."""
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
