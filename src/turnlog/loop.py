"""A reference agent loop that writes events in the order recovery relies on."""

from __future__ import annotations

import contextlib
import functools
import inspect
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Final, TypeAlias

import msgspec

from turnlog import background
from turnlog import events as ev
from turnlog.budgets import Budget, BudgetClock, budget_spent_result, seconds
from turnlog.deadlines import ToolThread, behind_deadline_result, late_result, past_deadline_result
from turnlog.dispatch import Dispatch, dispatched
from turnlog.errors import TurnlogError, UsageError
from turnlog.events import (
    Content,
    IdempotencyValue,
    Origin,
    ToolCall,
    TurnEndReason,
    check_idempotency,
)
from turnlog.fold import Message
from turnlog.log import Log
from turnlog.log import open as open_log
from turnlog.notices import NoticeStyle
from turnlog.stores import child_session_id
from turnlog.stores.base import MAX_SESSION_ID_CHARS
from turnlog.tree import RevivedTree, TreeNode, settled_events

# A turn that keeps asking for tools is stopped here rather than run forever.
MAX_STEPS_PER_TURN: Final = 32


class Reply(msgspec.Struct, frozen=True, kw_only=True):
    """What a model returned: text (or parts) and the tools it asks for."""

    content: Content = ""
    tool_calls: tuple[ToolCall, ...] = ()


Model = Callable[[Sequence[Message]], Reply]


def check_deadline(timeout_s: float | None) -> float | None:
    """A deadline as a dispatch records it (a positive, finite float), or
    UsageError for one no call could meet or the log's reader would refuse."""
    return seconds("timeout_s", timeout_s)


#: What a tool body returns: content, or (a join tool) a delivered report.
ToolOutput: TypeAlias = Content | background.Delivered


class Tool(msgspec.Struct, frozen=True, kw_only=True):
    """A callable the model may ask for, and what running it twice would do.

    With `context=True` the tool is called as `run(context, **arguments)`,
    where `context` is a `ToolContext` (its call id makes a good idempotency
    key for the outside system). `agent_type` marks a tool that runs a
    subagent: its dispatch records `join: <agent_id>` (see `subagent_tool`).
    """

    # A coroutine function only under `turnlog.aio.arun_turn`.
    run: Callable[..., ToolOutput | Awaitable[ToolOutput]]
    idempotency: IdempotencyValue = "unknown"
    context: bool = False
    agent_type: str | None = None
    # The call's deadline in seconds (None: the loop's `timeout_s`, if any).
    # Past it the loop stops waiting and answers the call as outcome unknown
    # (D1); the step's calls not yet dispatched are answered not run (D2).
    timeout_s: float | None = None
    # A background subagent tool: the call returns an acknowledgement at once
    # and the child's report arrives later (see `subagent_tool`).
    background: bool = False
    # The agent a subagent tool runs (background ones are revived with it).
    spec: Any = None

    def __post_init__(self) -> None:
        msgspec.structs.force_setattr(self, "timeout_s", check_deadline(self.timeout_s))
        check_idempotency(self.idempotency)


class AgentSpec(msgspec.Struct, frozen=True, kw_only=True):
    """What runs an agent: its model and its tools, and the bounds of each turn.

    `max_steps`, `max_tool_calls` and `max_turn_s` are the turn's budgets: a
    turn that spends one ends `budget_exhausted`, its undispatched calls
    answered not run (B1). `timeout_s` is the default deadline of each call.
    """

    model: Model
    tools: Mapping[str, Tool]
    max_steps: int = MAX_STEPS_PER_TURN
    max_tool_calls: int | None = None
    max_turn_s: float | None = None
    timeout_s: float | None = None

    def __post_init__(self) -> None:
        # Refused here, where the mistake is made, rather than by the first
        # run; and stored as the loop and the log use them.
        budget = Budget(
            max_steps=self.max_steps,
            max_tool_calls=self.max_tool_calls,
            max_turn_s=self.max_turn_s,
        )
        for name in ("max_steps", "max_tool_calls", "max_turn_s"):
            msgspec.structs.force_setattr(self, name, getattr(budget, name))
        msgspec.structs.force_setattr(self, "timeout_s", check_deadline(self.timeout_s))

    def limits(self) -> dict[str, Any]:
        """The keyword arguments of `run_turn` these bounds set."""
        return {
            "max_steps": self.max_steps,
            "max_tool_calls": self.max_tool_calls,
            "max_turn_s": self.max_turn_s,
            "timeout_s": self.timeout_s,
        }


