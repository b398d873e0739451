"""What a reader found wrong in a stored session: torn tails and located problems."""

from __future__ import annotations

import msgspec


class TornTail(msgspec.Struct, frozen=True, kw_only=True):
    """Bytes after the last whole record: a crash artifact, moved aside, never lost."""

    offset: int
    size_bytes: int
    # Where the bytes were moved, once a writer or recovery quarantined them.
    sidecar: str | None = None


class Problem(msgspec.Struct, frozen=True, kw_only=True):
    """One thing wrong with a stored session, located as precisely as the store can."""

    message: str
    line: int | None = None
    offset: int | None = None
