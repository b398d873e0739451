"""Revive a crashed run as itself: recover, mark the revival, tell the model."""

from __future__ import annotations

from typing import Final

import msgspec

from turnlog import events as ev
from turnlog.errors import UsageError
from turnlog.events import Origin
from turnlog.fold import Message
from turnlog.log import Log
from turnlog.recovery import Plan
from turnlog.triage import DEFAULT_MAX_REVIVALS

REVIVAL_NOTICE: Final = (
    "[turnlog] The previous process running this conversation ended in the middle of its "
    "work (revival {revival}). Everything above is your own conversation so far. Tool "
    "calls that were in flight have results saying what is known about them: a call "
    "marked as not started did not run; a call whose outcome is unknown may have run, so "
    "check the state it was changing before you retry it. Work that was unfinished is "
    "still unfinished: carry on from where you stopped."
)


class Revival(msgspec.Struct, frozen=True, kw_only=True):
    """What a loop needs to carry on as the same agent, or why it may not."""

    revived: bool
    reason: str
    revival: int
    repairs: Plan | None = None
    messages: tuple[Message, ...] = ()
    agent: ev.Agent | None = None


def revive(log: Log, *, max_revivals: int = DEFAULT_MAX_REVIVALS) -> Revival:
    """Recover, then record the revival and tell the model what happened.

    The cap is counted from the log, so it survives the process; past it,
    or for a finished session, nothing is written. Tool calls are never
    replayed: the owed ones get their recovery results and the model decides.
    """
    if max_revivals < 0:
        raise UsageError(f"max_revivals must be >= 0, not {max_revivals}")
    found = log.verdict()
    if max_revivals == 0:
        return Revival(revived=False, reason="revival_disabled", revival=found.revivals)
    if found.empty:
        return Revival(revived=False, reason="empty", revival=found.revivals)
    if found.finished:
        return Revival(revived=False, reason="finished", revival=found.revivals)
    if found.revivals >= max_revivals:
        return Revival(revived=False, reason="revival_cap", revival=found.revivals)
    repairs = log.recover()
    number = found.revivals + 1
    header = found.session
    agent = header.agent if header is not None else None
    log.append_many(
        [
            ev.RunRevived(revival=number, agent_id=agent.id if agent else None),
            ev.UserMessage(content=REVIVAL_NOTICE.format(revival=number), injected="revival"),
        ],
        origin=Origin.REVIVAL.value,
        sync=True,
    )
    return Revival(
        revived=True,
        reason="revived",
        revival=number,
        repairs=repairs,
        messages=log.messages,
        agent=agent,
    )
