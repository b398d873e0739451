"""turnlog under LangGraph: a tool-call wrapper that writes ahead, and thread recovery.

    tools = TurnlogToolWrapper("sessions", "thread-7")
    node = ToolNode([charge], wrap_tool_call=tools, awrap_tool_call=tools.awrap)

The wrapper records the thread's new messages and the model's message (with
its tool calls) the first time one of its calls reaches the tool node, a
durable `tool_dispatch` before each tool body runs, and the result after it.
After a crash the same wrapper opens in recovery-only mode (its tools refuse
to run), and `tools.recover_thread(graph, config)` recovers the turnlog
session and writes the calls' results (the real ones turnlog holds, and a
synthetic one per owed call) into the thread as the tool node's output, so
the next step is the model, not a re-run of the tools. A session recovered
elsewhere (`turnlog recover`, a sweep) resumes with LangGraph's own
`invoke(None)`: the tool node re-runs the step, and each call the log has
answered is handed its recorded answer instead of running again.

Not a checkpoint saver: checkpoints are opaque blobs written per super-step
by an API that moves; turnlog records the calls themselves.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Awaitable, Callable, Mapping, Sequence
from types import TracebackType
from typing import Any

from turnlog import events as ev
from turnlog.core.pauses import Awaiting
from turnlog.core.recovery import unwind_result
from turnlog.errors import UsageError
from turnlog.events import Origin, ToolCall
from turnlog.handle.log import Log
from turnlog.integrations.kit.answered import RecordedAnswer, answer_before_dispatch
from turnlog.integrations.kit.boundaries import begin_step, end_turn
from turnlog.integrations.kit.handles import acquire, release, shared_state
from turnlog.integrations.kit.history import HistoryCheck, check_history, check_history_mode
from turnlog.integrations.kit.runs import refuse_interrupted
from turnlog.integrations.kit.tool_calls import check_idempotency_map, tool_idempotency
from turnlog.integrations.langgraph import pauses as langgraph_pauses
from turnlog.integrations.langgraph.resume import (
    INJECTED,
    calls_of,
    notice_message,
    requested_ids,
    resume_update,
    thread_messages,
    thread_position,
    told,
)
from turnlog.stores import Store
from turnlog.text import foreign_text

# Which thread messages the log already holds, by LangChain message id: a
# message is recorded once, found by its id, never by comparing its text
# ("Done." twice is two answers).
_IDS_EVENT = "x_langgraph_ids"
# Marks the result written for a call a LangGraph interrupt paused: LangGraph
# runs that call again from its start when the run resumes, so this result,
# unlike every other, does not settle it. And marks the message that asks for
# the call again when it does. The thread shows neither.
_INTERRUPT_EVENT = "x_langgraph_interrupt"
_RESUME_EVENT = "x_langgraph_resume"
_ROLES = {"human": "user", "ai": "assistant", "tool": "tool", "system": "system"}


def _asking(messages: Sequence[Any], call_id: str) -> tuple[int, Any]:
    """The newest message that asks for `call_id`, and its index (the end and
    None when the thread holds none)."""
    for index in range(len(messages) - 1, -1, -1):
        if any(call.get("id") == call_id for call in calls_of(messages[index])):
            return index, messages[index]
    return len(messages), None


def _interrupted(exc: BaseException) -> bool:
    from langgraph.errors import GraphInterrupt

    return isinstance(exc, GraphInterrupt)


def _shape(messages: Sequence[Any]) -> list[tuple[str, tuple[str, ...]]]:
    out = []
    for message in messages:
        role = _ROLES.get(getattr(message, "type", ""), "user")
        if role == "assistant":
            ids = tuple(str(call["id"]) for call in calls_of(message))
        elif role == "tool":
            ids = (str(message.tool_call_id),)
        else:
            ids = ()
        out.append((role, ids))
    return out


class TurnlogToolWrapper:
    """`ToolNode(wrap_tool_call=...)` and `awrap_tool_call=...awrap` (also usable as
    langchain's `AgentMiddleware.wrap_tool_call`).

    A handle with a lifetime: use it as a context manager or call `close()`.
    Wrappers for the same session in one process share one writer. On a
    session that crashed mid-turn it opens in recovery-only mode: its tools
    refuse to run until `recover_thread` (or `turnlog recover`) answers the
    owed calls.

    `idempotency` maps tool names to `read_only`, `idempotent`, `destructive`
    or `unknown`; a tool's own `metadata={"idempotency": ...}` says the same.
    `history` checks that the thread is the log's transcript or extends it:
    `warn` (default), `strict` (raises) or `off`. `pauses` maps tool names to
    the pause their calls take before they run (`approval`, `input`,
    `external`; see `turnlog.integrations.langgraph.pauses`).
    """

    def __init__(
        self,
        target: str | os.PathLike[str] | Store,
        session_id: str | None = None,
        *,
        idempotency: Mapping[str, str] | None = None,
        history: HistoryCheck = "warn",
        pauses: Mapping[str, str] | None = None,
        **options: Any,
    ) -> None:
        self._idempotency = check_idempotency_map(idempotency)
        self._pauses = langgraph_pauses.check_pauses(pauses)
        self._history = check_history_mode(history)
        self._handle: Log | None = acquire(target, session_id, **options)
        self.session_id = self._handle.session_id
        # Shared by every wrapper on this writer: a message recorded by one is
        # recorded for all, and one tool node's parallel calls (or two
        # wrappers' nodes) record the message that asked for them once.
        log = self._handle
        recorded = shared_state(log, "langgraph", lambda: _Recorded.read(log))
        self._lock = recorded.lock
        self._ids = recorded.ids
        self._paused = recorded.paused
        self._unseen = recorded.unseen

    # -- life -------------------------------------------------------------------------

    def close(self) -> None:
        """Release the session (the last handle in the process closes it). Idempotent."""
        log, self._handle = self._handle, None
        if log is not None:
            release(log)

    def __enter__(self) -> TurnlogToolWrapper:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    @property
    def log(self) -> Log:
        """The session's writer (shared with other handles on it in this process)."""
        if self._handle is None:
            raise UsageError("the wrapper is closed", hint="build a new TurnlogToolWrapper")
        return self._handle

    def _live(self) -> Log:
        return self.log

    # -- recording the thread -------------------------------------------------------

    def _note_ids(self, messages: Sequence[Any]) -> None:
        ids = [str(m.id) for m in messages if getattr(m, "id", None)]
        if ids:
            self._live().append(ev.Custom(type=_IDS_EVENT, fields={"ids": ids}))
            self._ids.update(ids)

    def _recorded(self, message: Any) -> bool:
        return bool(getattr(message, "id", None)) and str(message.id) in self._ids

    def _record_new_prompts(self, messages: Sequence[Any], upto: int) -> None:
        """The thread's human and system messages before `upto` that the log does not hold."""
        log = self._live()
        new = [
            m
            for m in messages[:upto]
            if getattr(m, "type", None) in ("human", "system")
            and not self._recorded(m)
            and not (getattr(m, "additional_kwargs", None) or {}).get(INJECTED)
        ]
        for message in new:
            if message.type == "human":
                log.user(foreign_text(message.content))
            else:
                log.system(foreign_text(message.content))
        self._note_ids(new)

    def _check(self, messages: Sequence[Any]) -> None:
        check_history(
            self._live(),
            _shape(messages),
            self._history,
            what="the thread's history",
            unseen=self._unseen,
        )

    def _record_request(self, state: Any, call_id: str) -> None:
        log = self._live()
        with self._lock, log.lock:
            turn = log.open_turn
            if turn is not None and any(
                c.call_id == call_id and c.requested and not c.answered for c in turn.calls
            ):
                return  # asked for in this step (a parallel call recorded it)
            messages = thread_messages(state)
            index, asking = _asking(messages, call_id)
            # The request the log holds, whose call an interrupt paused:
            # LangGraph runs it again now.
            again = self._same_request(asking) and self._paused_last(call_id)
            if turn is None and not again:
                self._check(messages[:index])
            # By id, so also a prompt of a run whose `finish` was not called.
            self._record_new_prompts(messages, index)
            begin_step(log)
            asked = calls_of(asking) or [{"id": call_id, "name": "tool"}]
            if again:
                # Asked for again are only the calls LangGraph runs again, not
                # those of the step the log holds a final answer for.
                asked = [c for c in asked if self._settled(str(c["id"])) is None]
            calls = [
                ToolCall(id=str(c["id"]), name=str(c["name"]), arguments=c.get("args") or {})
                for c in asked
            ]
            if again:
                asked_again = log.assistant("", calls)
                marker = {"seq": asked_again.seq}
                log.append(ev.Custom(type=_RESUME_EVENT, fields=marker))
                self._unseen.add(asked_again.seq)
                return
            content = foreign_text(asking.content) if asking is not None else ""
            log.assistant([{"type": "text", "text": content}] if content else "", calls)
            if asking is not None:
                self._note_ids([asking])

    def _same_request(self, asking: Any) -> bool:
        """Whether the thread's message asking for a call is the request the
        log holds: recorded, by its id. A message the log does not hold is a
        new request, even under a call id an earlier turn used; one without
        an id cannot be told apart, and is taken as the request the log
        holds, so that nothing runs twice."""
        return asking is None or not getattr(asking, "id", None) or self._recorded(asking)

    def _settled(self, call_id: str) -> RecordedAnswer | None:
        """The log's final answer to `call_id`: any result the log holds for
        its newest request, except the one a LangGraph interrupt paused it with."""
        answer = answer_before_dispatch(self._live(), call_id)
        return None if answer is None or answer.seq in self._paused else answer

    def _paused_last(self, call_id: str) -> bool:
        """The log's newest answer to `call_id` is the one an interrupt paused it with."""
        answer = answer_before_dispatch(self._live(), call_id)
        return answer is not None and answer.seq in self._paused

    def _recorded_output(self, request: Any) -> Any:
        """The tool node's output for a call the log has already answered, or
        None to run it. LangGraph re-runs a whole tool step when it resumes
        from a checkpoint (`invoke(None)` after a crash the shell recovered,
        `Command(resume=...)` after an approval): a call the log answered, by
        the tool or by recovery, is handed that answer, never run again."""
        log = self._live()
        refuse_interrupted(log, how="call `tools.recover_thread(graph, config)`")
        call_id = str(request.tool_call["id"])
        name = request.tool_call.get("name")
        messages = thread_messages(request.state)
        _, asking = _asking(messages, call_id)
        if not self._same_request(asking):
            return None
        with self._lock, log.lock:
            answer = self._settled(call_id)
            notice = self._untold_notice(messages, asking, call_id) if answer else None
        if answer is None:
            return None
        from langchain_core.messages import ToolMessage

        output = ToolMessage(
            content=answer.text,
            tool_call_id=call_id,
            name=name,
            status="error" if answer.is_error else "success",
        )
        if notice is None:
            return output
        from langgraph.types import Command

        # The resume notice of `turnlog revive` (or a sweep that revived),
        # after the step's last result, as `recover_thread(revive=True)`
        # writes it: the model is told its process died.
        return Command(update={"messages": [output, notice_message(notice)]})

    def _untold_notice(self, messages: Sequence[Any], asking: Any, call_id: str) -> Any:
        """The log's resume notice the thread has not seen, for the last call of
        a step whose every call the log has answered; else None."""
        calls = calls_of(asking)
        if not calls or str(calls[-1]["id"]) != call_id or told(messages):
            return None
        if any(self._settled(str(c["id"])) is None for c in calls):
            return None
        log = self._live()
        last = log.messages[-1] if log.messages else None
        return last if last is not None and last.injected == "revival" else None

    # -- the wrapper ----------------------------------------------------------------

    def _before(self, request: Any) -> tuple[str, str]:
        log = self._live()
        call = request.tool_call
        call_id, name = str(call["id"]), str(call["name"])
        tool = getattr(request, "tool", None)
        try:
            # Checked before anything of the request is written: a typo found
            # after it would leave the call owed mid-run.
            idempotency = tool_idempotency(name, self._idempotency, getattr(tool, "metadata", None))
        except UsageError as error:
            self._refused(call_id, name, error)
            raise
        self._record_request(request.state, call_id)
        # Durable before the tool body runs: recovery's "not started" rests on it.
        log.append(ev.ToolDispatch(call_id=call_id, name=name, idempotency=idempotency), sync=True)
        return call_id, name

    def _refused(self, call_id: str, name: str, error: UsageError) -> None:
        """A call refused before its dispatch, whose request a parallel call of
        the same step already recorded: it never started (U2)."""
        log = self._live()
        with self._lock, log.lock:
            if call_id in set(log.owed_calls()):
                result = unwind_result(call_id, name, dispatched=False, error=str(error))
                log.append(result, origin=Origin.UNWIND.value, allow_undispatched=True)

    def _after(self, call_id: str, name: str, result: Any) -> None:
        content = foreign_text(getattr(result, "content", result))
        is_error = getattr(result, "status", None) == "error"
        self._live().append(
            ev.ToolResult(call_id=call_id, name=name, content=content, is_error=is_error)
        )

    def _failed(self, call_id: str, name: str, exc: Exception) -> None:
        log = self._live()
        if _interrupted(exc):
            # An interrupt is no answer: the tool stopped to wait for a resume
            # and LangGraph runs it again from its start then. Until then the
            # call reads as stopped mid-run (it may have done part of its
            # work), and the marker lets the resumed run dispatch it again.
            with self._lock, log.lock:
                why = "a LangGraph interrupt; LangGraph runs it again when the run resumes"
                result = unwind_result(call_id, name, dispatched=True, error=why)
                written = log.append(result, origin=Origin.UNWIND.value)
                marker = {"call_id": call_id, "seq": written.seq}
                log.append(ev.Custom(type=_INTERRUPT_EVENT, fields=marker))
                self._paused.add(written.seq)
                self._unseen.add(written.seq)
            return
        failure = f"{type(exc).__name__}: {exc}"
        log.append(ev.ToolResult(call_id=call_id, name=name, content=failure, is_error=True))

    def _held(self, request: Any) -> Awaiting | None:
        """The call's pause, when its tool is one to pause (written now if new)."""
        call = request.tool_call
        name = str(call["name"])
        kind = langgraph_pauses.pause_kind(self._pauses, name, getattr(request, "tool", None))
        if kind is None:
            return None
        call_id = str(call["id"])
        self._record_request(request.state, call_id)
        return langgraph_pauses.hold(self._live(), call_id, name, call.get("args"), kind)

    def _decided(self, request: Any, waiting: Awaiting, value: Any) -> Any:
        """Act on the resume value: None to run the approved call, else the
        answer the log now holds (a rejection, a delivered result)."""
        if langgraph_pauses.act_on(self._live(), waiting, value):
            return None
        return self._recorded_output(request)

    def __call__(self, request: Any, execute: Callable[[Any], Any]) -> Any:
        recorded = self._recorded_output(request)
        if recorded is not None:
            return recorded
        waiting = self._held(request)
        if waiting is not None and waiting.decision is None:
            from langgraph.types import interrupt

            args = request.tool_call.get("args")
            value = interrupt(langgraph_pauses.interrupt_value(waiting, args))
            answered = self._decided(request, waiting, value)
            if answered is not None:
                return answered
        elif waiting is not None:
            langgraph_pauses.resume_decided(self._live())
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

        recorded = await asyncio.to_thread(self._recorded_output, request)
        if recorded is not None:
            return recorded
        waiting = await asyncio.to_thread(self._held, request)
        if waiting is not None and waiting.decision is None:
            from langgraph.types import interrupt

            args = request.tool_call.get("args")
            value = interrupt(langgraph_pauses.interrupt_value(waiting, args))
            answered = await asyncio.to_thread(self._decided, request, waiting, value)
            if answered is not None:
                return answered
        elif waiting is not None:
            await asyncio.to_thread(langgraph_pauses.resume_decided, self._live())
        call_id, name = await asyncio.to_thread(self._before, request)
        try:
            result = await execute(request)
        except Exception as exc:
            await asyncio.to_thread(self._failed, call_id, name, exc)
            raise
        await asyncio.to_thread(self._after, call_id, name, result)
        return result

    def finish(self, state: Any) -> None:
        """Record what the run added after the tools (call it after `invoke`):
        the user's words of a turn that asked for no tools, and the final
        answer; then end the turn. A message already recorded (found by its
        id) is not recorded again; nothing is ever dropped for its text.
        """
        messages = thread_messages(state)
        last = messages[-1] if messages else None
        if last is None or getattr(last, "type", None) != "ai" or calls_of(last):
            return
        log = self._live()
        with self._lock, log.lock:
            if self._recorded(last) or log.owed_calls():
                return
            if not log.turn_open:
                self._check(messages[:-1])
                self._record_new_prompts(messages, len(messages) - 1)
            begin_step(log)
            log.assistant(foreign_text(last.content))
            self._note_ids([last])
            end_turn(log)

    # -- after a crash ----------------------------------------------------------------

    def recover_thread(
        self, graph: Any, config: dict[str, Any], *, revive: bool = False, tools_node: str = "tools"
    ) -> list[Any]:
        """Recover (or revive) the session, then give the thread what the tool
        node never wrote, as that node's output, so the next step is the model:
        one `ToolMessage` per call of the interrupted step, under the original
        call ids, with the real result turnlog recorded or recovery's synthetic
        one; with `revive=True`, the revival notice after them. A crash after
        the step's results reached the thread (saved as the node's writes or in
        a checkpoint) and before the model answered is revived all the same:
        the notice follows the results and the model runs next.

        Calls the thread asked for that never reached the wrapper (the crash
        hit after LangGraph saved the model's message, before the tool node
        ran) provably never started, since the wrapper writes a durable
        dispatch before every tool: they are recorded and answered
        `tool_not_started`, in the log and in the thread. Returns the messages
        written.
        """
        snapshot = graph.get_state(config)
        update = self._recovery_update(snapshot, revive=revive, tools_node=tools_node)
        if update:
            graph.update_state(config, {"messages": update}, as_node=tools_node)
        return update

    async def arecover_thread(
        self, graph: Any, config: dict[str, Any], *, revive: bool = False, tools_node: str = "tools"
    ) -> list[Any]:
        """`recover_thread` for graphs on an async checkpointer."""
        import asyncio

        snapshot = await graph.aget_state(config)
        update = await asyncio.to_thread(
            self._recovery_update, snapshot, revive=revive, tools_node=tools_node
        )
        if update:
            await graph.aupdate_state(config, {"messages": update}, as_node=tools_node)
        return update

    def _recovery_update(self, snapshot: Any, *, revive: bool, tools_node: str) -> list[Any]:
        from turnlog.ops.revival import revive as revive_log

        thread = thread_position(snapshot, tools_node)
        log = self._live()
        with self._lock, log.lock:
            crashed = log.crashed
            if log.crashed:
                log.recover()
            known = requested_ids(log.messages)
            unrecorded = [call for call in thread.pending if str(call["id"]) not in known]
            if unrecorded:
                self._settle_unstarted(thread.messages, thread.messages[-1], unrecorded)
            # Opening the wrapper already closed a crashed turn that owed
            # nothing, so the log alone no longer says the run stopped: the
            # thread does, when it stands between a tool step and the model.
            if revive and (crashed or thread.mid_run):
                revive_log(log)
            # The resume notice the thread has not seen yet: written just now,
            # or by `turnlog revive` before this program started.
            last = log.messages[-1] if log.messages else None
            notice = None
            if last is not None and last.injected == "revival" and not told(thread.messages):
                notice = last
            return resume_update(thread, log.messages, notice)

    def _settle_unstarted(self, messages: Sequence[Any], asking: Any, calls: list[Any]) -> None:
        """Record the model's message whose calls never reached the wrapper, and
        let recovery answer them: the turn dispatched nothing and the step was
        closed by the crash, so each is `tool_not_started` (rule R3)."""
        log = self._live()
        self._record_new_prompts(messages, len(messages) - 1)
        begin_step(log)
        content = foreign_text(asking.content)
        log.assistant(
            [{"type": "text", "text": content}] if content else "",
            [
                ToolCall(id=str(c["id"]), name=str(c["name"]), arguments=c.get("args") or {})
                for c in calls
            ],
        )
        self._note_ids([asking])
        turn = log.open_turn
        assert turn is not None
        # The crash ended this step before any of its calls ran: recovery's own
        # word for that is a `step_end` of origin recovery.
        log.append(
            ev.StepEnd(turn=turn.turn, step=turn.steps, outcome="error"),
            origin=Origin.RECOVERY.value,
        )
        log.recover()


class _Recorded:
    """The thread messages the log holds (by message id), and the lock under
    which one is recorded, shared by the wrappers on one writer."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.ids: set[str] = set()
        # The results written for calls an interrupt paused, by seq; and
        # those with the messages asking for the calls again: what of the log
        # the thread never shows.
        self.paused: set[int] = set()
        self.unseen: set[int] = set()

    @classmethod
    def read(cls, log: Log) -> _Recorded:
        out = cls()
        for event in log.store.iter_events(log.session_id):
            data = event.data
            if isinstance(data, ev.Custom) and data.type == _IDS_EVENT:
                out.ids.update(str(i) for i in data.fields.get("ids", ()))
            elif isinstance(data, ev.Custom) and data.type == _INTERRUPT_EVENT:
                out.paused.add(int(data.fields["seq"]))
                out.unseen.add(int(data.fields["seq"]))
            elif isinstance(data, ev.Custom) and data.type == _RESUME_EVENT:
                out.unseen.add(int(data.fields["seq"]))
        return out


def recover_thread(
    graph: Any,
    config: dict[str, Any],
    target: str | os.PathLike[str] | Store,
    session_id: str | None = None,
    *,
    revive: bool = False,
    tools_node: str = "tools",
) -> list[Any]:
    """`TurnlogToolWrapper(target, session_id).recover_thread(graph, config)`, for
    a program that has no wrapper at hand; it shares the writer of a wrapper
    open on the same session in this process."""
    with TurnlogToolWrapper(target, session_id, create=False) as tools:
        return tools.recover_thread(graph, config, revive=revive, tools_node=tools_node)
