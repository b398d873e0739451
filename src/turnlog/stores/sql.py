"""What the SQL stores share: reading connections lent to any thread, queries with their
driver's errors translated, and streaming reads whose rows are checked as one rule says."""

from __future__ import annotations

import abc
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Final

from turnlog.errors import SessionNotFoundError, TurnlogError, UsageError
from turnlog.events import Event
from turnlog.stores.base import Store
from turnlog.stores.rows import decode_row, refuse_gap

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
