"""turnlog under LangGraph: a tool-call wrapper that writes ahead, and thread recovery.

    tools = TurnlogToolWrapper("sessions", "thread-7")
    node = ToolNode([charge], wrap_tool_call=tools, awrap_tool_call=tools.awrap)

The wrapper records the model's message (with its tool calls) the first
time one of its calls reaches the tool node, a durable `tool_dispatch`
before each tool body runs, and the result after it. After a crash,
`recover_thread(graph, config, "sessions", "thread-7")` recovers the
turnlog session and writes the calls' results (the real ones turnlog
holds, and a synthetic one per owed call) into the thread as the tool
node's output, so the next step is the model, not a re-run of the tools.

Not a checkpoint saver: checkpoints are opaque blobs written per super-step
by an API that moves; turnlog records the calls themselves.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from turnlog import events as ev
from turnlog.events import ToolCall
from turnlog.formats.transcript import text_of as _text
from turnlog.integrations import begin_step, end_turn, refuse_interrupted
from turnlog.log import Log
from turnlog.log import open as open_log
from turnlog.stores import Store


def _messages(state: Any) -> list[Any]:
    if isinstance(state, dict):
        return list(state.get("messages", []))
    if isinstance(state, list):
        return state
    return list(getattr(state, "messages", []))


class TurnlogToolWrapper:
    """`ToolNode(wrap_tool_call=...)` and `awrap_tool_call=...awrap` (also usable as
    langchain's `AgentMiddleware.wrap_tool_call`)."""

    def __init__(
        self, target: str | os.PathLike[str] | Store, session_id: str | None = None, **options: Any
    ) -> None:
        self.log: Log = open_log(target, session_id, **options)
        try:
            refuse_interrupted(self.log)
        except BaseException:
            self.log.close()
            raise
        self.session_id = self.log.session_id
        # One tool node runs a step's calls in parallel; the message that asked
        # for them is recorded once.
        self._lock = threading.Lock()

    def _record_request(self, state: Any, call_id: str) -> None:
        with self._lock:
            found = self.log.verdict()
            turn = found.open_turn
            if turn is not None and any(c.call_id == call_id for c in turn.calls):
                return
            messages = _messages(state)
            asking = next(
                (
                    m
                    for m in reversed(messages)
                    if any(call.get("id") == call_id for call in getattr(m, "tool_calls", ()) or ())
                ),
                None,
            )
            if turn is None:
                prompt = next(
                    (m for m in reversed(messages) if getattr(m, "type", None) == "human"), None
                )
                if prompt is not None:
                    self.log.user(_text(prompt.content))
            begin_step(self.log)
            calls = [
                ToolCall(
                    id=str(call["id"]), name=str(call["name"]), arguments=call.get("args") or {}
                )
                for call in (
                    getattr(asking, "tool_calls", None) or [{"id": call_id, "name": "tool"}]
                )
            ]
            content = _text(asking.content) if asking is not None else ""
            self.log.assistant([{"type": "text", "text": content}] if content else "", calls)

    def _before(self, request: Any) -> tuple[str, str]:
        call = request.tool_call
        call_id, name = str(call["id"]), str(call["name"])
        self._record_request(request.state, call_id)
        # Durable before the tool body runs: recovery's "not started" rests on it.
        self.log.append(ev.ToolDispatch(call_id=call_id, name=name), sync=True)
        return call_id, name

    def _after(self, call_id: str, name: str, result: Any) -> None:
        content = _text(getattr(result, "content", result))
        is_error = getattr(result, "status", None) == "error"
        self.log.append(
            ev.ToolResult(call_id=call_id, name=name, content=content, is_error=is_error)
        )

    def _failed(self, call_id: str, name: str, exc: Exception) -> None:
        failure = f"{type(exc).__name__}: {exc}"
        self.log.append(ev.ToolResult(call_id=call_id, name=name, content=failure, is_error=True))

    def __call__(self, request: Any, execute: Callable[[Any], Any]) -> Any:
        call_id, name = self._before(request)
        try:
            result = execute(request)
        except Exception as exc:
            self._failed(call_id, name, exc)
            raise
        self._after(call_id, name, result)
        return result

    async def awrap(self, request: Any, execute: Callable[[Any], Awaitable[Any]]) -> Any:
        import asyncio

        call_id, name = await asyncio.to_thread(self._before, request)
        try:
            result = await execute(request)
        except Exception as exc:
            self._failed(call_id, name, exc)
            raise
        await asyncio.to_thread(self._after, call_id, name, result)
        return result

    def finish(self, state: Any) -> None:
        """Record the run's final answer and end the turn (call it after `invoke`).

        A run resumed after `recover_thread` answers in a turn of its own.
        """
        messages = _messages(state)
        last = messages[-1] if messages else None
        if last is None or getattr(last, "type", None) != "ai" or getattr(last, "tool_calls", None):
            return
        answer = _text(last.content)
        with self._lock:
            log = self.log
            found = log.verdict()
            if found.owed:
                return
            recorded = log.last_message()
            if found.open_turn is None and (
                recorded is not None
                and recorded.role == "assistant"
                and (ev.content_text(recorded.content) == answer)
            ):
                return
            begin_step(log)
            log.assistant(answer)
            end_turn(log)

    def close(self) -> None:
        self.log.close()


def recover_thread(
    graph: Any,
    config: dict[str, Any],
    target: str | os.PathLike[str] | Store,
    session_id: str | None = None,
    *,
    tools_node: str = "tools",
) -> list[Any]:
    """Recover the turnlog session, then give the thread the tool node's output
    it never wrote: one `ToolMessage` per call of the interrupted step, with
    the real result turnlog recorded or recovery's synthetic one, under the
    original call ids. The next step is the model. Returns the messages
    written (none when the thread has nothing pending)."""
    from langchain_core.messages import ToolMessage

    snapshot = graph.get_state(config)
    messages = _messages(snapshot.values)
    last = messages[-1] if messages else None
    pending = list(getattr(last, "tool_calls", None) or [])
    with open_log(target, session_id, create=False) as log:
        log.recover()
        results = _results_by_call(log.messages)
    if not pending or tools_node not in (snapshot.next or ()):
        return []
    out = []
    for call in pending:
        call_id = str(call["id"])
        found = results.get(call_id)
        if found is None:
            continue
        content, is_error = found
        out.append(
            ToolMessage(
                content=content,
                tool_call_id=call_id,
                name=call.get("name"),
                status="error" if is_error else "success",
            )
        )
    graph.update_state(config, {"messages": out}, as_node=tools_node)
    return out


def _results_by_call(messages: Sequence[Any]) -> dict[str, tuple[str, bool]]:
    out: dict[str, tuple[str, bool]] = {}
    for message in messages:
        if message.role == "tool" and message.call_id is not None:
            out[message.call_id] = (ev.content_text(message.content), message.is_error)
    return out
