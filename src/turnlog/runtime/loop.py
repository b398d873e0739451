"""A reference agent loop that writes events in the order recovery relies on.

Its parts shared with the asyncio twin (`turnlog.aio`) have modules of their
own: `turnlog.runtime.agents` (tools and specs), `turnlog.runtime.subagents`
(children and joins), `turnlog.runtime.tool_calls` (one call's dispatch and
result); their names are imported from here too.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import msgspec

from turnlog.core.notices import NoticeStyle
from turnlog.errors import UsageError
from turnlog.events import Content, Origin, ToolCall, ToolDispatch
from turnlog.handle.blocks import DispatchBlock
from turnlog.handle.log import Log
from turnlog.ops.open import open as open_log
from turnlog.ops.tree import RevivedTree, TreeNode, settled_events
from turnlog.runtime import approvals, background
from turnlog.runtime.agents import (
    MAX_STEPS_PER_TURN,
    AgentSpec,
    Model,
    Reply,
    Tool,
    ToolOutput,
    check_deadline,
)
from turnlog.runtime.approvals import DecisionInput
from turnlog.runtime.budgets import BudgetClock, budget_spent_result
from turnlog.runtime.deadlines import ToolThread, behind_deadline_result, past_deadline_result
from turnlog.runtime.subagents import (
    CallContext,
    Spawn,
    agent_id_for,
    already_delivered,
    joined_child,
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

__all__ = [
    "MAX_STEPS_PER_TURN",
    "AgentSpec",
    "CallContext",
    "Model",
    "Reply",
    "Spawn",
    "Tool",
    "ToolContext",
    "ToolOutput",
    "agent_id_for",
    "already_delivered",
    "call_deadline",
    "check_deadline",
    "continue_run",
    "continue_tree",
    "dispatch_options",
    "join_background",
    "joined_child",
    "record_late",
    "record_output",
    "report_after_wait",
    "run_agent_turn",
    "run_turn",
    "spec_for",
    "subagent_request",
    "subagent_tool",
    "subagent_tool_running",
    "task_wait_tool",
]


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
        agent_id, task = subagent_request(context, agent_type, task_argument, arguments)
        if background:
            return context.spawn_background(agent_id, task, agent, agent_type=agent_type)
        reply = context.spawn(agent_id, task, agent, agent_type=agent_type, max_steps=max_steps)
        return reply.content

    return subagent_tool_running(run, agent_type, agent, background)


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
    delivered = already_delivered(joined_child(log.state, agent_id))
    if delivered is not None:
        return delivered
    waited = background.wait_for_report(log, agent_id)
    return report_after_wait(joined_child(log.state, agent_id), waited)


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
    decisions: Mapping[str, DecisionInput] | None = None,
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

    Pauses: a call whose tool `needs_approval` (or is `external`) is paused
    (`tool_paused`, synced) instead of run; the step's other calls run, and
    the turn stops there, open and paused, returning the reply with
    `awaiting` set. Resume it (this process or another) with
    `resume=True` and `decisions` ({call_id: Approve() | Reject(...) |
    Deliver(...)}), recorded before anything acts on them; or record them
    first (`log.approve`, `turnlog approve`) and resume without. Approved
    calls then run once, dispatched write-ahead; rejected ones never. While
    a call is still undecided the resume returns the paused reply again and
    writes nothing. Pauses past their deadline are settled first (A2).
    """
    timeout_s = check_deadline(timeout_s)
    approvals.check_turn_input(log, user_text, resume)
    if log.awaiting or log.paused:
        resume = True
        if decisions:
            approvals.record_decisions(log, decisions)
        log.expire()
        log.settle_decided()
        if approvals.undecided(log):
            return Reply(awaiting=log.awaiting)
    elif decisions:
        approvals.record_decisions(log, decisions)  # refuses: nothing waits
    rules = TurnRules(
        max_steps=max_steps,
        max_tool_calls=max_tool_calls,
        max_turn_s=max_turn_s,
        await_background=await_background,
    )
    if user_text is not None:
        log.user(user_text)
    _adopt_background(log, tools)
    reply = Reply()
    if resume and not log.turn_open:
        # Every pause expired and closed the turn: nothing is left to resume.
        return reply
    with log.turn(resume=resume) as turn:
        approved = approvals.approved_calls(log)
        if approved:
            with log.step():
                _run_calls(log, tools, approved, rules.clock, timeout_s)
        while True:
            if not rules.may_step():
                turn.reason = BUDGET_EXHAUSTED
                return reply
            # Reports are injected only into a step that will run: one that
            # came as the turn ended waits for the next turn's model to read it.
            background.deliver_reports(log, notice_style)
            with log.step():
                reply = model(log.messages)
                log.assistant(reply.content, reply.tool_calls, usage=reply.usage)
                to_pause, to_run = approvals.split_step(tools, reply.tool_calls)
                for call, kind in to_pause:
                    log.pause(call.id, kind=kind)
                spent = _run_calls(log, tools, to_run, rules.clock, timeout_s)
            if to_pause and log.turn_open:
                # The turn stays open, paused; leaving the block ends no turn.
                return msgspec.structs.replace(reply, awaiting=log.awaiting)
            next_move = rules.after_step(reply, spent)
            if next_move is Next.WAIT:
                got = background.wait_for_report(log, timeout_s=rules.wait_s())
                next_move = rules.after_wait(got, lambda: background.still_running(log))
            if next_move is Next.STEP:
                continue
            if next_move is Next.SPENT:
                turn.reason = BUDGET_EXHAUSTED
            return reply


def run_agent_turn(
    log: Log, agent: AgentSpec, user_text: Content | None = None, **options: Any
) -> Reply:
    """`run_turn` with the model, tools and bounds of an `AgentSpec`;
    `options` override them (None values are ignored)."""
    return run_turn(log, agent.model, agent.tools, user_text, **agent.limits(**options))


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


def _run_call(log: Log, tool: Tool | None, call: ToolCall, timeout_s: float | None) -> bool:
    """Dispatch and run one call; False when it ran past its deadline."""
    fields = dispatch_options(tool, call, timeout_s)
    payload = ToolDispatch(call_id=call.id, name=call.name, **fields)
    with DispatchBlock(log.held, call, payload) as running:
        if tool is None:
            running.result(unknown_tool_text(call.name), is_error=True)
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
            running.result(tool_error_text(error), is_error=True)
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
    reported lost (`turnlog.runtime.background.adopt`)."""
    resume = log.turn_open
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
