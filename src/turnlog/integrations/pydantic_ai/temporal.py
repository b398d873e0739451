"""Pydantic AI under Temporal: hooks that run in the workflow, each turnlog write an activity's.

Temporal runs the agent's loop in the workflow sandbox, where nothing may
write a file, and each model request and tool call as an activity. The
hooks here record what the run did as plain data (the prompt, each reply)
and hand it to turnlog's activities (`ACTIVITIES`, registered on the
worker), which write it for the workflow's run:

- `turnlog_record` writes the run's turn as the workflow knows it, from the
  top: what an earlier call (or a killed attempt of this one) wrote is met,
  not written again (docs/engines.md).
- `turnlog_dispatch` makes a call's dispatch durable before its tool's
  activity is scheduled, or hands back the answer the log holds. Run again
  after its worker died, it finds its own dispatch and lets the tool run:
  Temporal schedules the tool only after this activity completed.
- `turnlog_result` records the tool's result.
- `turnlog_crashed` answers a call whose tool's activity failed because its
  worker died (a timeout): R1, outcome unknown. A destructive tool's
  activity must not be retried by Temporal for this to hold
  (`maximum_attempts=1`, docs/engines.md).

When Temporal replays the workflow, the activities that completed are not
run again: their recorded results come back, and nothing is written twice.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from pydantic_ai import messages as pm
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.exceptions import SkipToolExecution, ToolFailed
from temporalio import activity, workflow

from turnlog.events import EngineRun, ToolCall
from turnlog.integrations.kit.handles import open_engine_run
from turnlog.integrations.kit.runs import fail_run

#: How long one of turnlog's activities may take (one write, or a read of
#: the session): far more than it needs, so only a dead worker times out.
ACTIVITY_TIMEOUT_S = 60.0


def _handle(target: str, session_id: str, run_id: str, *, replay: bool) -> Any:
    run = EngineRun(engine="temporal", run_id=run_id)
    return open_engine_run(target, session_id, run, replay=replay)


async def _off_loop(fn: Any, *args: Any) -> Any:
    """A write run off the worker's event loop, for the workflow's run."""
    return await asyncio.to_thread(fn, activity.info().workflow_id or "", *args)


def _record(run_id: str, target: str, session_id: str, ops: list[dict[str, Any]]) -> None:
    """The run's turn, written from the top; met where the log holds it."""
    with _handle(target, session_id, run_id, replay=True) as log:
        turn = log.begin_turn()
        step_open = False
        for op in ops:
            kind = op["op"]
            if kind == "prompt":
                log.user(op["content"])
            elif kind == "reply":
                if step_open:
                    log.end_step()
                log.begin_step()
                step_open = True
                calls = [ToolCall(**call) for call in op["calls"]]
                log.assistant(op["parts"], calls)
            elif kind == "end" and op["reason"] == "complete":
                log.end_turn(turn)
            elif kind == "end":
                fail_run(log, RuntimeError(op.get("error") or "the run failed"))


def _dispatch(
    run_id: str, target: str, session_id: str, call: dict[str, Any], idempotency: str | None
) -> dict[str, Any] | None:
    """The call's dispatch, durable; or the answer the log already holds."""
    from turnlog.runtime.at_most_once import begin_once

    with _handle(target, session_id, run_id, replay=False) as log:
        tool_call = ToolCall(**call)
        sighting = log.open_call(tool_call.id)
        if sighting is not None and sighting.dispatch_seq is not None and not sighting.answered:
            return None  # this activity's own dispatch: the tool has not been scheduled
        start = begin_once(log, tool_call, idempotency)  # type: ignore[arg-type]
        if start.answer is None:
            return None
        return {"content": start.answer.content, "is_error": start.answer.is_error}


def _result(
    run_id: str, target: str, session_id: str, call: dict[str, Any], content: str, is_error: bool
) -> None:
    """The tool's result, unless the log already holds it."""
    from turnlog.handle.dispatch import Dispatch

    with _handle(target, session_id, run_id, replay=False) as log:
        sighting = log.open_call(call["id"])
        if sighting is None or sighting.answered or sighting.dispatch_seq is None:
            return
        running = Dispatch(log.held, ToolCall(**call), sighting.dispatch_seq)
        running.result(content, is_error=is_error)


def _crashed(run_id: str, target: str, session_id: str, call: dict[str, Any]) -> str:
    """R1 for a call whose tool's worker died; the answer the log holds if any."""
    from turnlog.core.recovery import crashed_call_result
    from turnlog.core.state import newest_answer
    from turnlog.events import Origin
    from turnlog.text import display_text

    with _handle(target, session_id, run_id, replay=False) as log:
        sighting = log.open_call(call["id"])
        if sighting is not None and not sighting.answered:
            log.append(crashed_call_result(sighting), origin=Origin.RECOVERY.value)
        answer = newest_answer(log.messages, call["id"])
        return display_text(answer.content) if answer is not None else ""


@activity.defn(name="turnlog_record")
async def turnlog_record(target: str, session_id: str, ops: list[dict[str, Any]]) -> None:
    await _off_loop(_record, target, session_id, ops)


