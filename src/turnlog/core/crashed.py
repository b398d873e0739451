"""A handle on a crashed session: what it may write before it is recovered."""

from __future__ import annotations

from typing import Final

from turnlog import events as ev
from turnlog.errors import SessionInterruptedError
from turnlog.events import EventData, Origin

# What a handle opened on a crashed session may write before it is recovered:
# turnlog's own repairs, each of the kinds it writes (recovery closes the turn;
# a tree revival answers waits on subagents that finished).
_REPAIRS: Final = {
    Origin.RECOVERY.value: (ev.ToolResult, ev.StepEnd, ev.TurnEnd),
    Origin.REVIVAL.value: (ev.ToolResult, ev.SubagentSettled),
}


def is_repair(data: EventData, origin: str | None) -> bool:
    """True for the repairs a crashed session accepts before its recovery."""
    return origin in _REPAIRS and isinstance(data, _REPAIRS[origin])


def crashed_error(
    session_id: str, where: str, owner: ev.EngineRun | None = None
) -> SessionInterruptedError:
    """The refusal of any other write: it would land inside the dead turn.
    `owner` is the engine run whose turn it is, when another run writes."""
    if owner is not None:
        return SessionInterruptedError(
            f"session {session_id!r} has a turn open for {owner.engine} run "
            f"{owner.run_id!r}, which crashed; another run may not write into it",
            hint=f"let {owner.engine} run {owner.run_id!r} again (its retry or recovery "
            f"carries the turn on), or, if it gave the run up, run `turnlog recover {where}`",
        )
    return SessionInterruptedError(
        f"session {session_id!r} crashed mid-turn; nothing may be written into "
        "that turn before it is recovered",
        hint=f"call `log.recover()` (or `turnlog.revive(log)`), open it with "
        f"`turnlog.open(..., recover=True)`, or run `turnlog recover {where}`",
    )