_UNSAFE = re.compile(r"[^A-Za-z0-9._\-]")


def agent_id_for(agent_type: str, call_id: str) -> str:
    """The agent id of the subagent a call runs: derived from the call id, so
    a revived run finds the same child and never makes a new one."""
    name = _UNSAFE.sub("_", f"{agent_type}-{call_id}").lstrip(".")
    return name[:MAX_SESSION_ID_CHARS] or "agent"


class Spawn(msgspec.Struct, frozen=True, kw_only=True):
    """One subagent a call starts: its session, and what the parent records."""

    agent_id: str
    call_id: str
    child: str
    agent_type: str | None = None
    label: str | None = None

    @property
    def spawned(self) -> ev.SubagentSpawned:
        """Written on the parent before the child starts."""
        return ev.SubagentSpawned(
            agent_id=self.agent_id,
            agent_type=self.agent_type,
            label=self.label,
            call_id=self.call_id,
            child=self.child,
        )

    def child_options(self, parent: Log) -> dict[str, Any]:
        """How the child's session is opened: created, in the parent's store and
        durability, its header naming its agent and the spawning call."""
        return {
            "create": True,
            "durability": parent.durability,
            "agent": ev.Agent(id=self.agent_id, type=self.agent_type, label=self.label),
            "spawned_by": ev.SpawnedBy(
                session_id=parent.session_id, call_id=self.call_id, agent_id=self.agent_id
            ),
        }

    def settled(self, reply: Reply | None) -> ev.SubagentSettled:
        """Written on the parent when the child ends (`reply` None: it failed)."""
        return ev.SubagentSettled(
            agent_id=self.agent_id,
            call_id=self.call_id,
            child=self.child,
            outcome="complete" if reply is not None else "error",
            result=ev.content_text(reply.content) if reply is not None else None,
        )


class CallContext:
    """What a running tool may know about its call: the call (its id is a
    stable idempotency key across revivals), the session and the agent.
    `log` is the parent's handle (a `Log`, or an `AsyncLog` in `turnlog.aio`)."""

    def __init__(self, log: Any, call: ToolCall) -> None:
        self.log = log
        self.call = call

    @property
    def call_id(self) -> str:
        return self.call.id

    @property
    def session_id(self) -> str:
        session_id: str = self.log.session_id
        return session_id

    @property
    def agent(self) -> ev.Agent | None:
        header: ev.Session = self.log.header
        return header.agent

    def _spawn(self, agent_id: str, agent_type: str | None, label: str | None) -> Spawn:
        return Spawn(
            agent_id=agent_id,
            call_id=self.call.id,
            child=child_session_id(self.session_id, agent_id),
            agent_type=agent_type,
            label=label,
        )


class ToolContext(CallContext):
    """The context a tool gets from `run_turn` (see `CallContext`)."""

    log: Log

    def spawn(
        self,
        agent_id: str,
        task: Content,
        agent: AgentSpec,
        *,
        agent_type: str | None = None,
        label: str | None = None,
        max_steps: int | None = None,
    ) -> Reply:
        """Run a subagent to its answer in its own session and return its reply.

        The child's session is `<parent>.agents/<agent_id>` in the same store,
        its header naming this session and call; the parent records
        `subagent_spawned` before the child starts and `subagent_settled` when
        it ends. The child's turn has the bounds of `agent` (`AgentSpec`).
        """
        parent = self.log
        spawn = self._spawn(agent_id, agent_type, label)
        parent.append(spawn.spawned)
        reply: Reply | None = None
        try:
            with open_log(parent.store, spawn.child, **spawn.child_options(parent)) as child:
                reply = run_agent_turn(child, agent, task, max_steps=max_steps)
            return reply
        finally:
            parent.append(spawn.settled(reply))

    def spawn_background(
        self,
        agent_id: str,
        task: Content,
        agent: AgentSpec,
        *,
        agent_type: str | None = None,
        label: str | None = None,
    ) -> str:
        """Start a subagent in its own session and return at once with an
        acknowledgement; its report reaches this session later, once (an
        injected `user_message` at a step boundary, or a join tool's result)."""
        parent = self.log
        spawn = self._spawn(agent_id, agent_type, label)
        spawned = msgspec.structs.replace(spawn.spawned, background=True)
        parent.append(spawned, sync=True)

        # The child's session and task are durable before the acknowledgement:
        # a crash after it finds a child to revive, not one to report lost.
        child = open_log(parent.store, spawn.child, **spawn.child_options(parent))
        try:
            child.user(task)
            child.sync()
        except BaseException:
            child.close()
            raise

        def body() -> Content:
            with child:
                return run_agent_turn(child, agent).content

        background.run_in_thread(parent, spawned, spawn.child, body)
        return background.acknowledgement(agent_id)


