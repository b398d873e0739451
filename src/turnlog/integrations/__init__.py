"""turnlog under agent frameworks: one module per framework, imported only when used."""

from __future__ import annotations

from turnlog.errors import SessionInterruptedError
from turnlog.log import Log


def refuse_interrupted(log: Log) -> None:
    """A framework run must not start inside a crashed turn: its owed calls
    would stay owed under the new run's messages. Recovery answers them first.

    A turn left open with nothing owed (a run that stopped between steps, or
    a LangGraph run whose `finish` was not called) claims nothing about any
    call: it is closed here as `interrupted`, as recovery would close it.
    """
    found = log.verdict()
    if found.open_turn is not None and not found.owed:
        log.recover()
    elif found.open_turn is not None:
        owed = ", ".join(call.call_id for call in found.owed)
        raise SessionInterruptedError(
            f"session {log.session_id!r} was interrupted mid-turn (owed: {owed}); "
            "a new run would start inside that turn",
            hint=f"run `turnlog recover {log.store.location(log.session_id) or log.session_id}` "
            "(or turnlog.recover / turnlog.revive) first, then resume on the same session",
        )
