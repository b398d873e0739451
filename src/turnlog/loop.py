"""A reference agent loop that writes events in the order recovery relies on."""

from __future__ import annotations

import inspect
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Final

import msgspec

from turnlog import events as ev
from turnlog.errors import UsageError
from turnlog.events import Content, ToolCall
from turnlog.fold import Message
from turnlog.log import Log
from turnlog.log import open as open_log
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


class Tool(msgspec.Struct, frozen=True, kw_only=True):
    """A callable the model may ask for, and what running it twice would do.

    With `context=True` the tool is called as `run(context, **arguments)`,
    where `context` is a `ToolContext` (its call id makes a good idempotency
    key for the outside system). `agent_type` marks a tool that runs a
    subagent: its dispatch records `join: <agent_id>` (see `subagent_tool`).
    """

    # A coroutine function only under `turnlog.aio.arun_turn`.
    run: Callable[..., Content | Awaitable[Content]]
    idempotency: str = "unknown"
    context: bool = False
    agent_type: str | None = None


class AgentSpec(msgspec.Struct, frozen=True, kw_only=True):
    """What runs an agent: its model and its tools."""

    model: Model
    tools: Mapping[str, Tool]


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
        max_steps: int = MAX_STEPS_PER_TURN,
    ) -> Reply:
        """Run a subagent to its answer in its own session and return its reply.

        The child's session is `<parent>.agents/<agent_id>` in the same store,
        its header naming this session and call; the parent records
        `subagent_spawned` before the child starts and `subagent_settled` when
        it ends.
        """
        parent = self.log
        spawn = self._spawn(agent_id, agent_type, label)
        parent.append(spawn.spawned)
        reply: Reply | None = None
        try:
            with open_log(parent.store, spawn.child, **spawn.child_options(parent)) as child:
                reply = run_turn(child, agent.model, agent.tools, task, max_steps=max_steps)
            return reply
        finally:
            parent.append(spawn.settled(reply))


def subagent_tool(
    agent_type: str,
    agent: AgentSpec,
    *,
    task_argument: str = "task",
    max_steps: int = MAX_STEPS_PER_TURN,
) -> Tool:
    """A tool that runs a subagent on the task the model gives and returns its answer.

    The subagent's id comes from the call id (`agent_id_for`), and the call's
    dispatch records `join: <agent_id>`, so a tree revival knows which child
    answers which call.
    """

    def run(context: ToolContext, **arguments: Any) -> Content:
        task = arguments.get(task_argument, "")
        agent_id = agent_id_for(agent_type, context.call_id)
        reply = context.spawn(agent_id, task, agent, agent_type=agent_type, max_steps=max_steps)
        return reply.content

    return Tool(run=run, idempotency="unknown", context=True, agent_type=agent_type)


def run_turn(
    log: Log,
    model: Model,
    tools: Mapping[str, Tool],
    user_text: Content | None = None,
    *,
    max_steps: int = MAX_STEPS_PER_TURN,
    resume: bool = False,
) -> Reply:
    """Run one turn to its answer and return the final reply.

    The order is the contract: the user message before the turn; inside each
    step the assistant message, then for each call a durable `tool_dispatch`
    *before* the tool body runs, then its result. A crash anywhere leaves a
    log the decision table classifies honestly.

    `resume=True` carries on the open turn a tree revival left (see
    `Log.turn`) instead of starting one.
    """
    if user_text is not None:
        log.user(user_text)
    reply = Reply()
    with log.turn(resume=resume) as turn:
        for _ in range(max_steps):
            with log.step():
                reply = model(log.messages)
                log.assistant(reply.content, reply.tool_calls)
                for call in reply.tool_calls:
                    _run_call(log, tools, call)
            if not reply.tool_calls:
                return reply
        turn.reason = "error"
    return reply


def dispatch_options(tool: Tool | None, call: ToolCall) -> dict[str, str | None]:
    """What a call's dispatch records: the tool's idempotency, and for a
    subagent tool the agent the call joins."""
    if tool is None:
        return {"idempotency": None, "join": None}
    join = agent_id_for(tool.agent_type, call.id) if tool.agent_type else None
    return {"idempotency": tool.idempotency, "join": join}


def _run_call(log: Log, tools: Mapping[str, Tool], call: ToolCall) -> None:
    tool = tools.get(call.name)
    with log.dispatch(call, **dispatch_options(tool, call)) as running:
        if tool is None:
            running.result(f"unknown tool {call.name!r}", is_error=True)
            return
        arguments: Any = call.arguments if isinstance(call.arguments, dict) else {}
        try:
            if tool.context:
                output = tool.run(ToolContext(log, call), **arguments)
            else:
                output = tool.run(**arguments)
        except Exception as exc:  # a failing tool is a result the model sees, not a crash
            running.result(f"{type(exc).__name__}: {exc}", is_error=True)
        else:
            if inspect.isawaitable(output):
                # It may have started: the dispatch block answers it as outcome unknown.
                raise UsageError(
                    f"tool {call.name!r} is a coroutine function",
                    hint="run async tools with turnlog.aio.arun_turn",
                )
            running.result(output)


def continue_run(log: Log, agent: AgentSpec, *, max_steps: int = MAX_STEPS_PER_TURN) -> Reply:
    """Carry on a revived session: resume the turn a tree revival left open
    (its waits answered), or else start the next turn from the log as it is."""
    resume = log.verdict().open_turn is not None
    return run_turn(log, agent.model, agent.tools, max_steps=max_steps, resume=resume)


def continue_tree(
    tree: RevivedTree,
    agents: Callable[[TreeNode], AgentSpec],
    *,
    max_steps: int = MAX_STEPS_PER_TURN,
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
