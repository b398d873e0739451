"""Terse builders for event sequences in tests."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgspec

from turnlog import events as ev
from turnlog.core.fold import Message
from turnlog.events import Event, ToolCall
from turnlog.stores.base import Store

TS = "2026-11-29T12:00:00.000000Z"


def call(call_id: str, name: str = "tool", **arguments: Any) -> ToolCall:
    return ToolCall(id=call_id, name=name, arguments=arguments)


def session(session_id: str = "s1") -> ev.Session:
    return ev.Session(session_id=session_id, created_at=TS)


def number(items: list[ev.EventData], *, ts: str | None = TS) -> list[Event]:
    """Events numbered 0.. from payloads; a missing header is added."""
    if not items or not isinstance(items[0], ev.Session):
        items = [session(), *items]
    return [Event(seq=i, data=data, ts=ts) for i, data in enumerate(items)]


def assistant(*calls: ToolCall, content: str = "") -> ev.AssistantMessage:
    return ev.AssistantMessage(content=content, tool_calls=list(calls))


def dispatch(call_id: str, name: str = "tool", idempotency: str | None = None) -> ev.ToolDispatch:
    return ev.ToolDispatch(call_id=call_id, name=name, idempotency=idempotency)


def result(call_id: str, name: str = "tool", content: str = "ok") -> ev.ToolResult:
    return ev.ToolResult(call_id=call_id, name=name, content=content)


def turn_start(turn: int | None = 1) -> ev.TurnStart:
    return ev.TurnStart(turn=turn)


def turn_end(turn: int | None = 1, steps: int | None = None) -> ev.TurnEnd:
    return ev.TurnEnd(reason="complete", turn=turn, steps=steps)


def step_start(turn: int = 1, step: int = 1) -> ev.StepStart:
    return ev.StepStart(turn=turn, step=step)


def step_end(turn: int = 1, step: int = 1) -> ev.StepEnd:
    return ev.StepEnd(turn=turn, step=step, outcome="ok")


def json_roundtrip(events: list[Event]) -> list[Event]:
    """Through plain JSON and back: enums become strings, structs dicts."""
    raw = msgspec.json.encode([ev.to_builtins(e) for e in events])
    return [ev.decode_event(msgspec.json.encode(obj)) for obj in msgspec.json.decode(raw)]


def crashed_session(session_id: str) -> list[Event]:
    """A session that crashed with `a` dispatched and `b` not: R1 and R2."""
    events = number(
        [
            ev.UserMessage(content=f"pay for {session_id}"),
            turn_start(1),
            step_start(1, 1),
            assistant(call("a", "pay"), call("b", "ls")),
            dispatch("a", "pay"),
        ]
    )
    header = msgspec.structs.replace(events[0], data=ev.Session(session_id=session_id))
    return [header, *events[1:]]


def paused_session(session_id: str, *, until: str | None = None) -> list[Event]:
    """A run that paused call `c1` (`pay`) for approval and exited, as a live writer leaves it."""
    return number(
        [
            session(session_id),
            ev.UserMessage(content="pay bob 5"),
            turn_start(1),
            step_start(1, 1),
            assistant(call("c1", "pay", amount=5)),
            ev.ToolPaused(call_id="c1", name="pay", kind="approval", until=until),
            ev.StepEnd(turn=1, step=1, outcome="paused"),
        ]
    )


def put(store: Store, events: list[Event]) -> None:
    """Write a whole session into a store as it is."""
    with store.create(events[0]) as writer:
        writer.append(events[1:], expected_seq=1, sync=False)


def assert_exports_valid(messages: Sequence[Message]) -> None:
    """Every provider accepts the transcript (DESIGN §7)."""
    from turnlog import providers

    for provider in providers.PROVIDERS:
        violations = providers.validate(provider, providers.render(provider, messages))
        assert violations == [], (provider, violations)


def write_session(path: Path, items: list[ev.EventData]) -> list[Event]:
    """A JSONL session file named after its id, holding these payloads."""
    from turnlog.stores.record import encode_line

    events = number(items)
    events = [
        msgspec.structs.replace(events[0], data=ev.Session(session_id=path.stem)),
        *events[1:],
    ]
    path.write_bytes(b"".join(encode_line(e) for e in events))
    return events


def crashed_turn(target: Any, session_id: str = "s1", *, recover: bool = True) -> None:
    """A session whose turn was killed with `charge` dispatched and `email`
    not started (the handle dropped, as a SIGKILL leaves it), then recovered."""
    import turnlog

    log = turnlog.open(target, session_id)
    log.begin_turn()
    log.user("pay bob")
    log.begin_step()
    calls = [
        ToolCall(id="c1", name="charge", arguments={"amount": 5}),
        ToolCall(id="c2", name="email"),
    ]
    log.assistant("paying", tool_calls=calls)
    log.begin_dispatch(calls[0], idempotency="destructive")
    log.close()
    if recover:
        turnlog.open(target, session_id, recover=True).close()


def manager_tree(root: Path) -> Path:
    """The demo's manager, run to its answer: a parent session at
    ROOT/boss.jsonl whose `delegate` call ran a payer subagent in its own
    session."""
    import turnlog
    from turnlog.cli.demo_agent import tree_agents
    from turnlog.runtime.loop import run_turn

    manager = tree_agents(root)["manager"]
    with turnlog.open(root / "boss.jsonl", create=True) as log:
        run_turn(log, manager.model, manager.tools, "Settle invoice 9.")
    return root / "boss.jsonl"
