"""Where a crashed LangGraph thread stands, and the update that resumes it with the model next."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from turnlog.core.fold import Message
from turnlog.text import display_text

# Marks the revival notice put into a thread, so the history check and the
# recording of new messages know it came from turnlog.
INJECTED = "turnlog_injected"


def thread_messages(state: Any) -> list[Any]:
    """The messages of a graph's state (a `MessagesState` dict, a list, or an object)."""
    if isinstance(state, dict):
        return list(state.get("messages", []))
    if isinstance(state, list):
        return state
    return list(getattr(state, "messages", []))


def calls_of(message: Any) -> list[dict[str, Any]]:
    """The tool calls a thread message asks for (none for any other message)."""
    return list(getattr(message, "tool_calls", None) or [])


def told(messages: Sequence[Any]) -> bool:
    """Whether the thread ends with the resume notice turnlog put into it."""
    last = messages[-1] if messages else None
    return bool((getattr(last, "additional_kwargs", None) or {}).get(INJECTED))


def notice_message(notice: Message) -> Any:
    """The log's resume notice as the thread's message, marked as turnlog's."""
    from langchain_core.messages import HumanMessage

    return HumanMessage(
        content=display_text(notice.content), additional_kwargs={INJECTED: "revival"}
    )


@dataclass(frozen=True)
class ThreadPosition:
    """What a thread's latest checkpoint says about the run a crash stopped.

    `messages` are the thread's, with the writes of the tasks LangGraph saved
    as finished applied (as `get_state` shows them and `invoke(None)` resumes
    from them). `pending` are the calls of a tool step the thread has not
    written. `held` are the tool results LangGraph saved as the writes of a
    finished tool node, before the checkpoint after it: `next` is then empty,
    and an update of the state replaces those writes, so it must carry them.
    `model_next` says the thread's last message is a tool result: the tool
    step is over and the model was to run, as it does when the run resumes.
    """

    messages: list[Any]
    pending: list[dict[str, Any]]
    held: list[Any]
    model_next: bool

    @property
    def mid_run(self) -> bool:
        """The crash stopped the run between a tool step and the model's answer."""
        return bool(self.pending or self.held or self.model_next)


def thread_position(snapshot: Any, tools_node: str) -> ThreadPosition:
    """Read the run's position from `graph.get_state(config)`'s snapshot."""
    messages = thread_messages(snapshot.values)
    last = messages[-1] if messages else None
    held = [
        message
        for task in snapshot.tasks or ()
        if task.name == tools_node and task.result is not None
        for message in thread_messages(task.result)
    ]
    pending = calls_of(last) if tools_node in (snapshot.next or ()) and not held else []
    model_next = getattr(last, "type", None) == "tool"
    return ThreadPosition(messages=messages, pending=pending, held=held, model_next=model_next)


def resume_update(
    thread: ThreadPosition, log_messages: Sequence[Message], notice: Message | None
) -> list[Any]:
    """The messages that make the model the thread's next step, written as the
    tool node's output (none when the thread needs none): a `ToolMessage` per
    pending call, with the answer the log holds (the tool's or recovery's),
    then the resume notice; the tool node's saved writes come first, since
    the update replaces them.

    As the tool node, whose edge leads to the model: LangGraph, left to guess
    the node, picks the one whose writes it saw last, which after a tool step
    saved as writes only is the model's, whose edge ends the run; the notice
    was then the thread's last word and the tool results were dropped."""
    from langchain_core.messages import ToolMessage

    results = {
        message.call_id: message
        for message in log_messages
        if message.role == "tool" and message.call_id is not None
    }
    out: list[Any] = [
        ToolMessage(
            content=display_text(results[str(call["id"])].content),
            tool_call_id=str(call["id"]),
            name=call.get("name"),
            status="error" if results[str(call["id"])].is_error else "success",
        )
        for call in thread.pending
        if str(call["id"]) in results
    ]
    if notice is not None:
        out.append(notice_message(notice))
    return [*thread.held, *out] if out else []


def requested_ids(messages: Sequence[Message]) -> set[str]:
    """The ids of every call the log's transcript asks for."""
    return {call.id for message in messages for call in message.tool_calls}
