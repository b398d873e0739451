"""Integrity checks over a whole stored session: what `turnlog verify` reports."""

from __future__ import annotations

import os

import msgspec

from turnlog import events as ev
from turnlog.core.damage import Problem
from turnlog.core.fold import Fold
from turnlog.errors import TurnlogError
from turnlog.events import Event
from turnlog.stores import Store, stored_session


class Report(msgspec.Struct, frozen=True, kw_only=True):
    """One session's verification: clean, or every problem found."""

    session_id: str
    ok: bool
    events: int
    problems: tuple[Problem, ...]


class EventChecker:
    """Pairing and bookkeeping checks over valid records, one event at a time,
    in memory bounded by a turn: turns and steps that close nothing, a result
    answered twice, a result for a call its turn never asked for. Pure."""

    def __init__(self) -> None:
        self.count = 0
        self._problems: list[Problem] = []
        self._fold = Fold(keep_transcript=False)
        # Calls asked for (or dispatched) in the current turn; outside turns,
        # since the last turn ended.
        self._known: set[str] = set()

    def feed(self, event: Event) -> None:
        self.count += 1
        data = event.data
        if isinstance(data, ev.TurnStart | ev.TurnEnd):
            self._known = set()
        elif isinstance(data, ev.AssistantMessage):
            self._known.update(call.id for call in data.tool_calls)
        elif isinstance(data, ev.ToolDispatch):
            self._known.add(data.call_id)
        elif isinstance(data, ev.ToolResult) and data.call_id not in self._known:
            self._problems.append(
                Problem(
                    message=f"seq {event.seq}: result for call {data.call_id!r}, "
                    "never requested before it in its turn"
                )
            )
        self._fold.apply(event)

    def problems(self) -> list[Problem]:
        return [*self._problems, *(Problem(message=w) for w in self._fold.warnings)]


def verify_session(
    target: str | os.PathLike[str] | Store,
    session_id: str | None = None,
    *,
    strict: bool = False,
    raise_unreadable: bool = False,
) -> Report:
    """Check one session: checksums, seq order, header, vocabulary, pairing.

    `target` is a `.jsonl` file, a store directory or URL, or a `Store`.

    An entry that cannot be read as a session at all (not a regular file, not
    a turnlog session) is a problem of that session, or, with
    `raise_unreadable`, raises its error (with its hint).
    """
    store, session_id = stored_session(target, session_id, what="verify_session")
    checker = EventChecker()
    try:
        scan = store.scan(session_id, on_event=checker.feed)
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
    if not checker.count and not problems:
        problems.append(Problem(message="no session header"))
    problems += checker.problems()
    return Report(
        session_id=session_id, ok=not problems, events=checker.count, problems=tuple(problems)
    )


def verify_store(store: Store, *, strict: bool = False) -> list[Report]:
    """Check every session of a store, going on past any odd entry."""
    return [verify_session(store, session_id, strict=strict) for session_id in store.sessions()]
