"""The asyncio twin of the writer and the reference loop: appends off the event loop."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import os
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Generator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from types import TracebackType
from typing import Any, ParamSpec, TypeVar

import msgspec

from turnlog import background
from turnlog import events as ev
from turnlog.budgets import Budget, BudgetClock, budget_spent_result
from turnlog.deadlines import ToolThread, past_deadline_result
from turnlog.errors import TurnlogError, UsageError
from turnlog.events import (
    Content,
    Event,
    EventData,
    IdempotencyValue,
    Origin,
    P,
    ToolCall,
    TurnEndReason,
)
from turnlog.fold import Message, SessionState
from turnlog.log import Dispatch, Durability, Log, Turn
from turnlog.log import open as open_log
from turnlog.loop import (
    MAX_STEPS_PER_TURN,
    AgentSpec,
    CallContext,
    Reply,
    Tool,
    ToolOutput,
    agent_id_for,
    begin_dispatch,
    call_deadline,
    check_deadline,
    dispatch_options,
    record_late,
    record_output,
    spec_for,
)
from turnlog.notices import NoticeStyle
from turnlog.recovery import Plan
from turnlog.stores import Store
from turnlog.stores.holders import OPENED_AT, caller_site
from turnlog.verdict import Verdict

_P = ParamSpec("_P")
_T = TypeVar("_T")


class AsyncDispatch:
    """A dispatched call in an async loop; `await result(...)` records its outcome."""

    def __init__(self, log: AsyncLog, handle: Dispatch) -> None:
        self._log = log
        self._handle = handle
        self.call = handle.call

    @property
    def answered(self) -> bool:
        return self._handle.answered

    @property
    def handle(self) -> Dispatch:
        return self._handle

    def mark_answered(self) -> None:
        """The call was answered by a result written outside this handle
        (a deadline's D1), so the block's end must not answer it again."""
        self._handle.answered = True

    async def result(self, content: Content, *, is_error: bool = False) -> Event[ev.ToolResult]:
        return await self._log._run(self._handle.result, content, is_error=is_error)


class AsyncLog:
    """A `Log` for asyncio programs.

    Every append runs on one writer thread of its own, so an `fsync` never
    blocks the event loop, and since that thread runs them one at a time in
    the order they were awaited, the order of events is the order of calls.
    """

    def __init__(self, log: Log) -> None:
        self.log = log
        self._executor = ThreadPoolExecutor(
            max_workers=1, thread_name_prefix=f"turnlog-{log.session_id[:32]}"
        )

    async def _run(self, fn: Callable[_P, _T], *args: _P.args, **kwargs: _P.kwargs) -> _T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, functools.partial(fn, *args, **kwargs))

    def call_soon(self, fn: Callable[_P, Any], *args: _P.args, **kwargs: _P.kwargs) -> None:
        """Queue `fn` on the writer thread without waiting for it (from a
        callback that cannot await); dropped once the handle is closed."""
        # RuntimeError: the closed handle's writer thread is gone.
        with contextlib.suppress(RuntimeError):
            self._executor.submit(functools.partial(fn, *args, **kwargs))

    async def call(self, fn: Callable[_P, _T], *args: _P.args, **kwargs: _P.kwargs) -> _T:
        """Run `fn` (which writes through the sync `Log`) on the writer thread,
        in order with the appends awaited before it."""
        return await self._run(fn, *args, **kwargs)

    # -- what the sync handle knows ------------------------------------------------

    @property
    def session_id(self) -> str:
        return self.log.session_id

    @property
    def store(self) -> Store:
        return self.log.store

    @property
    def header(self) -> ev.Session:
        return self.log.header

    @property
    def durability(self) -> Durability:
        return self.log.durability

    @property
    def closed(self) -> bool:
        return self.log.closed

    def verdict(self) -> Verdict:
        return self.log.verdict()

    async def messages(self) -> tuple[Message, ...]:
        """The transcript (the first call may read the whole log, off the loop)."""
        return await self._run(lambda: self.log.messages)

    # -- writing ----------------------------------------------------------------

    async def append(self, data: P, **options: Any) -> Event[P]:
        return await self._run(functools.partial(self.log.append, data, **options))

    async def append_many(self, items: Sequence[EventData], **options: Any) -> list[Event]:
        return await self._run(self.log.append_many, items, **options)

    async def system(self, content: Content) -> Event[ev.SystemMessage]:
        return await self._run(self.log.system, content)

    async def user(self, content: Content, *, injected: str | None = None) -> Event[ev.UserMessage]:
        return await self._run(self.log.user, content, injected=injected)

    async def assistant(
        self, content: Content = "", tool_calls: Sequence[ToolCall] = ()
    ) -> Event[ev.AssistantMessage]:
        return await self._run(self.log.assistant, content, tool_calls)

    async def recover(self) -> Plan:
        return await self._run(self.log.recover)

    async def sync(self) -> None:
        await self._run(self.log.sync)

    @asynccontextmanager
    async def turn(self, *, resume: bool = False) -> AsyncIterator[Turn]:
        """As `Log.turn`: a raising block closes the turn honestly."""
        turn = await self._run(self.log.begin_turn, resume=resume)
        try:
            yield turn
        except BaseException as exc:
            await asyncio.shield(self._run(self.log.fail_turn, exc))
            raise
        else:
            await self._run(self.log.end_turn, turn)

    @asynccontextmanager
    async def step(self) -> AsyncIterator[int]:
        number = await self._run(self.log.begin_step)
        try:
            yield number
        except BaseException as exc:
            await asyncio.shield(self._run(self.log.fail_step, exc))
            raise
        await self._run(self.log.end_step)

    @asynccontextmanager
    async def dispatch(
        self, call: ToolCall, *, idempotency: IdempotencyValue | None = None, **options: Any
    ) -> AsyncIterator[AsyncDispatch]:
        """Write `tool_dispatch` durably (off the loop) before the block runs the tool.
        `options` are the dispatch's other fields (`join`, `timeout_s`, `background`)."""
        fields = {"idempotency": idempotency, **options}
        handle = await self._run(begin_dispatch, self.log, call, fields)
        try:
            yield AsyncDispatch(self, handle)
        except BaseException as exc:
            # Shielded: a cancelled tool still gets its honest result.
            await asyncio.shield(self._run(self.log.end_dispatch, handle, exc))
            raise
        else:
            await self._run(self.log.end_dispatch, handle, None)

    async def close(self) -> None:
        """Sync what is not yet durable and release the lock. Idempotent.

        The close runs on the writer thread after what was queued before it,
        and a cancelled caller (an event loop shutting down cancels its tasks)
        still closes: a close left queued and cancelled would keep the
        session's lock for the rest of the process.
        """
        try:
            closing = self._executor.submit(self.log.close)
        except RuntimeError:  # the writer thread is gone: closed before
            self.log.close()
            return
        self._executor.shutdown(wait=False)
        await asyncio.shield(asyncio.wrap_future(closing))

    async def __aenter__(self) -> AsyncLog:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    def __repr__(self) -> str:
        return f"<turnlog.AsyncLog {self.session_id!r}>"


class Opening(Awaitable[AsyncLog]):
    """What `aopen` returns: await it for the `AsyncLog`, or use it as
    `async with turnlog.aopen(...) as log:`, which closes the log at the end."""

    def __init__(
        self,
        target: str | os.PathLike[str] | Store,
        session_id: str | None,
        options: dict[str, Any],
        site: str | None,
    ) -> None:
        self._target = target
        self._session_id = session_id
        self._options = options
        self._site = site
        self._log: AsyncLog | None = None

    async def _open(self) -> AsyncLog:
        # The open runs on a worker thread, where no frame of the program is
        # left: the line that called `aopen` goes with it (asyncio copies the
        # context), for the refusal a second handle on the session gets.
        token = OPENED_AT.set(self._site)
        try:
            log = await asyncio.to_thread(open_log, self._target, self._session_id, **self._options)
        finally:
            OPENED_AT.reset(token)
        return AsyncLog(log)

    def __await__(self) -> Generator[Any, None, AsyncLog]:
        return self._open().__await__()

    async def __aenter__(self) -> AsyncLog:
        self._log = await self._open()
        return self._log

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._log is not None:
            await self._log.close()


def aopen(
    target: str | os.PathLike[str] | Store,
    session_id: str | None = None,
    **options: Any,
) -> Opening:
    """`turnlog.open` for asyncio: opens off the event loop. Use it as
    `async with turnlog.aopen(path) as log:` (closed at the end), or
    `log = await turnlog.aopen(path)` and close it yourself."""
    return Opening(target, session_id, options, caller_site())


# -- the async reference loop ---------------------------------------------------

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


# Background children running as tasks of this event loop, by parent handle.
_CHILD_TASKS: weakref.WeakKeyDictionary[AsyncLog, dict[str, asyncio.Task[None]]] = (
    weakref.WeakKeyDictionary()
)


def _tasks(log: AsyncLog) -> dict[str, asyncio.Task[None]]:
    tasks = _CHILD_TASKS.get(log)
    if tasks is None:
        tasks = _CHILD_TASKS[log] = {}
    return tasks


def start_background(
    parent: AsyncLog,
    spawned: ev.SubagentSpawned,
    child: str,
    body: Callable[[], Awaitable[Content]],
) -> asyncio.Task[None]:
    """Run a child's loop as a task; its end is recorded on the parent."""

    async def run() -> None:
        # A cancelled child (its event loop shutting down) records nothing:
        # like a child whose process died, it is adopted by the parent's next
        # loop, which revives it from its own log.
        try:
            text = ev.content_text(await body())
            outcome = "complete"
        except Exception as exc:  # a failing child is a report, not a crash of the parent
            outcome, text = "error", f"{type(exc).__name__}: {exc}"
        record = background.settled_record(spawned, child, outcome, text)
        # The parent's handle may be closed by then: the child's own log
        # holds the report, and the parent's next loop delivers it.
        with contextlib.suppress(TurnlogError, RuntimeError):
            # RuntimeError: the closed handle's writer thread is gone.
            await asyncio.shield(parent.append(record, sync=True))

    task = asyncio.get_running_loop().create_task(run(), name=f"turnlog-bg-{spawned.agent_id}")
    tasks = _tasks(parent)
    tasks[spawned.agent_id] = task
    task.add_done_callback(lambda _: tasks.pop(spawned.agent_id, None))
    return task


async def _state(log: AsyncLog) -> SessionState:
    return await log.call(lambda: log.log.state)


async def await_report(
    log: AsyncLog, agent_id: str | None = None, *, timeout_s: float | None = None
) -> bool:
    """Wait until a child running here (or `agent_id`) settles, for at most
    `timeout_s` seconds: True when a report is ready, False when nothing this
    loop runs could bring one or the time passed first."""
    loop = asyncio.get_running_loop()
    deadline = None if timeout_s is None else loop.time() + timeout_s
    while True:
        ready = [c.agent_id for c in background.deliverable(await _state(log))]
        if (agent_id in ready) if agent_id is not None else ready:
            return True
        tasks = _tasks(log)
        waiting = (
            [tasks[agent_id]] if agent_id in tasks else [] if agent_id else list(tasks.values())
        )
        if not waiting:
            return False
        left = None if deadline is None else deadline - loop.time()
        if left is not None and left <= 0:
            return False
        await asyncio.wait(waiting, timeout=left, return_when=asyncio.FIRST_COMPLETED)


async def _adopt_background(log: AsyncLog, tools: Mapping[str, Tool]) -> None:
    if not (await _state(log)).background:
        return
    adopted = await log.call(
        background.adopt, log.log, spec_for(tools), running=frozenset(_tasks(log))
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
        agent_id = agent_id_for(agent_type, context.call_id)
        task = arguments.get(task_argument, "")
        if background:
            return await context.spawn_background(agent_id, task, agent, agent_type=agent_type)
        reply = await context.spawn(
            agent_id, task, agent, agent_type=agent_type, max_steps=max_steps
        )
        return reply.content

    return Tool(
        run=run,
        idempotency="unknown",
        context=True,
        agent_type=agent_type,
        background=background,
        spec=agent,
    )


def async_task_wait_tool() -> Tool:
    """`task_wait_tool` for `arun_turn`: waits on the event loop, not a thread."""

    async def run(context: AsyncToolContext, agent_id: str = "") -> ToolOutput:
        log = context.log
        spawning = context.spawns_before.get(agent_id)
        if spawning is not None:
            # Spawned by a call listed before this one in the same step: the
            # sync loop would have run that call first, so wait until it has
            # started the child (or failed to).
            await spawning.wait()
        state = await _state(log)
        child = next((c for c in state.background if c.agent_id == agent_id), None)
        if child is None:
            known = ", ".join(c.agent_id for c in state.background) or "none"
            raise UsageError(f"no background subagent {agent_id!r} (known: {known})")
        if child.delivered is not None:
            return f"The report of {agent_id} was already delivered (event {child.delivered})."
        waited = await await_report(log, agent_id)
        state = await _state(log)
        settled = next(c for c in state.background if c.agent_id == agent_id)
        if settled.delivered is not None:
            return background.meanwhile(settled)
        if not waited:
            raise UsageError(f"background subagent {agent_id!r} is not running in this process")
        # Joins of one step run at once: the first to get here takes the
        # report (no await between the check and the claim), the others
        # say where it went, as the sync loop's later joins do.
        taken_by = context.step.joined.setdefault(agent_id, context.call_id)
        if taken_by != context.call_id:
            return (
                f"The report of {agent_id} was already delivered, as the result of call "
                f"{taken_by} of this step."
            )
        return background.Delivered(content=background.report_body(settled), delivers=agent_id)

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
    """
    timeout_s = check_deadline(timeout_s)
    clock = BudgetClock(
        Budget(max_steps=max_steps, max_tool_calls=max_tool_calls, max_turn_s=max_turn_s)
    )
    if user_text is not None:
        await log.user(user_text)
    await _adopt_background(log, tools)
    reply = Reply()
    async with log.turn(resume=resume) as turn:
        while True:
            if clock.before_step() is not None:
                turn.reason = TurnEndReason.BUDGET_EXHAUSTED.value
                return reply
            # As in `run_turn`: reports go only into a step that will run.
            await log.call(background.deliver_reports, log.log, notice_style)
            async with log.step():
                reply = await _maybe_await(model(await log.messages()))
                await log.assistant(reply.content, reply.tool_calls)
                calls = list(reply.tool_calls)
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
            if spent is not None:
                turn.reason = TurnEndReason.BUDGET_EXHAUSTED.value
                return reply
            if reply.tool_calls:
                continue
            if not await_background:
                return reply
            # As in `run_turn`: the turn's time bounds the wait for a report.
            if await await_report(log, timeout_s=clock.remaining_s()):
                continue
            if clock.time_spent() is not None and _tasks(log):
                turn.reason = TurnEndReason.BUDGET_EXHAUSTED.value
            return reply


async def arun_agent_turn(
    log: AsyncLog, agent: AgentSpec, user_text: Content | None = None, **options: Any
) -> Reply:
    """`arun_turn` with the model, tools and bounds of an `AgentSpec`."""
    limits = agent.limits()
    limits.update({key: value for key, value in options.items() if value is not None})
    return await arun_turn(log, agent.model, agent.tools, user_text, **limits)


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
                await running.result(f"unknown tool {call.name!r}", is_error=True)
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
                await running.result(f"{type(exc).__name__}: {exc}", is_error=True)
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
    resume = log.verdict().open_turn is not None
    return await arun_agent_turn(log, agent, max_steps=max_steps, resume=resume)
