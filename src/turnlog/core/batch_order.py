"""A batch's write order: every item checked before any of it is written. Pure."""

from __future__ import annotations

from collections.abc import Sequence

from turnlog.core.fold import Fold
from turnlog.core.write_order import CHECKED_TYPES, order_error
from turnlog.events import Event, EventData


def check_batch(
    fold: Fold,
    items: Sequence[EventData],
    origins: Sequence[str | None],
    allow_undispatched: bool,
) -> None:
    """Refuse a batch any item of which breaks the write order (see
    `turnlog.core.write_order`), before anything is written. Each item is
    checked with its own origin (`origins`, one per item), later ones against
    the state the earlier ones leave, on a scratch fold."""
    later = any(type(data) in CHECKED_TYPES for data in items[1:])
    if not later:
        # Only the first item (if any) depends on the open turn: it is
        # checked against the handle's fold as it is. A revival's marker
        # and notice, or a wait's answer and settlement, cost no copy.
        if items:
            error = order_error(fold, items[0], origins[0], allow_undispatched=allow_undispatched)
            if error is not None:
                raise error
        return
    # A later item depends on what the earlier ones change: a scratch fold.
    scratch = fold.scratch()
    seq = scratch.next_seq
    for data, origin in zip(items, origins, strict=True):
        error = order_error(scratch, data, origin, allow_undispatched=allow_undispatched)
        if error is not None:
            raise error
        scratch.apply(Event(seq=seq, data=data, origin=origin))
        seq += 1
