"""Tail reads: the few newest events that decide whether a run crashed. Pure."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Final

import msgspec

from turnlog import events as ev
from turnlog.core.damage import Problem, TornTail
from turnlog.core.fold import Fold
from turnlog.core.verdict import Verdict, decide
from turnlog.events import Event


class Tail(msgspec.Struct, frozen=True, kw_only=True):
    """The header, the newest events, and what the skipped middle contributes.

    `events` is contiguous and ends at the last event; `revivals_before`
    counts the `run_revived` events older than `events[0]`.
    """

    header: Event | None
    events: tuple[Event, ...]
    revivals_before: int
    bytes_read: int = 0
    torn: TornTail | None = None
    problems: tuple[Problem, ...] = ()
    # Where the last whole record ends: what a writer keeps of the file.
    valid_size_bytes: int = 0

    def fold(self) -> Fold:
        """A fold of the tail: exact for the open turn, owed calls, revivals
        and the last message; its transcript holds only the tail."""
        first_seq = self.events[0].seq if self.events else 0
        folder = Fold()
        if self.header is not None and first_seq > 0:
            folder.apply(self.header)
        folder.resume_at(first_seq, revivals=self.revivals_before)
        folder.extend(self.events)
        return folder

    def verdict(self) -> Verdict:
        """The same verdict a fold of the whole log gives (`verdict.decide`)."""
        return decide(self.fold())


def collect_tail(
    newest_first: Iterable[Event], *, revivals_older: Callable[[int], int] | None = None
) -> tuple[list[Event], int]:
    """Walk events newest first and keep only those that decide the state.

    The tail must reach back to the last turn boundary (so an open turn is
    seen whole, with any turn left open before it: see `closes_earlier`), to
    the newest message someone said (finished or not: `Fold.last_message`)
    and to the newest event that says whether the model must respond. The revival
    count needs an anchor: a `run_revived` (which carries its count) or a
    `turn_start` stamped with `revivals`. When none lies in the kept events,
    the older part of the log is searched for the newest one without keeping
    anything: by `revivals_older(count_kept)`, a store's fast search, or by
    walking on through `newest_first`. Returns the events oldest first and
    the number of revivals before the first of them.
    """
    collected: list[Event] = []
    # The newest message someone said (what `Fold.last_message` gives), and
    # the newest event that sets whether the model must respond (a user or
    # assistant message, or a tool result; a system message does not).
    boundary = said = responded = False
    anchor: int | None = None  # revivals counted up to and including the anchor
    anchor_index = -1
    events = iter(newest_first)
    for event in events:
        collected.append(event)
        data = event.data
        if isinstance(data, ev.TurnEnd) or (
            isinstance(data, ev.TurnStart) and closes_earlier(data)
        ):
            boundary = True
        kind = type(data)
        if kind in _SAID:
            said = True
            responded = responded or kind is not ev.SystemMessage
        elif kind is ev.ToolResult:
            responded = True
        if anchor is None:
            anchor = revival_anchor(data)
            if anchor is not None:
                anchor_index = len(collected) - 1
        if boundary and said and responded:
            break
    collected.reverse()
    if anchor is None:
        # No run_revived among the kept events: the newest anchor older than
        # them gives the whole count before them.
        if revivals_older is not None:
            return collected, revivals_older(len(collected))
        for event in events:
            older = revival_anchor(event.data)
            if older is not None:
                return collected, older
        return collected, 0
    # The fold counts every run_revived it sees again, so subtract those from
    # the oldest collected event up to and including the anchor.
    anchor_index = len(collected) - 1 - anchor_index
    recounted = sum(
        1 for event in collected[: anchor_index + 1] if isinstance(event.data, ev.RunRevived)
    )
    return collected, max(anchor - recounted, 0)


_SAID: Final = frozenset({ev.SystemMessage, ev.UserMessage, ev.AssistantMessage})


def closes_earlier(start: ev.TurnStart) -> bool:
    """True when a `turn_start` proves the turn before it was closed.

    A turn_start stamped with `revivals` comes from a turnlog writer, which
    refuses to start a turn inside an open one. An unstamped one (hand-made,
    imported) proves nothing: a turn it followed may still owe calls, which
    the fold carries into it, so a tail reads on to the boundary before it.
    """
    return start.revivals is not None


def revival_anchor(data: ev.EventData) -> int | None:
    """The revivals up to and including this event, if it says: the one
    anchor rule, for the tail walk here and the JSONL store's byte search.
    A `run_revived` carries its number, a stamped `turn_start` the count."""
    if isinstance(data, ev.RunRevived):
        return data.revival
    if isinstance(data, ev.TurnStart):
        return data.revivals
    return None