def subagent_tool(
    agent_type: str,
    agent: AgentSpec,
    *,
    task_argument: str = "task",
    max_steps: int | None = None,
    background: bool = False,
) -> Tool:
    """A tool that runs a subagent on the task the model gives.

    By default the call blocks until the child answers and returns its answer.
    With `background=True` it returns an acknowledgement at once (a result
    marked `background`), the child runs concurrently, and its report is
    delivered later: injected at the parent's next step boundary, or as the
    result of a `task_wait_tool` call. The subagent's id comes from the call
    id (`agent_id_for`), and the call's dispatch records `join: <agent_id>`.
    """

    def run(context: ToolContext, **arguments: Any) -> Content:
        task = arguments.get(task_argument, "")
        agent_id = agent_id_for(agent_type, context.call_id)
        if background:
            return context.spawn_background(agent_id, task, agent, agent_type=agent_type)
        reply = context.spawn(agent_id, task, agent, agent_type=agent_type, max_steps=max_steps)
        return reply.content

    return Tool(
        run=run,
        idempotency="unknown",
        context=True,
        agent_type=agent_type,
        background=background,
        spec=agent,
    )


def task_wait_tool() -> Tool:
    """The join tool of background subagents: `task_wait(agent_id)` blocks
    until that child reports and returns its report, which is then never
    injected as well; a second join of the same child says it was already
    delivered. Give the tool a deadline (`timeout_s`) to bound the wait."""

    def run(context: ToolContext, agent_id: str = "") -> Content | background.Delivered:
        return join_background(context.log, agent_id)

    return Tool(run=run, idempotency="read_only", context=True)


def join_background(log: Log, agent_id: str) -> Content | background.Delivered:
    """What `task_wait` answers: the child's report once it settles, or why not."""
    child = next((c for c in log.state.background if c.agent_id == agent_id), None)
    if child is None:
        known = ", ".join(c.agent_id for c in log.state.background) or "none"
        raise UsageError(f"no background subagent {agent_id!r} (known: {known})")
    if child.delivered is not None:
        return f"The report of {agent_id} was already delivered (event {child.delivered})."
    waited = background.wait_for_report(log, agent_id)
    settled = next(c for c in log.state.background if c.agent_id == agent_id)
    if settled.delivered is not None:
        # A join past its deadline waits on in its thread while the loop goes
        # on and injects the report: what it returns is then recorded late,
        # and it says what became of the report rather than that the child
        # is gone.
        return background.meanwhile(settled)
    if not waited:
        raise UsageError(f"background subagent {agent_id!r} is not running in this process")
    return background.Delivered(content=background.report_body(settled), delivers=agent_id)


