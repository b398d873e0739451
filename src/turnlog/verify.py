"""Integrity checks over a whole stored session: what `turnlog verify` reports."""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from turnlog import events as ev
from turnlog.damage import Problem
from turnlog.errors import TurnlogError
from turnlog.events import Event
from turnlog.fold import Fold
from turnlog.stores import Store


class Report(msgspec.Struct, frozen=True, kw_only=True):
    """One session's verification: clean, or every problem found."""

    session_id: str
    ok: bool
    events: int
    problems: tuple[Problem, ...]


def check_events(events: Sequence[Event]) -> list[Problem]:
    """Pairing and bookkeeping problems in valid records: turns and steps that
    close nothing, results answered twice or for calls never made. Pure."""
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
    problems += [Problem(message=warning) for warning in folder.warnings]
    return problems


def verify_session(
    store: Store, session_id: str, *, strict: bool = False, raise_unreadable: bool = False
) -> Report:
    """Check one session: checksums, seq order, header, vocabulary, pairing.

    An entry that cannot be read as a session at all (not a regular file, not
    a turnlog session) is a problem of that session, or, with
    `raise_unreadable`, raises its error (with its hint).
    """
    try:
        scan = store.scan(session_id)
    except TurnlogError as exc:
        if raise_unreadable:
            raise
        return Report(
            session_id=session_id, ok=False, events=0, problems=(Problem(message=exc.message),)
        )
    problems = list(scan.problems)
    if scan.torn is not None and scan.refusal is None:
        problems.append(
            Problem(
                message=f"torn tail of {scan.torn.size_bytes} bytes (run `turnlog recover`)",
                offset=scan.torn.offset,
            )
        )
    if strict:
        problems += [
            Problem(message="record has no checksum", line=n) for n in scan.lines_without_crc
        ]
    if not scan.events and not problems:
        problems.append(Problem(message="no session header"))
    problems += check_events(scan.events)
    return Report(
        session_id=session_id, ok=not problems, events=len(scan.events), problems=tuple(problems)
    )


def verify_store(store: Store, *, strict: bool = False) -> list[Report]:
    """Check every session of a store, going on past any odd entry."""
    return [verify_session(store, session_id, strict=strict) for session_id in store.sessions()]
