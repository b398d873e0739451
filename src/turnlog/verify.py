"""Integrity checks over a whole session: the problems `turnlog verify` reports. Pure."""

from __future__ import annotations

from collections.abc import Sequence

from turnlog import events as ev
from turnlog.damage import Problem
from turnlog.events import Event
from turnlog.fold import Fold


def check_events(events: Sequence[Event]) -> list[Problem]:
    """Pairing and bookkeeping problems in valid records: turns and steps that
    close nothing, results answered twice or for calls never made."""
    problems: list[Problem] = []
    folder = Fold()
    known_calls: set[str] = set()
    for event in events:
        data = event.data
        if isinstance(data, ev.AssistantMessage):
            known_calls.update(call.id for call in data.tool_calls)
        elif isinstance(data, ev.ToolDispatch):
            known_calls.add(data.call_id)
        elif isinstance(data, ev.ToolResult) and data.call_id not in known_calls:
            problems.append(
                Problem(
                    message=f"seq {event.seq}: result for call {data.call_id!r}, never requested"
                )
            )
        folder.apply(event)
    problems += [Problem(message=warning) for warning in folder.state.warnings]
    return problems