@activity.defn(name="turnlog_dispatch")
async def turnlog_dispatch(
    target: str, session_id: str, call: dict[str, Any], idempotency: str | None
) -> dict[str, Any] | None:
    held: dict[str, Any] | None = await _off_loop(_dispatch, target, session_id, call, idempotency)
    return held


@activity.defn(name="turnlog_result")
async def turnlog_result(
    target: str, session_id: str, call: dict[str, Any], content: str, is_error: bool
) -> None:
    await _off_loop(_result, target, session_id, call, content, is_error)


@activity.defn(name="turnlog_crashed")
async def turnlog_crashed(target: str, session_id: str, call: dict[str, Any]) -> str:
    answer: str = await _off_loop(_crashed, target, session_id, call)
    return answer


#: Register these on the worker beside the agent's own activities.
ACTIVITIES = [turnlog_record, turnlog_dispatch, turnlog_result, turnlog_crashed]


def _reply_of(response: Any) -> dict[str, Any]:
    parts: list[dict[str, Any]] = []
    calls: list[dict[str, Any]] = []
    for part in response.parts:
        if isinstance(part, pm.TextPart):
            parts.append({"type": "text", "text": part.content})
        elif isinstance(part, pm.ToolCallPart):
            calls.append(
                {"id": part.tool_call_id, "name": part.tool_name, "arguments": part.args_as_dict()}
            )
    return {"op": "reply", "parts": parts, "calls": calls}


def _prompt_of(messages: list[Any]) -> str | None:
    """The run's prompt: in the newest request (an earlier run's come first)."""
    for message in reversed(messages):
        if isinstance(message, pm.ModelRequest):
            for part in message.parts:
                if isinstance(part, pm.UserPromptPart) and isinstance(part.content, str):
                    return part.content
    return None


@dataclass
class TurnlogTemporalCapability(AbstractCapability[Any]):
    """Records a Pydantic AI run under `TemporalDurability` in a turnlog
    session, each tool call at most once and told to the model; its hooks
    write only through turnlog's activities (`ACTIVITIES`)."""

    target: str | os.PathLike[str]
    session_id: str
    idempotency: dict[str, str] | None = None
    # The run's writes so far, by the workflow's run: plain data, the same
    # on every replay of the workflow.
    _ops: dict[str, list[dict[str, Any]]] = field(default_factory=dict, init=False, repr=False)

    async def _activity(self, fn: Any, *args: Any) -> Any:
        return await workflow.execute_activity(
            fn,
            args=[str(self.target), self.session_id, *args],
            start_to_close_timeout=timedelta(seconds=ACTIVITY_TIMEOUT_S),
        )

    def _run_ops(self) -> list[dict[str, Any]]:
        return self._ops.setdefault(workflow.info().workflow_id, [])

    async def before_model_request(self, ctx: Any, request_context: Any) -> Any:
        ops = self._run_ops()
        if not ops:
            prompt = getattr(ctx, "prompt", None)
            if not isinstance(prompt, str):
                prompt = _prompt_of(list(getattr(ctx, "messages", None) or []))
            ops.append({"op": "prompt", "content": prompt or ""})
        return request_context

    async def after_model_request(self, ctx: Any, *, request_context: Any, response: Any) -> Any:
        ops = self._run_ops()
        ops.append(_reply_of(response))
        await self._activity(turnlog_record, ops)
        return response

    async def before_tool_execute(self, ctx: Any, *, call: Any, tool_def: Any, args: Any) -> Any:
        idempotency = (self.idempotency or {}).get(call.tool_name)
        held = await self._activity(turnlog_dispatch, _call_of(call), idempotency)
        if held is not None:
            if held["is_error"]:
                raise ToolFailed(held["content"])
            raise SkipToolExecution(held["content"])
        return args

    async def after_tool_execute(
        self, ctx: Any, *, call: Any, tool_def: Any, args: Any, result: Any
    ) -> Any:
        text = result if isinstance(result, str) else str(result)
        await self._activity(turnlog_result, _call_of(call), text, False)
        return result

    async def on_tool_execute_error(
        self, ctx: Any, *, call: Any, tool_def: Any, args: Any, error: Exception
    ) -> Any:
        from temporalio.exceptions import ActivityError, TimeoutError as ActivityTimeout

        if isinstance(error, ActivityError) and isinstance(error.cause, ActivityTimeout):
            # The tool's worker died with the call in flight: not run again.
            return await self._activity(turnlog_crashed, _call_of(call))
        await self._activity(
            turnlog_result, _call_of(call), f"{type(error).__name__}: {error}", True
        )
        raise error

    async def after_run(self, ctx: Any, *, result: Any) -> Any:
        ops = self._run_ops()
        ops.append({"op": "end", "reason": "complete"})
        await self._activity(turnlog_record, ops)
        self._ops.pop(workflow.info().workflow_id, None)
        return result


def _call_of(call: Any) -> dict[str, Any]:
    return {"id": call.tool_call_id, "name": call.tool_name, "arguments": call.args_as_dict()}
