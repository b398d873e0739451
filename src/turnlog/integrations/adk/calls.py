"""The tool calls of an ADK session: dispatched before ADK runs them, answered once, never twice."""

from __future__ import annotations

import threading
from typing import Any

from google.adk.events.event import Event as AdkEvent
from google.adk.sessions.session import Session

from turnlog import events as ev
from turnlog.core.recovery import unwind_result
from turnlog.events import Origin
from turnlog.handle.log import Log
from turnlog.integrations.adk import pauses as adk_pauses
from turnlog.integrations.kit.answered import answer_before_dispatch
from turnlog.integrations.kit.boundaries import end_step_paused
from turnlog.integrations.kit.tool_calls import AheadCall, dispatch_ahead, tool_idempotency


class ToolCalls:
    """What `TurnlogSessionService` does for the plugin's callbacks (see
    `adk_plugin.PluginHost`): a call's dispatch before ADK runs it, its
    result after, or the answer the log holds handed to ADK instead."""

    _idempotency: dict[str, str]
    _lock: threading.Lock
    _plugged: bool
    _handed: set[tuple[str, str]]
    _reruns: dict[tuple[str, str], str]
    _gates: set[tuple[str, str]]
    _delegations: dict[tuple[str, str], frozenset[str]]
    _ahead: set[tuple[str, str]]

    def _log(self, session_id: str, **options: Any) -> Log:
        raise NotImplementedError

    def _id_of(self, session: Session) -> str:
        raise NotImplementedError

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

    def _offered(self, session: Session, agent_name: str, names: frozenset[str]) -> None:
        """What an agent's model request offered: the names of its tools that
        delegate to a task-mode sub-agent (see `_dispatch_delegations`)."""
        session_id = self._id_of(session)
        with self._lock:
            self._delegations[(session_id, agent_name)] = names

    def _dispatch(
        self,
        session: Session,
        call_id: str,
        name: str,
        tool: Any,
        *,
        args: dict[str, Any] | None = None,
        pause: str | None = None,
        confirmed: bool | None = None,
    ) -> dict[str, Any] | None:
        """Dispatch a call before ADK runs it; or, for a call the log has
        answered (by the tool, by recovery, by a declined confirmation), hand
        ADK the recorded answer as the call's response, and the tool does not
        run again.

        `pause`: `gate` for a call ADK's confirmation gate is about to hold
        (it does not run: no dispatch; see `_result`), `external` for a
        long-running tool's, which waits in the log for its result (see
        `adk_pauses`). `confirmed`: ADK's reading of its client's answer when
        it runs a call again after one (None: no answer); a body that asked
        for it itself runs as the confirmation call it asked with."""
        session_id = self._id_of(session)
        log = self._log(session_id)
        with log.lock:
            if pause == "gate":
                with self._lock:
                    self._gates.add((session_id, call_id))
                return None
            if pause is not None:
                adk_pauses.hold(log, call_id, name, args, pause)
                held = adk_pauses.waiting(log, call_id)
                if held is not None and held.decision is None:
                    return None  # it waits: its body starts what will answer it
            found = adk_pauses.rerun_of(log, session, call_id) if confirmed is not None else None
            logged = found or call_id
            adk_pauses.check_agrees(log, logged, confirmed)
            adk_pauses.acting_on(log, logged)
            answer = answer_before_dispatch(log, logged)
            with self._lock:
                ahead = (session_id, logged) in self._ahead
                if logged != call_id:
                    self._reruns[(session_id, call_id)] = logged
            if answer is None and ahead and logged in set(log.owed_calls()):
                # Dispatched with the reply, as a delegation (see
                # `_dispatch_delegations`): one dispatch per call.
                return None
            if answer is None:
                idempotency = tool_idempotency(
                    name, self._idempotency, getattr(tool, "metadata", None)
                )
                # Durable before the tool body runs: recovery's "not started" rests on it.
                as_name = adk_pauses.CONFIRM if logged != call_id else name
                dispatch = ev.ToolDispatch(call_id=logged, name=as_name, idempotency=idempotency)
                log.append(dispatch, sync=True)
                return None
        with self._lock:
            self._reruns.pop((session_id, call_id), None)
            self._handed.add((session_id, call_id))
        return {"error" if answer.is_error else "result": answer.text}

    def _result(
        self,
        session: Session,
        call_id: str,
        name: str,
        text: str,
        error: bool,
        *,
        args: dict[str, Any] | None = None,
        asked: bool = False,
    ) -> None:
        """A call's answer as ADK reports it after the tool (`asked`: the call
        asked its client to confirm it, by ADK's gate or by its body)."""
        session_id = self._id_of(session)
        with self._lock:
            if (session_id, call_id) in self._handed:
                # ADK reports the answer it was handed as the tool's result:
                # the log holds that answer already.
                self._handed.discard((session_id, call_id))
                return
            gated = (session_id, call_id) in self._gates
            self._gates.discard((session_id, call_id))
            logged = self._reruns.pop((session_id, call_id), call_id)
        log = self._log(session_id)
        with log.lock:
            if gated and asked:
                # ADK's gate held the call and asked its client: it did not
                # run, and it waits; the gate's stand-in is not its answer.
                adk_pauses.hold(log, call_id, name, args, "approval")
                return
            pause = adk_pauses.waiting(log, logged)
            if pause is not None and pause.decision is None:
                if error and pause.kind == "external":
                    # A long-running tool that raised starting its operation:
                    # that error is the answer its call gets.
                    log.deliver(logged, text, by="adk", is_error=True, keeper=adk_pauses.DECIDED_IN)
                # Otherwise a long-running tool's first reply: not the call's answer.
                return
            result = ev.ToolResult(
                call_id=logged,
                name=adk_pauses.CONFIRM if logged != call_id else name,
                content=text,
                is_error=error,
            )
            # A gated call a callback answered before the gate never ran:
            # its answer has no dispatch.
            log.append(result, allow_undispatched=gated)
            # The last call of a step in which another waits: the step stops there.
            end_step_paused(log)

    def _cut_off(self, session: Session, call_id: str, name: str, error: BaseException) -> None:
        """A call ADK cancelled mid-run (a parallel call failed): it may have
        taken effect, so it reads outcome unknown (U1), not a plain error. A
        gated call never started (the gate runs no body): not started. A
        body run again for a confirmation is the confirmation call's."""
        session_id = self._id_of(session)
        with self._lock:
            gated = (session_id, call_id) in self._gates
            self._gates.discard((session_id, call_id))
            logged = self._reruns.pop((session_id, call_id), call_id)
        log = self._log(session_id)
        with log.lock:
            if logged not in set(log.owed_calls()):
                return
            result = unwind_result(logged, name, dispatched=not gated, error=type(error).__name__)
            log.append(result, origin=Origin.UNWIND.value)


def delegated(log: Log, event: AdkEvent) -> bool:
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