def run_turn(
    log: Log,
    model: Model,
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
    """Run one turn to its answer and return the final reply.

    The order is the contract: the user message before the turn; inside each
    step the assistant message, then for each call a durable `tool_dispatch`
    *before* the tool body runs, then its result. A crash anywhere leaves a
    log the decision table classifies honestly.

    Bounds: a call past its deadline (`Tool.timeout_s`, else `timeout_s`) is
    answered outcome unknown (D1) and the step's undispatched calls not run
    (D2); the model sees that and goes on. A spent budget (`max_steps`,
    `max_tool_calls`, `max_turn_s`) answers the undispatched calls not run
    (B1) and ends the turn `budget_exhausted`.

    Background subagents' reports are injected at step boundaries; with
    `await_background`, a final answer while children still run waits for
    the next report (for at most the turn's remaining `max_turn_s`: past it
    the turn ends `budget_exhausted`, and the report goes to the next turn)
    and lets the model read it. Children this session spawned
    before a crash are adopted first (`background.adopt`).

    `resume=True` carries on the open turn a tree revival left (see
    `Log.turn`) instead of starting one.
    """
    timeout_s = check_deadline(timeout_s)
    clock = BudgetClock(
        Budget(max_steps=max_steps, max_tool_calls=max_tool_calls, max_turn_s=max_turn_s)
    )
    if user_text is not None:
        log.user(user_text)
    _adopt_background(log, tools)
    reply = Reply()
    with log.turn(resume=resume) as turn:
        while True:
            if clock.before_step() is not None:
                turn.reason = TurnEndReason.BUDGET_EXHAUSTED.value
                return reply
            # Reports are injected only into a step that will run: one that
            # came as the turn ended waits for the next turn's model to read it.
            background.deliver_reports(log, notice_style)
            with log.step():
                reply = model(log.messages)
                log.assistant(reply.content, reply.tool_calls)
                spent = _run_calls(log, tools, reply.tool_calls, clock, timeout_s)
            if spent is not None:
                turn.reason = TurnEndReason.BUDGET_EXHAUSTED.value
                return reply
            if reply.tool_calls:
                continue
            if not await_background:
                return reply
            # The wait for a report is bounded by the turn's time: a report
            # that comes later is delivered once, at the next turn's first step.
            if background.wait_for_report(log, timeout_s=clock.remaining_s()):
                continue
            if clock.time_spent() is not None and background.still_running(log):
                turn.reason = TurnEndReason.BUDGET_EXHAUSTED.value
            return reply


def run_agent_turn(
    log: Log, agent: AgentSpec, user_text: Content | None = None, **options: Any
) -> Reply:
    """`run_turn` with the model, tools and bounds of an `AgentSpec`;
    `options` override them (None values are ignored)."""
    limits = agent.limits()
    limits.update({key: value for key, value in options.items() if value is not None})
    return run_turn(log, agent.model, agent.tools, user_text, **limits)


def dispatch_options(
    tool: Tool | None, call: ToolCall, timeout_s: float | None = None
) -> dict[str, Any]:
    """What a call's dispatch records: the tool's idempotency, for a subagent
    tool the agent the call joins (and whether it runs in the background),
    and the call's deadline."""
    if tool is None:
        return {"idempotency": None, "join": None}
    join = agent_id_for(tool.agent_type, call.id) if tool.agent_type else None
    options: dict[str, Any] = {"idempotency": tool.idempotency, "join": join}
    if timeout_s is not None:
        options["timeout_s"] = timeout_s
    if tool.background:
        options["background"] = True
    return options


def call_deadline(tool: Tool | None, default_s: float | None) -> float | None:
    """A call's deadline: its tool's own, else the loop's. A background spawn
    returns at once and needs none."""
    if tool is None or tool.background:
        return None
    return tool.timeout_s if tool.timeout_s is not None else default_s


def _run_calls(
    log: Log,
    tools: Mapping[str, Tool],
    calls: Sequence[ToolCall],
    clock: BudgetClock,
    timeout_s: float | None,
) -> str | None:
    """Run a step's calls in order; returns the budget spent, if one was."""
    for index, call in enumerate(calls):
        spent = clock.before_call()
        if spent is not None:
            results = [budget_spent_result(later, spent) for later in calls[index:]]
            log.append_many(results, origin=Origin.BUDGET.value, allow_undispatched=True)
            return spent
        tool = tools.get(call.name)
        if not _run_call(log, tool, call, call_deadline(tool, timeout_s)):
            behind = [behind_deadline_result(later, call) for later in calls[index + 1 :]]
            if behind:
                log.append_many(behind, origin=Origin.DEADLINE.value, allow_undispatched=True)
            return None
    return None


def record_late(log: Log, call: ToolCall, content: ToolOutput, is_error: bool) -> None:
    """Record what a call answered D1 returned after all (never delivered)."""
    if isinstance(content, background.Delivered):
        # A join that got its report too late: the report itself stays
        # undelivered, for the loop to inject; the record keeps its text.
        content = content.content
    # The session may be closed, or its process ending: the late output is
    # then lost, which costs nothing, since it was never the call's answer.
    with contextlib.suppress(TurnlogError):
        log.append(late_result(call, content, is_error=is_error))


def _run_call(log: Log, tool: Tool | None, call: ToolCall, timeout_s: float | None) -> bool:
    """Dispatch and run one call; False when it ran past its deadline."""
    with dispatched(log, call, dispatch_options(tool, call, timeout_s)) as running:
        if tool is None:
            running.result(f"unknown tool {call.name!r}", is_error=True)
            return True
        arguments: Any = call.arguments if isinstance(call.arguments, dict) else {}
        args: tuple[Any, ...] = (ToolContext(log, call),) if tool.context else ()
        body = functools.partial(tool.run, *args, **arguments)
        if timeout_s is not None:
            worker = ToolThread(body, functools.partial(record_late, log, call))
            if not worker.start().wait(timeout_s):
                log.append(past_deadline_result(call, timeout_s), origin=Origin.DEADLINE.value)
                running.answered = True
                return False
            output, error = worker.output, worker.error
        else:
            output, error = None, None
            try:
                output = body()
            except Exception as exc:  # a failing tool is a result the model sees, not a crash
                error = exc
        if error is not None:
            running.result(f"{type(error).__name__}: {error}", is_error=True)
        elif inspect.isawaitable(output):
            if inspect.iscoroutine(output):
                output.close()
            # It may have started: the dispatch block answers it as outcome unknown.
            raise UsageError(
                f"tool {call.name!r} is a coroutine function",
                hint="run async tools with turnlog.aio.arun_turn",
            )
        else:
            record_output(log, running, tool, output)
    return True


def record_output(log: Log, running: Dispatch, tool: Tool, output: Any) -> None:
    """A call's result: a background spawn's acknowledgement is marked
    `background`, and a join tool's report names the child it delivers."""
    call = running.call
    if tool.background:
        log.append(ev.ToolResult(call_id=call.id, name=call.name, content=output, background=True))
        running.answered = True
    elif isinstance(output, background.Delivered):
        log.append(
            ev.ToolResult(
                call_id=call.id, name=call.name, content=output.content, delivers=output.delivers
            )
        )
        running.answered = True
    else:
        running.result(output)


def spec_for(tools: Mapping[str, Tool]) -> Callable[[ev.SubagentSpawned], AgentSpec | None]:
    """The agent that revives a background child: that of the background
    subagent tool of its type."""
    by_type = {
        tool.agent_type: tool.spec for tool in tools.values() if tool.background and tool.agent_type
    }

    def find(spawned: ev.SubagentSpawned) -> AgentSpec | None:
        spec = by_type.get(spawned.agent_type) if spawned.agent_type else None
        return spec if isinstance(spec, AgentSpec) else None

    return find


def _adopt_background(log: Log, tools: Mapping[str, Tool]) -> None:
    if not log.state.background:
        return
    running = background.registry(log).running
    for adopted in background.adopt(log, spec_for(tools), running=running):
        child_log, spec = adopted.log, adopted.spec

        def body(child_log: Log = child_log, spec: AgentSpec = spec) -> Content:
            with child_log:
                return continue_run(child_log, spec).content

        background.run_in_thread(log, adopted.spawned, adopted.child, body)


def continue_run(log: Log, agent: AgentSpec, *, max_steps: int | None = None) -> Reply:
    """Carry on a revived session: resume the turn a tree revival left open
    (its waits answered), or else start the next turn from the log as it is.
    Background children it spawned are adopted: delivered, revived or
    reported lost (`turnlog.background.adopt`)."""
    resume = log.verdict().open_turn is not None
    return run_agent_turn(log, agent, max_steps=max_steps, resume=resume)


def continue_tree(
    tree: RevivedTree,
    agents: Callable[[TreeNode], AgentSpec],
    *,
    max_steps: int | None = None,
) -> dict[str, Reply]:
    """Run every revived session of a tree to its answer, children first.

    Each child's answer reaches its parent's pending wait under the original
    call id before the parent goes on. `agents(node)` gives the model and
    tools for a node (by `node.agent_type`, say). Returns each revived
    session's final reply by session id.
    """
    replies: dict[str, Reply] = {}
    for node in tree.revived:
        log = node.log
        assert log is not None and node.revival is not None
        for wait in node.revival.pending:
            child = tree.child_of(node, wait)
            answer = replies[child.session_id].content
            log.append_many(settled_events(wait, child.session_id, answer), sync=True)
        replies[node.session_id] = continue_run(log, agents(node), max_steps=max_steps)
    return replies
