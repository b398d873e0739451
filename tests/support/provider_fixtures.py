"""Fixture sessions for the provider renderers, each a realistic event list."""

from __future__ import annotations

from collections.abc import Callable

import turnlog
from builders import (
    assistant,
    call,
    dispatch,
    number,
    result,
    step_end,
    step_start,
    turn_end,
    turn_start,
)
from turnlog import events as ev
from turnlog.events import Event
from turnlog.ops.revival import REVIVAL_NOTICE

SYSTEM = ev.SystemMessage(content="You are a careful assistant.")

# Opaque reasoning from three providers, as their APIs return it. The
# signatures are valid base64, as the providers send them.
THINKING = {
    "type": "thinking",
    "thinking": "The user wants the weather.",
    "signature": "RXFRQkNrWUlCaEFDR0FJ",
}
REASONING = {
    "type": "reasoning",
    "id": "rs_0123",
    "summary": [{"type": "summary_text", "text": "Need the weather tool."}],
    "encrypted_content": "Z0FBQUFBQm9fX19fX19fX19f",
}
GEMINI_TEXT = {"type": "text", "text": "Let me check.", "thought_signature": "Q2lRQlZLaGE="}


def recovered(events: list[Event]) -> list[Event]:
    return [*events, *turnlog.plan(events).events]


def plain_chat() -> list[Event]:
    return number(
        [
            SYSTEM,
            ev.UserMessage(content="Hello"),
            turn_start(1),
            step_start(1, 1),
            assistant(content="Hi! How can I help?"),
            step_end(1, 1),
            turn_end(1, 1),
            ev.UserMessage(content="Tell me a joke."),
            turn_start(2),
            assistant(content="Why did the log cross the road? To append to the other side."),
            turn_end(2),
        ]
    )


def one_tool_call() -> list[Event]:
    return number(
        [
            SYSTEM,
            ev.UserMessage(content="Weather in Paris?"),
            turn_start(1),
            step_start(1, 1),
            assistant(call("call_w1", "weather", city="Paris"), content="Checking."),
            dispatch("call_w1", "weather", "read_only"),
            result("call_w1", "weather", "18C, cloudy"),
            step_end(1, 1),
            step_start(1, 2),
            assistant(content="It is 18C and cloudy in Paris."),
            step_end(1, 2),
            turn_end(1, 2),
        ]
    )


def parallel_calls() -> list[Event]:
    return number(
        [
            ev.UserMessage(content="Weather in Paris and Rome?"),
            turn_start(1),
            step_start(1, 1),
            assistant(
                call("call_p", "weather", city="Paris"), call("call_r", "weather", city="Rome")
            ),
            dispatch("call_p", "weather"),
            dispatch("call_r", "weather"),
            result("call_p", "weather", "18C"),
            result("call_r", "weather", "24C"),
            step_end(1, 1),
            step_start(1, 2),
            assistant(content="Paris 18C, Rome 24C."),
            step_end(1, 2),
            turn_end(1, 2),
        ]
    )


def crash_after_dispatch() -> list[Event]:
    return recovered(
        number(
            [
                SYSTEM,
                ev.UserMessage(content="Pay invoice 7."),
                turn_start(1),
                step_start(1, 1),
                assistant(call("call_pay", "pay", invoice=7), content="Paying."),
                dispatch("call_pay", "pay", "destructive"),
            ]
        )
    )


def crash_before_dispatch() -> list[Event]:
    return recovered(
        number(
            [
                ev.UserMessage(content="List and read."),
                turn_start(1),
                step_start(1, 1),
                assistant(call("call_ls", "ls"), call("call_cat", "cat", path="a.txt")),
                dispatch("call_ls", "ls", "read_only"),
                result("call_ls", "ls", "a.txt"),
            ]
        )
    )


def revived() -> list[Event]:
    crashed = crash_after_dispatch()
    notice = ev.UserMessage(content=REVIVAL_NOTICE.format(revival=1), injected="revival")
    tail = [
        Event(seq=len(crashed), data=ev.RunRevived(revival=1), ts=crashed[-1].ts, origin="revival"),
        Event(seq=len(crashed) + 1, data=notice, ts=crashed[-1].ts, origin="revival"),
    ]
    return [*crashed, *tail]


def thinking() -> list[Event]:
    content = [THINKING, REASONING, GEMINI_TEXT]
    weather = ev.ToolCall(
        id="call_t1",
        name="weather",
        arguments={"city": "Oslo"},
        extra={"thought_signature": "Q2lRQlZLaGFfX18=", "item_id": "fc_0123"},
    )
    return number(
        [
            ev.UserMessage(content="Weather in Oslo?"),
            turn_start(1),
            step_start(1, 1),
            ev.AssistantMessage(content=content, tool_calls=[weather]),
            dispatch("call_t1", "weather"),
            result("call_t1", "weather", "3C"),
            step_end(1, 1),
            step_start(1, 2),
            assistant(content="It is 3C in Oslo."),
            step_end(1, 2),
            turn_end(1, 2),
        ]
    )


def compaction() -> list[Event]:
    events = one_tool_call()
    return [
        *events,
        Event(
            seq=len(events),
            data=ev.Compaction(through_seq=len(events) - 1, summary="Earlier: Paris was 18C."),
            ts=events[-1].ts,
        ),
        Event(seq=len(events) + 1, data=ev.UserMessage(content="And tomorrow?"), ts=events[-1].ts),
    ]


def crashed_unrecovered() -> list[Event]:
    return number(
        [
            ev.UserMessage(content="Pay invoice 7."),
            turn_start(1),
            step_start(1, 1),
            assistant(call("call_pay", "pay", invoice=7)),
            dispatch("call_pay", "pay", "destructive"),
        ]
    )


FIXTURES: dict[str, Callable[[], list[Event]]] = {
    "plain_chat": plain_chat,
    "one_tool_call": one_tool_call,
    "parallel_calls": parallel_calls,
    "crash_after_dispatch": crash_after_dispatch,
    "crash_before_dispatch": crash_before_dispatch,
    "revived": revived,
    "thinking": thinking,
    "compaction": compaction,
}
