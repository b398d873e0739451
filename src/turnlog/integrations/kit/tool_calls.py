"""What a user declared about a tool, and the calls a framework runs itself
dispatched ahead of it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from turnlog import events as ev
from turnlog.events import check_idempotency
from turnlog.handle.log import Log


def check_idempotency_map(mapping: Mapping[str, str] | None) -> dict[str, str]:
    """A tool-name → idempotency mapping, every value checked."""
    return {name: check_idempotency(value, tool=name) for name, value in (mapping or {}).items()}


def tool_idempotency(
    name: str | None, declared: Mapping[str, str], metadata: Mapping[str, Any] | None = None
) -> str | None:
    """What the user declared about a tool: the integration's mapping first,
    then the tool's own metadata (`{"idempotency": ...}`), else nothing."""
    if name is not None and name in declared:
        return declared[name]
    if metadata and "idempotency" in metadata:
        return check_idempotency(metadata["idempotency"], tool=name)
    return None


@dataclass(frozen=True)
class AheadCall:
    """A call the framework runs itself, to be dispatched ahead of it."""

    call_id: str
    name: str | None
    idempotency: str | None = None


def dispatch_ahead(log: Log, calls: Sequence[AheadCall]) -> list[str]:
    """Write a durable `tool_dispatch` for each call the framework runs itself
    (an output function, a handoff), before it can run: such a call has no
    tool hook of its own, and an undispatched call in a turn that dispatched
    others reads "did not run" after a crash (rule R2), which is false for
    code that ran. A dispatch makes it "may have run" (R1), and its answer is
    then recorded as any dispatched call's. Only a call the open turn asked
    for and has neither dispatched nor answered is written, so calling this
    again for the same call (a hook that fires per validation) writes nothing.
    Returns the ids written."""
    with log.lock:
        turn = log.open_turn
        if turn is None:
            return []
        waiting = {
            call.call_id
            for call in turn.calls
            if call.requested and not call.answered and call.dispatch is None
        }
        ahead = []
        for call in calls:
            if call.call_id in waiting:
                waiting.discard(call.call_id)
                ahead.append(call)
        if not ahead:
            return []
        log.append_many(
            [
                ev.ToolDispatch(call_id=call.call_id, name=call.name, idempotency=call.idempotency)
                for call in ahead
            ],
            sync=True,
        )
        return [call.call_id for call in ahead]
