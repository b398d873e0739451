"""Durability modes: which appends are synced before `append` returns."""

from __future__ import annotations

from typing import Final, Literal

from turnlog import events as ev
from turnlog.errors import UsageError
from turnlog.events import EventData

Durability = Literal["always", "barrier", "none"]
DURABILITY_MODES: Final = ("always", "barrier", "none")

# In `barrier` mode these are made durable before `append` returns: the header
# (the session exists), a dispatch (write-ahead: the tool runs after it), and
# a turn end (the answer the user saw is on disk).
_BARRIER_TYPES: Final = (ev.Session, ev.ToolDispatch, ev.TurnEnd)


def must_sync(mode: str, data: EventData) -> bool:
    """The one home of the durability rule: is this payload durable before
    `append` returns, in this mode?"""
    return mode == "always" or (mode == "barrier" and isinstance(data, _BARRIER_TYPES))


def check_durability(durability: str) -> None:
    if durability not in DURABILITY_MODES:
        raise UsageError(
            f"durability must be one of {', '.join(DURABILITY_MODES)}, not {durability!r}"
        )
