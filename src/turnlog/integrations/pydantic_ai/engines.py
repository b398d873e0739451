"""`TurnlogCapability` under a durable engine: a handle per engine run, and each call at most once.

DBOS runs a Pydantic AI agent's hooks in its workflow and, after a crash,
runs the workflow again from the top (docs/engines.md). The handle of each
run is opened for the engine's run, so the replay meets the run's earlier
writes, and every tool and output call goes through `begin_once`: a call
the log answered is handed its answer, one a crash cut short is answered
R1, and neither runs again behind the model's back.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any, cast

from pydantic_ai.exceptions import ModelRetry, SkipToolExecution, ToolFailed

from turnlog.events import EngineRun, IdempotencyValue, ToolCall
from turnlog.handle.log import Log
from turnlog.integrations.kit.engines import engine_run_id
from turnlog.integrations.kit.handles import open_engine_run
from turnlog.integrations.pydantic_ai.pauses import acting_on_approval
from turnlog.runtime.async_loop import AsyncLog
from turnlog.runtime.at_most_once import begin_once
from turnlog.stores import Store


async def open_for_run(
    target: str | os.PathLike[str] | Store, session_id: str | None, durability: str, engine: str
) -> AsyncLog:
    """A handle for the engine run this code runs in (off the event loop)."""
    run = EngineRun(engine=engine, run_id=engine_run_id(engine))
    handle = await asyncio.to_thread(
        open_engine_run, target, session_id, run, durability=durability
    )
    return AsyncLog(handle)


async def tool_once(log: AsyncLog, call: Any, idempotency: str | None) -> None:
    """Before a tool runs: return to let it run (its dispatch durable), or
    raise Pydantic AI's skip with the answer the log holds or has just
    written (R1), so the tool does not run again."""
    await log.call_light(acting_on_approval, log.log, call.tool_call_id)
    guarded = ToolCall(id=call.tool_call_id, name=call.tool_name)
    start = await log.call(begin_once, log.log, guarded, cast(IdempotencyValue | None, idempotency))
    answer = start.answer
    if answer is None:
        return
    if answer.is_error:
        raise ToolFailed(answer.content)
    raise SkipToolExecution(answer.content)


async def output_once(
    log: AsyncLog, call: Any, idempotency: str | None, dispatched: set[str]
) -> None:
    """Before an output call is processed. One a crash cut short (dispatched
    by an earlier execution, unanswered) is answered R1 and the model is
    asked again, as Pydantic AI asks it of an output it could not use: its
    output function does not run again behind the model's back. One an
    earlier execution answered is processed again by the replay, which runs
    the output function again: a function with side effects belongs in a
    DBOS step, whose saved value DBOS hands back (docs/engines.md).
    `dispatched` holds the calls this execution dispatched (both output
    hooks come here)."""
    call_id = call.tool_call_id
    if call_id in dispatched:
        return
    if not await log.call_light(_asked_in_open_turn, log.log, call_id):
        return  # a streamed reply the log does not hold yet: left alone
    guarded = ToolCall(id=call_id, name=call.tool_name)
    start = await log.call(begin_once, log.log, guarded, cast(IdempotencyValue | None, idempotency))
    if start.answer is None:
        dispatched.add(call_id)
    elif start.answer.risk is not None:
        raise ModelRetry(start.answer.content)


def _asked_in_open_turn(log: Log, call_id: str) -> bool:
    call = log.open_call(call_id)
    return call is not None and call.requested
