"""Subagents in either loop: a child's id and session, what the parent records, what a join says."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import msgspec

from turnlog import events as ev
from turnlog.core.fold import BackgroundChild, SessionState
from turnlog.errors import UsageError
from turnlog.events import Content, ToolCall
from turnlog.handle.log import Log
from turnlog.runtime import background
from turnlog.runtime.agents import AgentSpec, Reply, Tool, ToolOutput
from turnlog.stores import child_session_id
from turnlog.stores.base import MAX_SESSION_ID_CHARS
from turnlog.text import display_text

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
            result=display_text(reply.content) if reply is not None else None,
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


def subagent_request(
    context: CallContext, agent_type: str, task_argument: str, arguments: Mapping[str, Any]
) -> tuple[str, Content]:
    """What a subagent tool's call asks for, in either loop: the child's id
    (from the call id) and its task (the argument named `task_argument`)."""
    return agent_id_for(agent_type, context.call_id), arguments.get(task_argument, "")


def subagent_tool_running(
    run: Callable[..., Any], agent_type: str, agent: AgentSpec, background: bool
) -> Tool:
    """The `Tool` of a subagent tool, whichever loop `run` is for: running it
    twice is unknown (a revived call finds its child by id), and its dispatch
    joins the child it starts."""
    return Tool(
        run=run,
        idempotency="unknown",
        context=True,
        agent_type=agent_type,
        background=background,
        spec=agent,
    )


def joined_child(state: SessionState, agent_id: str) -> BackgroundChild:
    """The background child a join names, in either loop (UsageError naming
    those there are when it names none)."""
    child = next((c for c in state.background if c.agent_id == agent_id), None)
    if child is None:
        raise no_such_child(agent_id, [c.agent_id for c in state.background])
    return child


def no_such_child(agent_id: str, known: Sequence[str]) -> UsageError:
    """The refusal of a join that names no background child (of those `known`)."""
    return UsageError(f"no background subagent {agent_id!r} (known: {', '.join(known) or 'none'})")


def already_delivered(child: BackgroundChild) -> str | None:
    """What a join answers when the child's report was delivered before it
    asked (None: it was not)."""
    if child.delivered is None:
        return None
    return f"The report of {child.agent_id} was already delivered (event {child.delivered})."


def report_after_wait(settled: BackgroundChild, waited: bool) -> ToolOutput:
    """What a join answers once its wait for the child ended, in either loop:
    the report, unless it was delivered meanwhile or nothing here could bring it."""
    if settled.delivered is not None:
        # A join past its deadline waits on in its thread while the loop goes
        # on and injects the report: what it returns is then recorded late,
        # and it says what became of the report rather than that the child
        # is gone.
        return background.meanwhile(settled)
    if not waited:
        raise UsageError(f"background subagent {settled.agent_id!r} is not running in this process")
    return background.Delivered(content=background.report_body(settled), delivers=settled.agent_id)


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
