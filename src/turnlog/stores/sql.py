"""What the SQL stores share: reading connections lent to any thread, queries with their
driver's errors translated, and streaming reads whose rows are checked as one rule says."""

from __future__ import annotations

import abc
import itertools
import threading
from collections.abc import Hashable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any, Final

from turnlog.core.tail import Tail
from turnlog.errors import SessionNotFoundError, TurnlogError, UsageError
from turnlog.events import Event
from turnlog.stores import holders
from turnlog.stores.base import (
    Store,
    StoreWriter,
    batched,
    check_contiguous,
    first_of_session,
    validate_check,
    validate_header,
)
from turnlog.stores.rows import decode_row, refuse_gap
from turnlog.stores.skim import SkimHandlers, skim_lines

# Idle reading connections kept for reuse; more than this are closed when
# given back (each is a file handle, or a server backend for PostgreSQL).
MAX_IDLE_READERS: Final = 4


class SQLStore(Store):
    """A store on a database driver. Subclasses say how to connect, which
    exceptions are the driver's, and how those become turnlog errors."""

    def __init__(self) -> None:
        # Reading connections are lent, not bound to a thread: any thread may
        # borrow an idle one (asyncio moves work between executor threads, and
        # a stream may be read on another thread than the one that started
        # it), no two threads ever use one at the same time, and `close`
        # closes them all, whichever thread opened them. A writer always has
        # a connection of its own.
        self._idle: list[Any] = []
        # Bumped by `close`: a connection lent before it is not kept.
        self._generation = 0
        self._pool_mutex = threading.Lock()

    @abc.abstractmethod
    def _connect(self) -> Any:
        """A new connection, usable from any thread, with the schema ready."""

    @abc.abstractmethod
    def _driver_errors(self) -> type[Exception]:
        """The base class of the driver's errors."""

    @abc.abstractmethod
    def _translate(self, exc: Exception, action: str) -> TurnlogError:
        """The one place this store's driver errors become turnlog errors."""

    @staticmethod
    def _usable(connection: Any) -> bool:
        """False for a connection the driver knows is closed or broken."""
        return not (getattr(connection, "closed", False) or getattr(connection, "broken", False))

    @contextmanager
    def _reading(self) -> Iterator[Any]:
        """A reading connection for this thread, alone, until the block ends.

        Statements that depend on each other (a session-level lock and its
        release) run in one block, on one connection."""
        with self._pool_mutex:
            connection = self._idle.pop() if self._idle else None
            generation = self._generation
        if connection is None or not self._usable(connection):
            connection = self._connect()
        try:
            yield connection
        finally:
            with self._pool_mutex:
                # A connection lent before `close` ran is closed when given
                # back, by the thread that used it, never under its feet.
                keep = (
                    generation == self._generation
                    and self._usable(connection)
                    and len(self._idle) < MAX_IDLE_READERS
                )
                if keep:
                    self._idle.append(connection)
            if not keep:
                connection.close()

    def _fetch(
        self, connection: Any, sql: str, parameters: tuple[object, ...] = ()
    ) -> list[tuple[Any, ...]]:
        try:
            return list(connection.execute(sql, parameters).fetchall())
        except self._driver_errors() as exc:
            raise self._translate(exc, "read") from exc

    def _query(self, sql: str, parameters: tuple[object, ...] = ()) -> list[tuple[Any, ...]]:
        with self._reading() as connection:
            return self._fetch(connection, sql, parameters)

    def init(self) -> None:
        self._query("SELECT 1")

    def close(self) -> None:
        """Close the idle reading connections now and the lent ones when they
        are given back; the store stays usable and connects again on its
        next read."""
        with self._pool_mutex:
            idle, self._idle = self._idle, []
            self._generation += 1
        for connection in idle:
            connection.close()

    # -- writing: the template every SQL backend fills in -------------------------

    def _ready_to_write(self) -> None:
        """Make the store ready for a new session. The default does nothing:
        the connection that takes the lock readies the schema (`_connect`)."""

    @abc.abstractmethod
    def _lock_session(self, session_id: str, *, force: bool) -> Any:
        """Take the session's writer lock (with `force`, only open what holds
        it) and return the handle that keeps it: a lock file, a connection."""

    @abc.abstractmethod
    def _release_lock(self, lock: Any) -> None:
        """Give the lock back (an error path: a writer releases its own)."""

    @abc.abstractmethod
    def _held_key(self, session_id: str, lock: Any) -> Hashable:
        """The lock's key among this process's writers."""

    @abc.abstractmethod
    def _open_writer(
        self, lock: Any, session_id: str, *, next_seq: int, tail: Tail | None
    ) -> StoreWriter:
        """The session's writer, keeping `lock` for its life."""

    @abc.abstractmethod
    def _next_seq(self, session_id: str) -> int:
        """The seq the next append takes: the events are the truth."""

    @abc.abstractmethod
    def _write_whole(
        self, lock: Any, session_id: str, batches: Iterator[list[Event]], *, action: str
    ) -> None:
        """The session row and every batch of events in one transaction;
        `SessionExistsError` when the session is there already. `action`
        words a driver error ("create a session in")."""

    def create(self, header: Event) -> StoreWriter:
        """The session row and its header in one transaction, under the
        session's lock, which the returned writer keeps."""
        session_id = validate_header(header)
        self._ready_to_write()
        site = holders.caller_site()
        lock = self._lock_session(session_id, force=False)
        try:
            self._write_whole(lock, session_id, iter([[header]]), action="create a session in")
            writer = self._open_writer(lock, session_id, next_seq=1, tail=None)
        except BaseException:
            self._release_lock(lock)
            raise
        return writer.hold(self._held_key(session_id, lock), site)

    def writer(self, session_id: str, *, force: bool = False, check: str = "full") -> StoreWriter:
        validate_check(check)
        if not self.exists(session_id):
            raise SessionNotFoundError(f"no session {session_id!r} in {self.url}")
        site = None if force else holders.caller_site()
        lock = self._lock_session(session_id, force=force)
        try:
            # The same checks a JSONL writer makes, on the records it reads:
            # every one, streamed, or the tail, handed to the writer.
            tail = None
            if check == "full":
                for _ in self.iter_events(session_id):
                    pass
            else:
                tail = self.read_tail(session_id)
            next_seq = self._next_seq(session_id)
            writer = self._open_writer(lock, session_id, next_seq=next_seq, tail=tail)
        except BaseException:
            self._release_lock(lock)
            raise
        # A forced writer holds no lock: nothing to record.
        return writer if force else writer.hold(self._held_key(session_id, lock), site)

    def write_session(self, events: Iterable[Event]) -> int:
        """The whole session in one transaction, under the session's lock: it
        appears whole or not at all."""
        stream = iter(events)
        header, session_id = first_of_session(stream)
        self._ready_to_write()
        count = 0

        def checked() -> Iterator[list[Event]]:
            nonlocal count
            for batch in batched(itertools.chain((header,), stream)):
                check_contiguous(batch, count)
                count += len(batch)
                yield batch

        lock = self._lock_session(session_id, force=False)
        try:
            self._write_whole(lock, session_id, checked(), action="write a session to")
        finally:
            self._release_lock(lock)
        return count

    # -- reading ---------------------------------------------------------------------

    @abc.abstractmethod
    def _rows(self, session_id: str, *, descending: bool = False) -> Iterator[tuple[int, object]]:
        """(seq, line) of every stored event of the session, in seq order."""

    def iter_events(self, session_id: str) -> Iterator[Event]:
        if not self.exists(session_id):
            raise SessionNotFoundError(f"no session {session_id!r} in {self.url}")
        for expected, (seq, line) in enumerate(self._rows(session_id)):
            if seq != expected:
                refuse_gap(self.url, session_id, expected, seq)
            yield decode_row(self.url, session_id, seq, line)

    def skim(
        self, session_id: str, handlers: SkimHandlers, *, index: str | None = None
    ) -> int | None:
        if not self.exists(session_id):
            raise SessionNotFoundError(f"no session {session_id!r} in {self.url}")
        return skim_lines(_row_lines(self._rows(session_id)), handlers)

    def iter_newest_first(self, session_id: str) -> Iterator[Event]:
        expected: int | None = None
        for seq, line in self._rows(session_id, descending=True):
            if expected is not None and seq != expected:
                refuse_gap(self.url, session_id, expected, seq)
            yield decode_row(self.url, session_id, seq, line)
            expected = seq - 1

    def read(self, session_id: str, from_seq: int = 0) -> list[Event]:
        if from_seq < 0:
            raise UsageError(f"from_seq must be >= 0, not {from_seq}")
        return list(self.iter_events(session_id))[from_seq:]


def _row_lines(rows: Iterable[tuple[int, object]]) -> Iterator[bytes]:
    """Each row's line, as `skim_lines` takes it; an empty line (which it
    refuses) for a row whose seq is out of order or whose line is no bytes."""
    for expected, (seq, line) in enumerate(rows):
        if isinstance(line, str):
            line = line.encode("utf-8", "surrogateescape")  # a text column
        if seq != expected or not isinstance(line, bytes):
            yield b""
            return
        yield line[:-1] if line[-1:] == b"\n" else line
