"""What a reader found wrong in a stored session: torn tails and located problems."""

from __future__ import annotations

import msgspec

from turnlog.events import Event


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


class Scan(msgspec.Struct, kw_only=True):
    """A full forward read of a stored session: its valid prefix and every problem.

    `refusal` is the first problem that makes a writer refuse the session:
    damage before a later valid record (no crash writes that), or a complete
    record that cannot be understood. A torn tail alone is not a refusal.
    """

    events: list[Event]
    problems: list[Problem]
    torn: TornTail | None = None
    refusal: Problem | None = None
    # "corrupt" (damage before a later valid record, or seqs out of order) or
    # "unreadable" (a complete record this turnlog cannot understand).
    refusal_kind: str | None = None
    # Lines of valid records that carry no checksum (hand-made sessions).
    lines_without_crc: list[int] = msgspec.field(default_factory=list)
    # Bytes of a record a live writer was still appending when the read began.
    in_flight_bytes: int = 0

    @property
    def corrupt(self) -> bool:
        """True when a writer refuses the session (see `refusal`)."""
        return self.refusal is not None
