"""The asyncio API: the async reference loop (`arun_turn`), and the names of its parts.

The handle (`AsyncLog`) lives in `turnlog.handle.async_log` and `aopen` in
`turnlog.ops.open`, the background children's tasks in
`turnlog.runtime.async_background`; all are imported from here too.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, TypeVar

import msgspec

from turnlog.core.fold import Message
from turnlog.core.notices import NoticeStyle
from turnlog.events import Content, Origin, ToolCall
from turnlog.handle.async_log import AsyncDispatch, AsyncLog
from turnlog.ops.open import Opening, aopen
from turnlog.runtime import approvals, background
from turnlog.runtime.agents import (
    MAX_STEPS_PER_TURN,
    AgentSpec,
    Reply,
    Tool,
    ToolOutput,
    check_deadline,
)
from turnlog.runtime.approvals import DecisionInput
from turnlog.runtime.async_background import (
    await_report,
    child_tasks,
    session_state,
    start_background,
)
from turnlog.runtime.budgets import budget_spent_result
from turnlog.runtime.deadlines import ToolThread, past_deadline_result
from turnlog.runtime.subagents import (
    CallContext,
    agent_id_for,
    already_delivered,
    joined_child,
    no_such_child,
    report_after_wait,
    spec_for,
    subagent_request,
    subagent_tool_running,
)
from turnlog.runtime.tool_calls import call_deadline, dispatch_options, record_late, record_output
from turnlog.runtime.turn_rules import (
    BUDGET_EXHAUSTED,
    Next,
    TurnRules,
    tool_error_text,
    unknown_tool_text,
)

# The public asyncio API, wherever each part lives.
__all__ = [
    "AsyncDispatch",
    "AsyncLog",
    "AsyncModel",
    "AsyncToolContext",
    "Opening",
    "StepCalls",
    "acontinue_run",
    "aopen",
    "arun_agent_turn",
    "arun_turn",
    "async_subagent_tool",
    "async_task_wait_tool",
    "await_report",
    "start_background",
]

_T = TypeVar("_T")

AsyncModel = Callable[[Sequence[Message]], Awaitable[Reply] | Reply]


async def _maybe_await(value: Awaitable[_T] | _T) -> _T:
    if inspect.isawaitable(value):
        return await value
    return value


class StepCalls:
    """What the calls of one step of `arun_turn`, running at once, must know
    of each other to behave as the sync loop's, which runs them in order: the
    background spawns listed before a call (a join waits for them to start
    their child), and the joins that took a report (it goes to one only)."""

    def __init__(self) -> None:
        self.spawns: dict[str, asyncio.Event] = {}
        self.joined: dict[str, str] = {}


class AsyncToolContext(CallContext):
    """The context a tool gets from `arun_turn` (see `CallContext`)."""

    log: AsyncLog

    def __init__(
        self,
        log: AsyncLog,
        call: ToolCall,
        step: StepCalls | None = None,
        spawns_before: Mapping[str, asyncio.Event] | None = None,
    ) -> None:
        super().__init__(log, call)
        self.step = step if step is not None else StepCalls()
        self.spawns_before: Mapping[str, asyncio.Event] = spawns_before or {}

    async def spawn(
        self,
        agent_id: str,
        task: Content,
        agent: AgentSpec,
        *,
        agent_type: str | None = None,
        label: str | None = None,
        max_steps: int | None = None,
    ) -> Reply:
        """Run a subagent to its answer in its own session (see `ToolContext.spawn`)."""
        parent = self.log
        spawn = self._spawn(agent_id, agent_type, label)
        await parent.append(spawn.spawned)
        reply: Reply | None = None
        try:
            child = await aopen(parent.store, spawn.child, **spawn.child_options(parent.log))
            async with child:
                reply = await arun_agent_turn(child, agent, task, max_steps=max_steps)
            return reply
        finally:
            await parent.append(spawn.settled(reply))

    async def spawn_background(
        self,
        agent_id: str,
        task: Content,
        agent: AgentSpec,
        *,
        agent_type: str | None = None,
        label: str | None = None,
    ) -> str:
        """Start a subagent as a task and return an acknowledgement at once
        (see `ToolContext.spawn_background`)."""
        parent = self.log
        spawn = self._spawn(agent_id, agent_type, label)
        spawned = msgspec.structs.replace(spawn.spawned, background=True)
        await parent.append(spawned, sync=True)

        # The child's session and task are durable before the acknowledgement:
        # a crash after it finds a child to revive, not one to report lost.
        child = await aopen(parent.store, spawn.child, **spawn.child_options(parent.log))
        try:
            await child.user(task)
            await child.sync()
        except BaseException:
            await child.close()
            raise

        async def body() -> Content:
            async with child:
                return (await arun_agent_turn(child, agent)).content

        start_background(parent, spawned, spawn.child, body)
        return background.acknowledgement(agent_id)


async def _adopt_background(log: AsyncLog, tools: Mapping[str, Tool]) -> None:
    if not (await session_state(log)).background:
        return
    adopted = await log.call(
        background.adopt, log.log, spec_for(tools), running=frozenset(child_tasks(log))
    )
    for found in adopted:
        child = AsyncLog(found.log)

        async def body(child: AsyncLog = child, spec: AgentSpec = found.spec) -> Content:
            async with child:
                return (await acontinue_run(child, spec)).content

        start_background(log, found.spawned, found.child, body)


def async_subagent_tool(
    agent_type: str,
    agent: AgentSpec,
    *,
    task_argument: str = "task",
    max_steps: int | None = None,
    background: bool = False,
) -> Tool:
    """`subagent_tool` for `arun_turn`: children of one step run concurrently,
    and with `background=True` the call returns an acknowledgement at once."""

    async def run(context: AsyncToolContext, **arguments: Any) -> Content:
        agent_id, task = subagent_request(context, agent_type, task_argument, arguments)
        if background:
            return await context.spawn_background(agent_id, task, agent, agent_type=agent_type)
        reply = await context.spawn(
            agent_id, task, agent, agent_type=agent_type, max_steps=max_steps
        )
        return reply.content

    return subagent_tool_running(run, agent_type, agent, background)


def async_task_wait_tool() -> Tool:
    """`task_wait_tool` for `arun_turn`: waits on the event loop, not a thread."""

    async def run(context: AsyncToolContext, agent_id: str = "") -> ToolOutput:
        log = context.log
        later = context.step.spawns.keys() - context.spawns_before.keys()
        if agent_id in later:
            # Spawned by a call listed after this one: the sync loop runs the
            # step in order and finds no child yet. Refused alike, whichever
            # of the two concurrent calls gets this far first.
            state = await session_state(log)
            raise no_such_child(
                agent_id, [c.agent_id for c in state.background if c.agent_id not in later]
            )
        spawning = context.spawns_before.get(agent_id)
        if spawning is not None:
            # Spawned by a call listed before this one in the same step: the
            # sync loop would have run that call first, so wait until it has
            # started the child (or failed to).
            await spawning.wait()
        delivered = already_delivered(joined_child(await session_state(log), agent_id))
        if delivered is not None:
            return delivered
        waited = await await_report(log, agent_id)
        answer = report_after_wait(joined_child(await session_state(log), agent_id), waited)
        if isinstance(answer, background.Delivered):
            # Joins of one step run at once: the first to get here takes the
            # report (no await between the check and the claim), the others
            # say where it went, as the sync loop's later joins do.
            taken_by = context.step.joined.setdefault(agent_id, context.call_id)
            if taken_by != context.call_id:
                return (
                    f"The report of {agent_id} was already delivered, as the result of call "
                    f"{taken_by} of this step."
                )
        return answer

    return Tool(run=run, idempotency="read_only", context=True)


async def arun_turn(
    log: AsyncLog,
    model: AsyncModel,
    tools: Mapping[str, Tool],
    user_text: Content | None = None,
    *,
    max_steps: int = MAX_STEPS_PER_TURN,
    max_tool_calls: int | None = None,
    max_turn_s: float | None = None,
    timeout_s: float | None = None,
    resume: bool = False,
    await_background: bool = True,
    notice_style: NoticeStyle | None = None,
    decisions: Mapping[str, DecisionInput] | None = None,
) -> Reply:
    """`run_turn` for asyncio: a step's tool calls run concurrently (`gather`),
    each dispatch durable before its tool starts. Models and tools may be
    coroutine functions or plain ones (a plain tool runs in a thread).

    The same bounds as `run_turn`: a coroutine tool past its deadline is
    cancelled (and not waited for), a plain one abandoned in its thread, and
    either is answered outcome unknown (D1); since a step's calls are all
    dispatched at once, none is left behind a deadline. A join listed after
    the spawn of its child in the same step waits for that spawn, as if the
    calls ran in order. A spent budget answers the calls it left
    undispatched not run (B1) and ends the turn `budget_exhausted`.

    Pauses and their decisions work as in `run_turn`; approved calls run
    concurrently, as a step's calls do.
    """
    timeout_s = check_deadline(timeout_s)
    sync_log = log.log
    await log.call(approvals.check_turn_input, sync_log, user_text, resume)
    if log.awaiting or log.paused:
        resume = True
        if decisions:
            await log.call(approvals.record_decisions, sync_log, decisions)
        await log.expire()
        await log.call(sync_log.settle_decided)
        if approvals.undecided(sync_log):
            return Reply(awaiting=log.awaiting)
    elif decisions:
        await log.call(approvals.record_decisions, sync_log, decisions)
    rules = TurnRules(
        max_steps=max_steps,
        max_tool_calls=max_tool_calls,
        max_turn_s=max_turn_s,
        await_background=await_background,
    )
    clock = rules.clock
    if user_text is not None:
        await log.user(user_text)
    await _adopt_background(log, tools)
    reply = Reply()
    if resume and not log.turn_open:
        # Every pause expired and closed the turn: nothing is left to resume.
        return reply
    async with log.turn(resume=resume) as turn:
        approved = await log.call(approvals.approved_calls, sync_log)
        if approved:
            async with log.step():
                await asyncio.gather(*_step_calls(log, tools, approved, timeout_s))
        while True:
            if not rules.may_step():
                turn.reason = BUDGET_EXHAUSTED
                return reply
            # As in `run_turn`: reports go only into a step that will run.
            await log.call(background.deliver_reports, log.log, notice_style)
            async with log.step():
                reply = await _maybe_await(model(await log.messages()))
                await log.assistant(reply.content, reply.tool_calls, usage=reply.usage)
                to_pause, calls = approvals.split_step(tools, reply.tool_calls)
                for paused_call, kind in to_pause:
                    await log.pause(paused_call.id, kind=kind)
                spent: str | None = None
                allowed = []
                for call in calls:
                    spent = clock.before_call()
                    if spent is not None:
                        break
                    allowed.append(call)
                if allowed:
                    await asyncio.gather(*_step_calls(log, tools, allowed, timeout_s))
                if spent is not None:
                    results = [budget_spent_result(c, spent) for c in calls[len(allowed) :]]
                    await log.append_many(
                        results, origin=Origin.BUDGET.value, allow_undispatched=True
                    )
            if to_pause and log.turn_open:
                # The turn stays open, paused; leaving the block ends no turn.
                return msgspec.structs.replace(reply, awaiting=log.awaiting)
            next_move = rules.after_step(reply, spent)
            if next_move is Next.WAIT:
                got = await await_report(log, timeout_s=rules.wait_s())
                next_move = rules.after_wait(got, lambda: bool(child_tasks(log)))
            if next_move is Next.STEP:
                continue
            if next_move is Next.SPENT:
                turn.reason = BUDGET_EXHAUSTED
            return reply


async def arun_agent_turn(
    log: AsyncLog, agent: AgentSpec, user_text: Content | None = None, **options: Any
) -> Reply:
    """`arun_turn` with the model, tools and bounds of an `AgentSpec`."""
    return await arun_turn(log, agent.model, agent.tools, user_text, **agent.limits(**options))


def _step_calls(
    log: AsyncLog, tools: Mapping[str, Tool], calls: Sequence[ToolCall], default_s: float | None
) -> list[Awaitable[None]]:
    """The runs of a step's calls, each knowing the background spawns listed
    before it (see `StepCalls`)."""
    step = StepCalls()
    runs: list[Awaitable[None]] = []
    for call in calls:
        tool = tools.get(call.name)
        spawned: asyncio.Event | None = None
        if tool is not None and tool.background and tool.agent_type:
            spawned = asyncio.Event()
        runs.append(_arun_call(log, tool, call, default_s, step, dict(step.spawns), spawned))
        if spawned is not None and tool is not None and tool.agent_type:
            step.spawns[agent_id_for(tool.agent_type, call.id)] = spawned
    return runs


async def _arun_call(
    log: AsyncLog,
    tool: Tool | None,
    call: ToolCall,
    default_s: float | None,
    step: StepCalls,
    spawns_before: Mapping[str, asyncio.Event],
    spawned: asyncio.Event | None,
) -> None:
    timeout_s = call_deadline(tool, default_s)
    try:
        async with log.dispatch(call, **dispatch_options(tool, call, timeout_s)) as running:
            if tool is None:
                await running.result(unknown_tool_text(call.name), is_error=True)
                return
            arguments: Any = call.arguments if isinstance(call.arguments, dict) else {}
            context = AsyncToolContext(log, call, step, spawns_before)
            args: tuple[Any, ...] = (context,) if tool.context else ()
            try:
                in_time, output = await _run_tool(log, tool, call, args, arguments, timeout_s)
            # A failing tool is a result the model sees, not a crash. Its own
            # TimeoutError (a socket's, an upstream API's) is one of those:
            # only the loop's deadline, reported by `_run_tool`, answers D1.
            except Exception as exc:
                await running.result(tool_error_text(exc), is_error=True)
                return
            if not in_time:
                assert timeout_s is not None
                await log.append(
                    past_deadline_result(call, timeout_s), origin=Origin.DEADLINE.value
                )
                running.mark_answered()
            else:
                await log.call(record_output, log.log, running.handle, tool, output)
    finally:
        if spawned is not None:
            spawned.set()


# Coroutine tools the loop stopped waiting for at their deadline, held until
# they end (the event loop keeps only weak references to its tasks).
_RUNAWAY: set[asyncio.Future[Any]] = set()


async def _run_tool(
    log: AsyncLog,
    tool: Tool,
    call: ToolCall,
    args: tuple[Any, ...],
    arguments: Mapping[str, Any],
    timeout_s: float | None,
) -> tuple[bool, Any]:
    """Run a tool's body: (True, output) when it finished in time, (False,
    None) when the loop's deadline passed first. Whatever the body raises,
    a `TimeoutError` of its own included, propagates as its failure."""
    if inspect.iscoroutinefunction(tool.run):
        if timeout_s is None:
            return True, await tool.run(*args, **arguments)
        task = asyncio.ensure_future(tool.run(*args, **arguments))
        try:
            await asyncio.wait({task}, timeout=timeout_s)
        except BaseException:
            # The loop itself is cancelled: the tool goes with it, and the
            # dispatch block answers the call (nothing of it is late).
            task.cancel()
            _keep_runaway(log, call, task, record=False)
            raise
        if task.done():
            return True, task.result()
        # Cancelled at its deadline, and not waited for: a tool that swallows
        # its cancellation or cleans up slowly must not hold the loop past the
        # deadline. Whatever it returns later is recorded late, never delivered.
        task.cancel()
        _keep_runaway(log, call, task)
        return False, None
    if timeout_s is None:
        return True, await asyncio.to_thread(tool.run, *args, **arguments)
    worker = ToolThread(
        functools.partial(tool.run, *args, **arguments),
        functools.partial(record_late, log.log, call),
    ).start()
    if not await asyncio.to_thread(worker.wait, timeout_s):
        return False, None
    if worker.error is not None:
        raise worker.error
    return True, worker.output


def _keep_runaway(
    log: AsyncLog, call: ToolCall, task: asyncio.Future[Any], *, record: bool = True
) -> None:
    """Hold a cancelled tool's task until it ends, and record its late output."""
    _RUNAWAY.add(task)

    def ended(task: asyncio.Future[Any]) -> None:
        _RUNAWAY.discard(task)
        if task.cancelled():
            return  # it stopped as asked: nothing came of it to record
        error = task.exception()  # retrieved either way: asyncio must not log it as lost
        if not record:
            return
        if error is not None:
            log.call_soon(record_late, log.log, call, f"{type(error).__name__}: {error}", True)
        else:
            log.call_soon(record_late, log.log, call, task.result(), False)

    task.add_done_callback(ended)


async def acontinue_run(log: AsyncLog, agent: AgentSpec, *, max_steps: int | None = None) -> Reply:
    """`continue_run` for asyncio."""
    resume = log.turn_open
    return await arun_agent_turn(log, agent, max_steps=max_steps, resume=resume)
