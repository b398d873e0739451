"""A call a framework stops on, held as a turnlog pause."""

from __future__ import annotations

from typing import Any

from turnlog.core.pauses import awaiting_call
from turnlog.handle.log import Log

# A pause's prompt, as a framework's call shows it: at most this long.
PAUSE_PROMPT_MAX = 4096


def call_prompt(name: str, args: Any) -> str:
    """What a person deciding a paused call is shown: the call, its arguments."""
    from turnlog.text import foreign_text

    shown = args if isinstance(args, dict) else foreign_text(args)
    return f"{name}({shown})"[:PAUSE_PROMPT_MAX]


def hold_call(
    log: Log, call_id: str, *, kind: str, decided_in: str, prompt: str | None = None
) -> bool:
    """Pause a call the open turn asked for and has neither dispatched,
    answered nor paused (synced). False when it is not one to pause: paused
    before, or already started or answered (a resumed step)."""
    with log.lock:
        if awaiting_call(log.awaiting, call_id) is not None:
            return False
        turn = log.open_turn
        call = next((c for c in turn.calls if c.call_id == call_id), None) if turn else None
        if call is None or call.dispatch is not None or call.answered:
            return False
        log.pause(call_id, kind=kind, decided_in=decided_in, prompt=prompt)
        return True
