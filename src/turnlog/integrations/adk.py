"""turnlog under Google's Agent Development Kit: a session service and a plugin that write ahead.

    sessions = TurnlogSessionService("sessions")
    app = App(name="shop", root_agent=agent, plugins=[sessions.plugin])
    runner = Runner(app=app, session_service=sessions)

ADK hands every event to its session service (`append_event`) before it acts
on it: the model's function-call event is durable before ADK runs the tools.
The service writes each event into a turnlog session (the user's words, the
model's replies with their calls, the results, the turn's end) and keeps the
ADK event itself beside them, so `get_session` gives ADK back its own events.
The plugin writes a durable `tool_dispatch` before each tool body and the
result after it, so with several calls in a step recovery can tell the call
that was running from the ones that never started; a call to a task-mode
sub-agent, which ADK runs with no tool callback, is dispatched with the
function-call event. Without the plugin the
function-call event is the dispatch record of all its calls (each reads "may
have run" after a crash, pessimistic on purpose).

After a SIGKILL mid-tool, `turnlog recover` (or `revive=True` here) answers
the owed calls, and `get_session` hands ADK a function-response event for
each under the call's id: `runner.run_async` on the same session resumes with
the call answered, neither dropped (ADK's default for a call with no
response) nor run again (its resumable mode).
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
import time
from collections.abc import Mapping
from types import TracebackType
from typing import Any

from google.adk.errors.already_exists_error import AlreadyExistsError
from google.adk.events.event import Event as AdkEvent
from google.adk.plugins.base_plugin import BasePlugin
from google.adk.sessions.base_session_service import (
    BaseSessionService,
    GetSessionConfig,
    ListSessionsResponse,
)
from google.adk.sessions.session import Session

from turnlog import events as ev
from turnlog.core.recovery import unwind_result
from turnlog.errors import TurnlogError
from turnlog.events import Origin, ToolCall
from turnlog.handle.log import Log
from turnlog.integrations import (
    AheadCall,
    acquire,
    begin_step,
    check_idempotency_map,
    dispatch_ahead,
    end_turn,
    fail_run,
    refuse_interrupted,
    refuse_unfinished,
    release,
    shared_state,
    tool_idempotency,
)
from turnlog.integrations.adk_events import ADK_EVENT, adk_events, timestamp_s
from turnlog.integrations.answered import answer_before_dispatch
from turnlog.stores import Store, open_store

# `delete_session` never deletes (the log is append-only): it appends this.
_DELETED = "x_adk_deleted"


def _result_text(result: Any) -> str:
    """A tool's result as the text turnlog records (ADK wraps a plain return
    value as `{"result": value}`)."""
    if isinstance(result, dict) and set(result) == {"result"}:
        result = result["result"]
    return result if isinstance(result, str) else json.dumps(result, default=str)


class TurnlogSessionService(BaseSessionService):
    """ADK's session service on a turnlog store (see the module docstring).

    `target` is a store directory, `sqlite:///file` or another store URL. Each
    ADK session is one turnlog session with the same id; its app, user and
    initial state are kept in the session header. A handle with a lifetime:
    `async with TurnlogSessionService(...)` or `await sessions.close()` releases
    the sessions it opened (services in one process share one writer per
    session). `recover=True` / `revive=True` repair a crashed session when it
    is first read; without them, new events on it are refused until
    `turnlog recover` has answered its owed calls. `idempotency` maps tool
    names to `read_only`, `idempotent`, `destructive` or `unknown`.
    """

    def __init__(
        self,
        target: str | os.PathLike[str] | Store,
        *,
        idempotency: Mapping[str, str] | None = None,
        recover: bool = False,
        revive: bool = False,
        durability: str = "barrier",
    ) -> None:
        self.store, _ = open_store(target)
        self._idempotency = check_idempotency_map(idempotency)
        self._options: dict[str, Any] = {
            "recover": recover,
            "revive": revive,
            "durability": durability,
        }
        self._logs: dict[str, Log] = {}
        self._lock = threading.Lock()
        # Set once the plugin has seen a run: it dispatches each call itself.
        self._plugged = False
        # (session id, call id) of the calls handed their recorded answer
        # instead of running: ADK reports that answer back as their result.
        self._handed: set[tuple[str, str]] = set()
        # (session id, agent name) -> the names of that agent's task-mode
        # sub-agents, as its last model request offered them (see
        # `TurnlogPlugin.before_model_callback`); and the (session id, call
        # id) of the delegations dispatched ahead of ADK.
        self._delegations: dict[tuple[str, str], frozenset[str]] = {}
        self._ahead: set[tuple[str, str]] = set()
        self.plugin = TurnlogPlugin(self)

    # -- handles ------------------------------------------------------------------

    def _log(self, session_id: str, **options: Any) -> Log:
        with self._lock:
            log = self._logs.get(session_id)
            if log is None or log.closed:
                log = acquire(self.store, session_id, **{**self._options, **options})
                self._logs[session_id] = log
            return log

    async def close(self) -> None:
        """Release every session this service opened. Idempotent."""
        with self._lock:
            logs, self._logs = list(self._logs.values()), {}
        for log in logs:
            await asyncio.to_thread(release, log)

    async def __aenter__(self) -> TurnlogSessionService:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    # -- BaseSessionService -----------------------------------------------------------

    async def create_session(
        self,
        *,
        app_name: str,
        user_id: str,
        state: dict[str, Any] | None = None,
        session_id: str | None = None,
    ) -> Session:
        import uuid

        session_id = (session_id or "").strip() or uuid.uuid4().hex
        if await asyncio.to_thread(self.store.exists, session_id):
            raise AlreadyExistsError(f"Session with id {session_id} already exists.")
        meta = {"adk": {"app_name": app_name, "user_id": user_id, "state": state or {}}}
        log = await asyncio.to_thread(self._log, session_id, create=True, meta=meta)
        return Session(
            id=log.session_id,
            app_name=app_name,
            user_id=user_id,
            state=dict(state or {}),
            last_update_time=time.time(),
        )

    async def get_session(
        self,
        *,
        app_name: str,
        user_id: str,
        session_id: str,
        config: GetSessionConfig | None = None,
    ) -> Session | None:
        return await asyncio.to_thread(self._get, app_name, user_id, session_id, config)

    def _get(
        self, app_name: str, user_id: str, session_id: str, config: GetSessionConfig | None
    ) -> Session | None:
        if not self.store.exists(session_id):
            return None
        log = self._log(session_id)
        with log.lock:
            stored = list(self.store.iter_events(session_id))
        header = stored[0].data
        adk = ((header.meta or {}) if isinstance(header, ev.Session) else {}).get("adk", {})
        if adk.get("app_name") != app_name or adk.get("user_id") != user_id:
            return None
        if any(isinstance(e.data, ev.Custom) and e.data.type == _DELETED for e in stored):
            return None
        session = Session(
            id=session_id, app_name=app_name, user_id=user_id, state=dict(adk.get("state", {}))
        )
        for event in adk_events(stored):
            self._update_session_state(session, event)
            session.events.append(event)
        if session.events:
            session.last_update_time = session.events[-1].timestamp
        # `app:` and `user:` keys are shared across the app's (the user's)
        # sessions, as ADK's own services share them.
        session.state.update(self._shared_keys(app_name, user_id))
        if config is not None:
            events = session.events
            if config.num_recent_events is not None:
                events = events[-config.num_recent_events :] if config.num_recent_events else []
            if config.after_timestamp is not None:
                events = [e for e in events if e.timestamp >= config.after_timestamp]
            session.events = events
        return session

    async def list_sessions(
        self, *, app_name: str, user_id: str | None = None
    ) -> ListSessionsResponse:
        return await asyncio.to_thread(self._list, app_name, user_id)

    def _list(self, app_name: str, user_id: str | None) -> ListSessionsResponse:
        out = []
        for session_id in self.store.sessions():
            header = self.store.read_header(session_id)
            data = header.data if header is not None else None
            adk = ((data.meta or {}) if isinstance(data, ev.Session) else {}).get("adk", {})
            if adk.get("app_name") != app_name or user_id not in (None, adk.get("user_id")):
                continue
            if self._deleted(session_id):
                continue  # hidden from ADK, as `get_session` hides it
            out.append(Session(id=session_id, app_name=app_name, user_id=adk["user_id"]))
        return ListSessionsResponse(sessions=out)

    def _shared_keys(self, app_name: str, user_id: str) -> dict[str, Any]:
        """The newest value of every `app:` key set in the app's sessions and
        every `user:` key set in this user's, read from the ADK events kept in
        each session (so it survives the process), oldest first."""
        changes: list[tuple[float, str, Any]] = []
        for session_id in self.store.sessions():
            header = self.store.read_header(session_id)
            data = header.data if header is not None else None
            adk = ((data.meta or {}) if isinstance(data, ev.Session) else {}).get("adk", {})
            if adk.get("app_name") != app_name:
                continue
            prefixes = ("app:", "user:") if adk.get("user_id") == user_id else ("app:",)
            created = timestamp_s(header.ts) if header is not None else 0.0
            for key, value in (adk.get("state") or {}).items():
                if key.startswith(prefixes):
                    changes.append((created, key, value))
            try:
                events = self._events(session_id)
            except TurnlogError:
                # A session another writer is mid-append on, or a damaged one:
                # its own `get_session` reports it; the others still load.
                continue
            for event in events:
                if isinstance(event.data, ev.Custom) and event.data.type == ADK_EVENT:
                    stored = event.data.fields["event"]
                    delta = (stored.get("actions") or {}).get("state_delta") or {}
                    when = float(stored.get("timestamp") or 0.0)
                    changes.extend((when, k, v) for k, v in delta.items() if k.startswith(prefixes))
        changes.sort(key=lambda change: change[0])
        return {key: value for _, key, value in changes}

    def _events(self, session_id: str) -> list[ev.Event]:
        """A session's events, read under its writer's lock when this service holds it."""
        log = self._logs.get(session_id)
        if log is not None and not log.closed:
            with log.lock:
                return list(self.store.iter_events(session_id))
        return list(self.store.iter_events(session_id))

    def _deleted(self, session_id: str) -> bool:
        events = self._events(session_id)
        return any(isinstance(e.data, ev.Custom) and e.data.type == _DELETED for e in events)

    async def delete_session(self, *, app_name: str, user_id: str, session_id: str) -> None:
        """Hide the session from ADK. Appends an event; nothing is deleted."""
        log = await asyncio.to_thread(self._log, session_id)
        await asyncio.to_thread(log.append, ev.Custom(type=_DELETED, fields={}))

    async def append_event(self, session: Session, event: AdkEvent) -> AdkEvent:
        if event.partial:
            return event
        log = await asyncio.to_thread(self._log, session.id)
        # Nothing lands in a crashed turn, not even in ADK's copy of the session.
        refuse_interrupted(log)
        parts = (event.content.parts or []) if event.content else []
        said = event.author == "user" and not any(p.function_response for p in parts)
        if said and _run(log)["invocation"] not in (None, event.invocation_id):
            # A new invocation while an earlier one's turn is open: it ended in
            # a way no callback reported (a cancellation, or no plugin).
            refuse_unfinished(log, how=_UNFINISHED_HOW)
        event = await super().append_event(session, event)
        await asyncio.to_thread(self._record, log, event)
        return event

    # -- writing ADK's events ---------------------------------------------------------

    def _record(self, log: Log, event: AdkEvent) -> None:
        parts = list(event.content.parts or []) if event.content else []
        text = "".join(p.text for p in parts if p.text and not p.thought)
        calls = [p.function_call for p in parts if p.function_call]
        responses = [p.function_response for p in parts if p.function_response]
        raw = ev.Custom(
            type=ADK_EVENT, fields={"event": event.model_dump(mode="json", exclude_none=True)}
        )
        with log.lock:
            if event.author == "user" and not responses:
                if text:
                    log.user(text)
                log.append(raw)
            elif calls:
                if not log.turn_open:
                    _run(log)["invocation"] = event.invocation_id
                begin_step(log, open_step=not _delegated(log, event))
                log.assistant(
                    [{"type": "text", "text": text}] if text else "",
                    [
                        ToolCall(id=str(c.id), name=str(c.name), arguments=dict(c.args or {}))
                        for c in calls
                    ],
                )
                log.append(raw)
                self._dispatch_delegations(log, event, calls)
                if not self._plugged:
                    # The function-call event is the dispatch record: ADK runs
                    # the tools after this returns.
                    log.append_many(
                        [
                            ev.ToolDispatch(
                                call_id=str(c.id),
                                name=c.name,
                                idempotency=tool_idempotency(c.name, self._idempotency),
                            )
                            for c in calls
                        ],
                        sync=True,
                    )
            elif responses:
                owed = set(log.owed_calls())
                for response in responses:
                    if response.id in owed:
                        # A call ADK ran without the plugin's callbacks (one
                        # of its own tools) has a result and no dispatch.
                        log.append(
                            ev.ToolResult(
                                call_id=str(response.id),
                                name=response.name,
                                content=_result_text(response.response),
                            ),
                            allow_undispatched=True,
                        )
                log.append(raw)
            elif text and event.is_final_response():
                if not log.turn_open:
                    _run(log)["invocation"] = event.invocation_id
                begin_step(log, open_step=not _delegated(log, event))
                log.assistant(text)
                log.append(raw)
                if end_turn(log):
                    _run(log)["invocation"] = None
            else:
                log.append(raw)

    def _dispatch_delegations(self, log: Log, event: AdkEvent, calls: list[Any]) -> None:
        """Dispatch, with the model's reply, each call that delegates to a
        task-mode sub-agent (`LlmAgent(mode="task")`).

        ADK runs such a call itself: its agent wrapper takes the call from the
        reply and runs the sub-agent (its callbacks, model requests and tools,
        whose events land in this session) before any tool callback could
        fire, and answers the call with the sub-agent's result only when it
        finishes. No callback fires for the call at all, so the reply is the
        last point before it runs: dispatched here, a crash inside the
        sub-agent reads "may have run" (R1), not "did not run" (R2), and the
        answer ADK writes later is recorded as any dispatched call's. Without
        the plugin every call of the reply is dispatched anyway."""
        if not self._plugged:
            return
        session_id = log.session_id
        with self._lock:
            names = self._delegations.get((session_id, event.author), frozenset())
        ahead = [
            AheadCall(
                call_id=str(c.id),
                name=c.name,
                idempotency=tool_idempotency(c.name, self._idempotency),
            )
            for c in calls
            if c.name in names and c.id
        ]
        if not ahead:
            return
        written = dispatch_ahead(log, ahead)
        with self._lock:
            self._ahead.update((session_id, call_id) for call_id in written)

    def _dispatch(
        self, session_id: str, call_id: str, name: str, tool: Any, *, confirmed: bool = False
    ) -> dict[str, Any] | None:
        """Dispatch a call before ADK runs it; or, for a call the log has
        answered (by the tool, by recovery), hand ADK the recorded answer as
        the call's response, and the tool does not run again.

        `confirmed`: ADK runs a call again once a person confirmed it, after
        its own "requires confirmation" stand-in answered it. The stand-in is
        no answer, and settling pauses is not this guard's work: such a call
        is dispatched as before."""
        log = self._log(session_id)
        with log.lock:
            answer = None if confirmed else answer_before_dispatch(log, call_id)
            with self._lock:
                ahead = (session_id, call_id) in self._ahead
            if answer is None and ahead and call_id in set(log.owed_calls()):
                # Dispatched with the reply, as a delegation (see
                # `_dispatch_delegations`): one dispatch per call.
                return None
            if answer is None:
                idempotency = tool_idempotency(
                    name, self._idempotency, getattr(tool, "metadata", None)
                )
                # Durable before the tool body runs: recovery's "not started" rests on it.
                dispatch = ev.ToolDispatch(call_id=call_id, name=name, idempotency=idempotency)
                log.append(dispatch, sync=True)
                return None
        with self._lock:
            self._handed.add((session_id, call_id))
        return {"error" if answer.is_error else "result": answer.text}

    def _result(self, session_id: str, call_id: str, name: str, text: str, error: bool) -> None:
        with self._lock:
            if (session_id, call_id) in self._handed:
                # ADK reports the answer it was handed as the tool's result:
                # the log holds that answer already.
                self._handed.discard((session_id, call_id))
                return
        self._log(session_id).append(
            ev.ToolResult(call_id=call_id, name=name, content=text, is_error=error)
        )

    def _cut_off(self, session_id: str, call_id: str, name: str, error: BaseException) -> None:
        """A call ADK cancelled mid-run (a parallel call failed): it may have
        taken effect, so it reads outcome unknown (U1), not a plain error."""
        log = self._log(session_id)
        with log.lock:
            if call_id not in set(log.owed_calls()):
                return
            result = unwind_result(call_id, name, dispatched=True, error=type(error).__name__)
            log.append(result, origin=Origin.UNWIND.value)

    def _failed(self, session_id: str, error: BaseException, invocation: str | None) -> None:
        log = self._log(session_id)
        with log.lock:
            run = _run(log)
            if invocation is not None and run["invocation"] not in (None, invocation):
                return  # another run's turn (this run was refused for it): not ours to close
            fail_run(log, error)
            run["invocation"] = None

    async def fail_run(self, session_id: str, error: BaseException) -> None:
        """Close the turn a run left open when it ended unseen (cancelled, or
        run without `sessions.plugin`): a dispatched call unanswered reads
        outcome unknown, an undispatched one not started, the turn ends
        `error` (`cancelled` for a cancellation). With the plugin, a run that
        raises is closed this way on its own."""
        await asyncio.to_thread(self._failed, session_id, error, None)


_UNFINISHED_HOW = (
    "an earlier run on this session ended without ending its turn (cancelled, or run "
    "without sessions.plugin); call `await sessions.fail_run(session_id, error)` "
    "with what ended it, then run again"
)


def _delegated(log: Log, event: AdkEvent) -> bool:
    """The event is the work of a task-mode sub-agent on a call the open step
    still owes: ADK scopes a delegated sub-agent's events to the delegating
    call's id (`isolation_scope`). Its replies stay in that step, which ends
    only once the delegation is answered (a step never ends with a call
    unanswered)."""
    scope = getattr(event, "isolation_scope", None)
    if not scope:
        return False
    turn = log.open_turn
    if turn is None or turn.open_step is None:
        return False
    return any(call.call_id == scope and not call.answered for call in turn.calls)


def _run(log: Log) -> dict[str, str | None]:
    """The invocation whose turn is open, shared by the services on this writer."""
    return shared_state(log, "adk", lambda: {"invocation": None})


class TurnlogPlugin(BasePlugin):
    """Writes each call's dispatch before ADK runs the tool, and its result
    after it (`App(plugins=[sessions.plugin])`)."""

    def __init__(self, service: TurnlogSessionService) -> None:
        super().__init__(name="turnlog")
        self._service = service

    async def on_user_message_callback(self, *, invocation_context: Any, user_message: Any) -> None:
        self._service._plugged = True

    async def before_run_callback(self, *, invocation_context: Any) -> None:
        self._service._plugged = True

    async def before_model_callback(self, *, callback_context: Any, llm_request: Any) -> None:
        # What the model is offered: which of its tools delegate to a
        # task-mode sub-agent, so the reply's call to one is dispatched when
        # the reply is recorded (see `TurnlogSessionService._dispatch_delegations`).
        from google.adk.tools.agent_tool import AgentTool

        names = frozenset(
            name
            for name, tool in (getattr(llm_request, "tools_dict", None) or {}).items()
            if isinstance(tool, AgentTool) and _mode(getattr(tool, "agent", None)) == "task"
        )
        key = (callback_context.session.id, callback_context.agent_name)
        with self._service._lock:
            self._service._delegations[key] = names

    async def before_tool_callback(
        self, *, tool: Any, tool_args: dict[str, Any], tool_context: Any
    ) -> dict[str, Any] | None:
        call_id = tool_context.function_call_id
        if call_id is None:
            return None
        return await asyncio.to_thread(
            self._service._dispatch,
            tool_context.session.id,
            call_id,
            tool.name,
            tool,
            confirmed=getattr(tool_context, "tool_confirmation", None) is not None,
        )

    async def after_tool_callback(
        self, *, tool: Any, tool_args: dict[str, Any], tool_context: Any, result: Any
    ) -> None:
        call_id = tool_context.function_call_id
        if call_id is not None:
            await asyncio.to_thread(
                self._service._result,
                tool_context.session.id,
                call_id,
                tool.name,
                _result_text(result),
                False,
            )

    async def on_tool_error_callback(
        self, *, tool: Any, tool_args: dict[str, Any], tool_context: Any, error: Exception
    ) -> None:
        call_id = tool_context.function_call_id
        if call_id is not None and isinstance(error, asyncio.CancelledError):
            await asyncio.to_thread(
                self._service._cut_off, tool_context.session.id, call_id, tool.name, error
            )
        elif call_id is not None:
            await asyncio.to_thread(
                self._service._result,
                tool_context.session.id,
                call_id,
                tool.name,
                f"{type(error).__name__}: {error}",
                True,
            )

    async def on_run_error_callback(self, *, invocation_context: Any, error: Exception) -> None:
        # The run raised: its turn is closed here, as the reference loop
        # closes one, so the next run on the session starts clean.
        await asyncio.to_thread(
            self._service._failed,
            invocation_context.session.id,
            error,
            invocation_context.invocation_id,
        )


def _mode(agent: Any) -> str | None:
    """An agent's `mode` as its string value (`chat`, `task`, `single_turn`)."""
    mode = getattr(agent, "mode", None)
    return str(getattr(mode, "value", mode)) if mode is not None else None
