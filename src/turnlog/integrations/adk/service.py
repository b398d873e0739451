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
import os
import threading
import warnings
from collections.abc import Mapping
from types import TracebackType
from typing import Any

from google.adk.events.event import Event as AdkEvent
from google.adk.platform import uuid as platform_uuid
from google.adk.sessions.base_session_service import (
    BaseSessionService,
    GetSessionConfig,
    ListSessionsResponse,
)
from google.adk.sessions.session import Session

from turnlog import events as ev
from turnlog.errors import SessionExistsError, TurnlogError
from turnlog.events import (
    Origin as Origin,  # a documented name here
    ToolCall,
)
from turnlog.handle.log import Log
from turnlog.integrations.adk import pauses as adk_pauses
from turnlog.integrations.adk.calls import ToolCalls, delegated
from turnlog.integrations.adk.events import ADK_EVENT, STAND_INS, timestamp_s
from turnlog.integrations.adk.plugin import TurnlogPlugin, result_text
from turnlog.integrations.adk.state import (
    DELETED,
    AdkHeader,
    AdkSessionExistsError,
    AdkSessionNotFoundError,
    app_headers,
    deleted_here,
    free_id,
    is_deleted,
    locate,
    own_state,
    recent_events,
    scoped_session_id,
    session_from_log,
    shared_keys,
)
from turnlog.integrations.kit.boundaries import begin_step, end_step_paused, end_turn
from turnlog.integrations.kit.handles import acquire, release, shared_state
from turnlog.integrations.kit.runs import fail_run, refuse_interrupted, refuse_unfinished
from turnlog.integrations.kit.tool_calls import check_idempotency_map, tool_idempotency
from turnlog.runtime.approvals import undecided
from turnlog.stores import Store, open_store

__all__ = [
    "AdkSessionExistsError",
    "AdkSessionNotFoundError",
    "TurnlogPlugin",
    "TurnlogSessionService",
    "scoped_session_id",
]


