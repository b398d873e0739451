"""The in-memory store: the contract's reference implementation, for tests and embedding."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable, Sequence

from turnlog.core.tail import Tail
from turnlog.errors import (
    SeqConflictError,
    SessionExistsError,
    SessionNotFoundError,
    UsageError,
)
from turnlog.events import Event, encode_event
from turnlog.stores import holders
from turnlog.stores.base import (
    Holder,
    Store,
    StoreWriter,
    check_contiguous,
    first_of_session,
    validate_check,
    validate_header,
    validate_session_id,
)


class _MemoryWriter(StoreWriter):
    """The session's list of events, and how to give its lock back."""

    unsynced_append_waits = False

    def __init__(
        self, log: list[Event], release: Callable[[], None], *, tail: Tail | None = None
    ) -> None:
        super().__init__(tail=tail)
        self._log = log
        self._release = release
        self._closed = False

    @property
    def next_seq(self) -> int:
        return len(self._log)

    def append(self, events: Sequence[Event], *, expected_seq: int, sync: bool) -> None:
        if self._closed:
            raise UsageError("append on a closed writer")
        log = self._log
        if expected_seq != len(log):
            raise SeqConflictError(
                f"expected next seq {expected_seq}, the session's next seq is {len(log)}",
                expected=expected_seq,
                actual=len(log),
            )
        check_contiguous(events, expected_seq)
        for event in events:
            # The same bounds a persistent store applies to the same record.
            encode_event(event)
        log.extend(events)

    def sync(self) -> None:
        pass

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self.release_hold()
            self._release()


class MemoryStore(Store):
    """Sessions in a dict. Thread-safe for one writer per session."""

    url = "memory:"

    def __init__(self) -> None:
        self._sessions: dict[str, list[Event]] = {}
        self._locked: set[str] = set()
        self._mutex = threading.Lock()

    def create(self, header: Event) -> StoreWriter:
        session_id = validate_header(header)
        site = holders.caller_site()
        with self._mutex:
            if session_id in self._sessions:
                raise SessionExistsError(f"session {session_id!r} already exists")
            self._sessions[session_id] = [header]
            self._locked.add(session_id)
        writer = _MemoryWriter(self._sessions[session_id], self._releaser(session_id))
        return writer.hold(self._held_key(session_id), site)

    def write_session(self, events: Iterable[Event]) -> int:
        """Atomic: every event is checked before the session appears."""
        stream = iter(events)
        header, session_id = first_of_session(stream)
        log = [header, *stream]
        check_contiguous(log, 0)
        for event in log:
            encode_event(event)
        with self._mutex:
            if session_id in self._sessions:
                raise SessionExistsError(f"session {session_id!r} already exists")
            self._sessions[session_id] = log
        return len(log)

    def _held_key(self, session_id: str) -> tuple[str, int, str]:
        return ("memory", id(self), session_id)

    def _releaser(self, session_id: str) -> Callable[[], None]:
        def release() -> None:
            with self._mutex:
                self._locked.discard(session_id)

        return release

    def writer(self, session_id: str, *, force: bool = False, check: str = "full") -> StoreWriter:
        validate_session_id(session_id)
        validate_check(check)
        site = None if force else holders.caller_site()
        with self._mutex:
            if session_id not in self._sessions:
                raise SessionNotFoundError(f"no session {session_id!r} in {self.url}")
            if session_id in self._locked and not force:
                # A memory store lives in one process: its writer is always ours.
                _, held_at = holders.held_here(self._held_key(session_id))
                raise holders.held_here_error(session_id, self.url, held_at)
            self._locked.add(session_id)
        # Nothing in memory can be damaged: both checks read what they must
        # hand back, the tail for `check="tail"`.
        tail = self.read_tail(session_id) if check == "tail" else None
        writer = _MemoryWriter(self._sessions[session_id], self._releaser(session_id), tail=tail)
        return writer if force else writer.hold(self._held_key(session_id), site)

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
