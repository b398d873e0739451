"""The in-memory store: the contract's reference implementation, for tests and embedding."""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence

from turnlog.errors import (
    SeqConflictError,
    SessionExistsError,
    SessionNotFoundError,
    UsageError,
)
from turnlog.events import Event, encode_event
from turnlog.stores import holders
from turnlog.stores.base import Holder, Store, StoreWriter, validate_session_id


class _MemoryWriter(StoreWriter):
    def __init__(self, store: MemoryStore, session_id: str) -> None:
        self._store = store
        self._session_id = session_id
        self._closed = False

    @property
    def next_seq(self) -> int:
        return len(self._store._sessions[self._session_id])

    def append(self, events: Sequence[Event], *, expected_seq: int, sync: bool) -> None:
        if self._closed:
            raise UsageError("append on a closed writer")
        log = self._store._sessions[self._session_id]
        if expected_seq != len(log):
            raise SeqConflictError(
                f"expected next seq {expected_seq}, the session's next seq is {len(log)}",
                expected=expected_seq,
                actual=len(log),
            )
        for offset, event in enumerate(events):
            if event.seq != expected_seq + offset:
                raise UsageError(
                    f"events must be contiguous: got seq {event.seq}, "
                    f"expected {expected_seq + offset}"
                )
            # The same bounds a persistent store applies to the same record.
            encode_event(event)
        log.extend(events)

    def sync(self) -> None:
        pass

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            holders.release(self._store._held_key(self._session_id), self)
            with self._store._mutex:
                self._store._locked.discard(self._session_id)


class MemoryStore(Store):
    """Sessions in a dict. Thread-safe for one writer per session."""

    url = "memory:"

    def __init__(self) -> None:
        self._sessions: dict[str, list[Event]] = {}
        self._locked: set[str] = set()
        self._mutex = threading.Lock()

    def create(self, header: Event) -> StoreWriter:
        session_id = validate_session_id(getattr(header.data, "session_id", None))
        if header.seq != 0:
            raise UsageError(f"a session header is seq 0, not {header.seq}")
        site = holders.caller_site()
        with self._mutex:
            if session_id in self._sessions:
                raise SessionExistsError(f"session {session_id!r} already exists")
            self._sessions[session_id] = [header]
            self._locked.add(session_id)
        return self._hold(_MemoryWriter(self, session_id), site)

    def _held_key(self, session_id: str) -> tuple[str, int, str]:
        return ("memory", id(self), session_id)

    def _hold(self, writer: _MemoryWriter, site: str | None) -> _MemoryWriter:
        holders.hold(self._held_key(writer._session_id), writer, site)
        return writer

    def writer(self, session_id: str, *, force: bool = False, check: str = "full") -> StoreWriter:
        validate_session_id(session_id)
        site = None if force else holders.caller_site()
        with self._mutex:
            if session_id not in self._sessions:
                raise SessionNotFoundError(f"no session {session_id!r} in {self.url}")
            if session_id in self._locked and not force:
                # A memory store lives in one process: its writer is always ours.
                _, held_at = holders.held_here(self._held_key(session_id))
                raise holders.held_here_error(session_id, self.url, held_at)
            self._locked.add(session_id)
        writer = _MemoryWriter(self, session_id)
        return writer if force else self._hold(writer, site)

    def read(self, session_id: str, from_seq: int = 0) -> list[Event]:
        validate_session_id(session_id)
        if from_seq < 0:
            raise UsageError(f"from_seq must be >= 0, not {from_seq}")
        try:
            return list(self._sessions[session_id][from_seq:])
        except KeyError:
            raise SessionNotFoundError(f"no session {session_id!r} in {self.url}") from None

    def sessions(self) -> list[str]:
        return sorted(self._sessions)

    def exists(self, session_id: str) -> bool:
        return validate_session_id(session_id) in self._sessions

    def lock_holder(self, session_id: str) -> Holder | None:
        return Holder(pid=os.getpid()) if session_id in self._locked else None