class TurnlogSessionService(ToolCalls, BaseSessionService):
    """ADK's session service on a turnlog store (see the module docstring).

    `target` is a store directory, `sqlite:///file` or another store URL. Each
    ADK session is one turnlog session, under the ADK id when that id is free
    and can be a turnlog id, else under its scoped id (`scoped_session_id`;
    `turnlog_session_id` tells which); its app, user, ADK id and initial
    state are kept in the session header. A handle with a lifetime:
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
        # Turnlog session id -> its writer; (app, user, ADK session id) -> the
        # turnlog id of its live session, as found last (see `_id_of`).
        self._logs: dict[str, Log] = {}
        self._ids: dict[tuple[str, str, str], str] = {}
        self._lock = threading.Lock()
        # Set once the plugin has seen a run: it dispatches each call itself.
        self._plugged = False
        # (session id, call id) of the calls handed their recorded answer
        # instead of running: ADK reports that answer back as their result.
        self._handed: set[tuple[str, str]] = set()
        # (session id, ADK call id) -> the confirmation call its body runs
        # again as, once the client answered it (see `adk_pauses`).
        self._reruns: dict[tuple[str, str], str] = {}
        # (session id, call id) of the calls ADK's confirmation gate is about
        # to hold: paused once the gate has asked, never dispatched.
        self._gates: set[tuple[str, str]] = set()
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
        session_id = (session_id or "").strip() or platform_uuid.new_uuid()
        return await asyncio.to_thread(
            self._create, app_name, user_id, own_state(state), session_id
        )

    def _create(
        self, app_name: str, user_id: str, state: dict[str, Any], session_id: str
    ) -> Session:
        while True:
            if self._live(app_name, user_id, session_id) is not None:
                raise AdkSessionExistsError(f"Session with id {session_id} already exists.")
            turnlog_id = free_id(self.store, app_name, user_id, session_id)
            adk = {"app_name": app_name, "user_id": user_id, "session_id": session_id}
            meta = {"adk": {**adk, "state": state}}
            try:
                self._log(turnlog_id, create=True, meta=meta)
                break
            except SessionExistsError:
                # Another writer took the id between the look and the create:
                # look again, as that writer may have created this very session.
                continue
        with self._lock:
            self._ids[(app_name, user_id, session_id)] = turnlog_id
        header = self.store.read_header(turnlog_id)
        shared = shared_keys(app_headers(self.store, app_name), self._readable_events)
        return Session(
            id=session_id,
            app_name=app_name,
            user_id=user_id,
            state=shared.merged_into(state, user_id),
            # The header's own time, so `get_session` of a session with no
            # events reports the very value `create_session` returned.
            last_update_time=timestamp_s(header.ts if header is not None else None),
        )

    async def get_session(
        self,
        *,
        app_name: str,
        user_id: str,
        session_id: str,
        config: GetSessionConfig | None = None,
    ) -> Session | None:
        return await asyncio.to_thread(self._get, app_name, user_id, session_id.strip(), config)

    def _get(
        self, app_name: str, user_id: str, session_id: str, config: GetSessionConfig | None
    ) -> Session | None:
        header = self._live(app_name, user_id, session_id)
        if header is None:
            return None
        log = self._log(header.turnlog_id)  # opening it repairs it, with recover/revive
        with self._lock:
            self._ids[(app_name, user_id, session_id)] = header.turnlog_id
        with log.lock:
            stored = list(self.store.iter_events(header.turnlog_id))
        shared = shared_keys(app_headers(self.store, app_name), self._readable_events)
        session = session_from_log(header, stored, shared)
        if config is not None:
            session.events = recent_events(session.events, config)
        return session

    async def list_sessions(
        self, *, app_name: str, user_id: str | None = None
    ) -> ListSessionsResponse:
        """The app's sessions (the user's, with `user_id`), each with its
        merged state and no events, least recently updated first."""
        return await asyncio.to_thread(self._list, app_name, user_id)

    def _list(self, app_name: str, user_id: str | None) -> ListSessionsResponse:
        headers = app_headers(self.store, app_name)
        stored = {h.turnlog_id: self._readable_events(h.turnlog_id) for h in headers}
        shared = shared_keys(headers, stored.get)
        out = []
        for header in headers:
            events = stored[header.turnlog_id]
            if not header.names(app_name, user_id) or is_deleted(events or []):
                continue  # another user's, or hidden from ADK as `get_session` hides it
            # A session that cannot be read is listed from its header alone:
            # its own `get_session` reports what is wrong with it.
            session = session_from_log(header, events or [], shared)
            session.events = []
            out.append(session)
        out.sort(key=lambda s: (s.last_update_time, s.user_id, s.id))
        return ListSessionsResponse(sessions=out)

    async def get_user_state(self, *, app_name: str, user_id: str) -> dict[str, Any]:
        """The user's `user:` keys in the app, without the prefix ({} for none)."""
        return await asyncio.to_thread(self._user_state, app_name, user_id)

    def _user_state(self, app_name: str, user_id: str) -> dict[str, Any]:
        shared = shared_keys(app_headers(self.store, app_name), self._readable_events)
        return dict(shared.users.get(user_id, {}))

    async def turnlog_session_id(
        self, *, app_name: str, user_id: str, session_id: str
    ) -> str | None:
        """The id of the turnlog session that holds this ADK session (what
        `turnlog recover`, `turnlog show` and the other commands take), None
        when the app's user has no such session. It is the ADK id itself
        unless that id was taken or cannot be a turnlog id; see
        `adk_state.candidate_ids`."""
        header = await asyncio.to_thread(self._live, app_name, user_id, session_id.strip())
        return header.turnlog_id if header is not None else None

    def _live(self, app_name: str, user_id: str, session_id: str) -> AdkHeader | None:
        return locate(self.store, app_name, user_id, session_id, self._events)

    def _id_of(self, session: Session) -> str:
        """The turnlog id of the live session an ADK `Session` stands for."""
        key = (session.app_name, session.user_id, session.id)
        with self._lock:
            cached = self._ids.get(key)
            log = self._logs.get(cached) if cached is not None else None
        # While this process holds the session's writer no other process can
        # append to it, so the id found earlier still holds the live session
        # unless a service here deleted it (flagged on the shared writer).
        if cached is not None and log is not None and not log.closed and not deleted_here(log)[0]:
            return cached
        header = self._live(*key)
        if header is None:
            raise AdkSessionNotFoundError(f"Session {session.id} not found.")
        with self._lock:
            self._ids[key] = header.turnlog_id
        return header.turnlog_id

    def _events(self, session_id: str) -> list[ev.Event]:
        """A session's events, read under its writer's lock when this service holds it."""
        log = self._logs.get(session_id)
        if log is not None and not log.closed:
            with log.lock:
                return list(self.store.iter_events(session_id))
        return list(self.store.iter_events(session_id))

    def _readable_events(self, session_id: str) -> list[ev.Event] | None:
        """A session's events, or None for one that cannot be read now (another
        writer mid-append, damage): its own `get_session` reports it, and the
        other sessions still load."""
        try:
            return self._events(session_id)
        except TurnlogError:
            return None

    async def delete_session(self, *, app_name: str, user_id: str, session_id: str) -> None:
        """Hide the session from ADK. Appends an event; nothing is deleted."""
        await asyncio.to_thread(self._delete, app_name, user_id, session_id.strip())

    def _delete(self, app_name: str, user_id: str, session_id: str) -> None:
        header = self._live(app_name, user_id, session_id)
        if header is None:
            return  # none to delete, as ADK's own services shrug
        log = self._log(header.turnlog_id)
        with log.lock:
            log.append(ev.Custom(type=DELETED, fields={}))
            deleted_here(log)[0] = True
        # A deleted session takes no more events: its writer is given back.
        with self._lock:
            self._ids.pop((app_name, user_id, session_id), None)
            self._logs.pop(header.turnlog_id, None)
        release(log)

    async def append_event(self, session: Session, event: AdkEvent) -> AdkEvent:
        if event.partial:
            return event
        turnlog_id = await asyncio.to_thread(self._id_of, session)
        log = await asyncio.to_thread(self._log, turnlog_id)
        # Nothing lands in a crashed turn, not even in ADK's copy of the session.
        refuse_interrupted(log)
        parts = (event.content.parts or []) if event.content else []
        said = event.author == "user" and not any(p.function_response for p in parts)
        if said and not log.paused and _run(log)["invocation"] not in (None, event.invocation_id):
            # A new invocation while an earlier one's turn is open: it ended in
            # a way no callback reported (a cancellation, or no plugin). A
            # paused turn ended on purpose: the new message drops its waits.
            refuse_unfinished(log, how=_UNFINISHED_HOW)
        # Only an answer to a confirmation needs the session's confirmation
        # calls (read once here, not per event): which calls it decides, and
        # which of them ADK acted on before (it takes each answer once).
        answers = adk_pauses.answers_confirmation(event)
        consumed = adk_pauses.consumed_confirmations(session, event) if answers else set()
        event = await super().append_event(session, event)
        targets = adk_pauses.confirmation_targets(session) if answers else {}
        await asyncio.to_thread(self._record, log, event, targets, consumed)
        # The caller's session was updated at its event's time, as ADK's own
        # services stamp it: `get_session` reports the same.
        session.last_update_time = event.timestamp
        return event

    # -- writing ADK's events ---------------------------------------------------------

    def _record(
        self, log: Log, event: AdkEvent, targets: dict[str, str], consumed: set[str]
    ) -> None:
        parts = list(event.content.parts or []) if event.content else []
        text = "".join(p.text for p in parts if p.text and not p.thought)
        calls = [p.function_call for p in parts if p.function_call]
        responses = [p.function_response for p in parts if p.function_response]
        fields: dict[str, Any] = {"event": event.model_dump(mode="json", exclude_none=True)}
        raw = ev.Custom(type=ADK_EVENT, fields=fields)
        with log.lock:
            if event.author == "user" and not responses:
                if log.paused and text:
                    # A new message while calls wait: ADK goes on without
                    # their answers, which may still be acted on (A3).
                    log.expire(because="a new message came while it waited")
                if text:
                    log.user(text)
                log.append(raw)
            elif calls and all(c.name == adk_pauses.CONFIRM for c in calls):
                # ADK's own call asking its client to confirm a tool call.
                # For a call its gate holds, that call waits already; for a
                # body that asked (`request_confirmation`), this one waits.
                asked = [
                    c
                    for c in calls
                    if adk_pauses.waiting(log, adk_pauses.original_of(c)) is None
                    and adk_pauses.waiting(log, str(c.id)) is None
                ]
                if not self._plugged:
                    warnings.warn(
                        adk_pauses.UnpluggedPauseWarning(
                            "ADK asked its client to confirm a tool call, and this "
                            "TurnlogSessionService runs without its plugin: the call is "
                            "not paused in the log; pass plugins=[sessions.plugin] to App"
                        ),
                        stacklevel=2,
                    )
                elif asked and log.turn_open:
                    adk_pauses.ask(log, asked)
                log.append(raw)
            elif calls:
                if not log.turn_open:
                    _run(log)["invocation"] = event.invocation_id
                begin_step(log, open_step=not delegated(log, event))
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
                if event.author == "user":
                    adk_pauses.record_client_answers(log, event, targets, consumed)
                    adk_pauses.record_late(log, responses)
                stand_ins = adk_pauses.stand_ins(log, event)
                if stand_ins:
                    fields[STAND_INS] = stand_ins
                owed = set(log.owed_calls())
                for response in responses:
                    if (
                        response.id in owed
                        and response.id not in stand_ins
                        and response.name != adk_pauses.CONFIRM
                    ):
                        # A call ADK ran without the plugin's callbacks (one
                        # of its own tools) has a result and no dispatch.
                        log.append(
                            ev.ToolResult(
                                call_id=str(response.id),
                                name=response.name,
                                content=result_text(response.response),
                            ),
                            allow_undispatched=True,
                        )
                log.append(raw)
            elif text and event.is_final_response():
                if not log.turn_open:
                    _run(log)["invocation"] = event.invocation_id
                begin_step(log, open_step=not delegated(log, event))
                log.assistant(text)
                log.append(raw)
                if undecided(log):
                    # The model spoke while calls wait (a long-running tool's
                    # first reply, a body's request): the turn stays paused.
                    end_step_paused(log)
                elif end_turn(log):
                    _run(log)["invocation"] = None
            else:
                log.append(raw)

    def _failed(self, session_id: str, error: BaseException, invocation: str | None) -> None:
        log = self._log(session_id)
        with log.lock:
            run = _run(log)
            if invocation is not None and run["invocation"] not in (None, invocation):
                return  # another run's turn (this run was refused for it): not ours to close
            fail_run(log, error)
            run["invocation"] = None

    def _run_failed(self, session: Session, error: BaseException, invocation: str | None) -> None:
        try:
            session_id = self._id_of(session)
        except AdkSessionNotFoundError:
            return  # the run failed for want of its session: no turn to close
        self._failed(session_id, error, invocation)

    async def fail_run(
        self,
        session_id: str,
        error: BaseException,
        *,
        app_name: str | None = None,
        user_id: str | None = None,
    ) -> None:
        """Close the turn a run left open when it ended unseen (cancelled, or
        run without `sessions.plugin`): a dispatched call unanswered reads
        outcome unknown, an undispatched one not started, the turn ends
        `error` (`cancelled` for a cancellation). With the plugin, a run that
        raises is closed this way on its own.

        `session_id` is the ADK session's id; give `app_name` and `user_id`
        when two users of this service have sessions under that id."""
        await asyncio.to_thread(self._fail_by_id, session_id, error, app_name, user_id)

    def _fail_by_id(
        self, session_id: str, error: BaseException, app_name: str | None, user_id: str | None
    ) -> None:
        if app_name is not None and user_id is not None:
            session = Session(id=session_id, app_name=app_name, user_id=user_id)
            self._failed(self._id_of(session), error, None)
            return
        with self._lock:
            found = {t for (_, _, adk_id), t in self._ids.items() if adk_id == session_id}
        # The ADK id names one session this service has worked on: that one.
        # Otherwise it is taken as the turnlog id it is stored under.
        self._failed(found.pop() if len(found) == 1 else session_id, error, None)


_UNFINISHED_HOW = (
    "an earlier run on this session ended without ending its turn (cancelled, or run "
    "without sessions.plugin); call `await sessions.fail_run(session_id, error)` "
    "with what ended it, then run again"
)


def _run(log: Log) -> dict[str, str | None]:
    """The invocation whose turn is open, shared by the services on this writer."""
    return shared_state(log, "adk", lambda: {"invocation": None})
