"""The SQLite store: many sessions in one file, each event's checksummed line kept as written."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable, Hashable, Iterator, Sequence
from typing import Final

from turnlog.core.tail import Tail
from turnlog.errors import (
    LogPoisonedError,
    SessionExistsError,
    SessionLockedError,
    StoreIOError,
    StoreNotFoundError,
    TurnlogError,
    UsageError,
)
from turnlog.events import Event
from turnlog.stores import holders
from turnlog.stores.base import (
    TAIL_FACT_TYPES,
    Holder,
    StoreWriter,
    check_contiguous,
    open_turn_change,
    seq_conflict,
    validate_session_id,
)
from turnlog.stores.locks import flock_holder, lock_pid, retry_lock, try_flock
from turnlog.stores.record import encode_line
from turnlog.stores.rows import decode_row
from turnlog.stores.sql import SQLStore
from turnlog.stores.sqlite_file import BUSY_TIMEOUT_MS, PROVING, probe, translate

SCHEMA_VERSION: Final = 1

_SCHEMA: Final = (
    "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)",
    # The open turn, kept in the same transaction as the events that move it,
    # so "every session with an open turn" is an index look-up. `next_seq`,
    # `revivals` and `last_ts` were kept by earlier versions and never read:
    # they stay, so databases of every version share one schema (version 1)
    # and stay readable both ways, and are no longer written (a new session's
    # `next_seq` is 0; the events are the truth for it).
    """CREATE TABLE IF NOT EXISTS sessions (
        session_id TEXT PRIMARY KEY,
        next_seq INTEGER NOT NULL,
        open_turn_seq INTEGER,
        revivals INTEGER NOT NULL DEFAULT 0,
        last_ts TEXT
    )""",
    """CREATE TABLE IF NOT EXISTS events (
        session_id TEXT NOT NULL,
        seq INTEGER NOT NULL,
        line BLOB NOT NULL,
        PRIMARY KEY (session_id, seq)
    ) WITHOUT ROWID""",
    "CREATE INDEX IF NOT EXISTS sessions_open ON sessions (open_turn_seq) "
    "WHERE open_turn_seq IS NOT NULL",
)


_INSERT: Final = "INSERT INTO events (session_id, seq, line) VALUES (?, ?, ?)"


class _SQLiteWriter(StoreWriter):
    """One session's writer: its own connection and the session's lock file.

    It is given what it writes through, not the store: the connection, the
    URL its errors name, and how to read the stored next seq when another
    writer (one forced past the lock) took a seq first."""

    def __init__(
        self,
        connection: sqlite3.Connection,
        *,
        url: str,
        session_id: str,
        lock_fd: int,
        next_seq: int,
        stored_next_seq: Callable[[], int],
        tail: Tail | None = None,
    ) -> None:
        super().__init__(tail=tail)
        self._connection = connection
        self._url = url
        self._session_id = session_id
        self._lock_fd: int | None = lock_fd
        self._next_seq = next_seq
        self._stored_next_seq = stored_next_seq
        # The connection's `synchronous` setting, set on the first append.
        self._synchronous: str | None = None
        self._poisoned: BaseException | None = None

    @property
    def next_seq(self) -> int:
        return self._next_seq

    def append_one(self, event: Event, sync: bool) -> None:
        # The hot path: one event that moves no tail fact is one INSERT in
        # autocommit, with no batch machinery around it. Every other case
        # (a boundary, a revival, a closed or poisoned writer, a seq conflict)
        # takes `append`, which words the errors.
        if (
            type(event.data) in TAIL_FACT_TYPES
            or self._lock_fd is None
            or self._poisoned is not None
            or event.seq != self._next_seq
            or sync != (self._synchronous == "FULL")
        ):
            self.append((event,), expected_seq=event.seq, sync=sync)
            return
        try:
            self._insert_alone((self._session_id, event.seq, encode_line(event)))
        except sqlite3.Error as exc:
            raise translate(exc, "append to", self._url) from exc

    def _insert_alone(self, row: tuple[str, int, bytes]) -> None:
        """One event that moves no tail fact: one INSERT, atomic on its own
        (autocommit), exactly what a bare insert costs. A taken seq (another
        writer forced past the lock appended meanwhile) changes nothing."""
        try:
            self._connection.execute(_INSERT, row)
        except sqlite3.IntegrityError:
            raise seq_conflict(self._session_id, row[1], self._stored_next_seq()) from None
        self._next_seq = row[1] + 1

    def append(self, events: Sequence[Event], *, expected_seq: int, sync: bool) -> None:
        if self._lock_fd is None:
            raise UsageError("append on a closed writer")
        if self._poisoned is not None:
            raise LogPoisonedError(f"an earlier write failed ({self._poisoned})")
        check_contiguous(events, expected_seq)
        rows = [(self._session_id, event.seq, encode_line(event)) for event in events]
        mode = "FULL" if sync else "NORMAL"
        connection = self._connection
        try:
            if mode != self._synchronous:
                connection.execute(f"PRAGMA synchronous={mode}")
                self._synchronous = mode
            if expected_seq != self._next_seq:
                raise seq_conflict(self._session_id, expected_seq, self._next_seq)
            change = open_turn_change(events)
            if len(rows) == 1 and change is None:
                self._insert_alone(rows[0])
                return
            connection.execute("BEGIN IMMEDIATE")
            try:
                if change is not None:
                    # The open turn moves only at a turn boundary: most
                    # appends are one INSERT, the page a bare insert writes.
                    connection.execute(
                        "UPDATE sessions SET open_turn_seq = ? WHERE session_id = ?",
                        (change[0], self._session_id),
                    )
                if len(rows) == 1:
                    connection.execute(_INSERT, rows[0])
                else:
                    connection.executemany(_INSERT, rows)
            except sqlite3.IntegrityError:
                # The seq is taken: another writer (one forced past the lock)
                # appended meanwhile.
                connection.rollback()
                raise seq_conflict(
                    self._session_id, expected_seq, self._stored_next_seq()
                ) from None
            except BaseException:
                connection.rollback()
                raise
            connection.commit()
        except sqlite3.Error as exc:
            raise translate(exc, "append to", self._url) from exc
        self._next_seq = expected_seq + len(events)

    def sync(self) -> None:
        # Commits with synchronous=FULL are durable when they return; one made
        # with NORMAL becomes durable at the next checkpoint or FULL commit.
        if self._lock_fd is None:
            raise UsageError("sync on a closed writer")

    def close(self) -> None:
        fd, self._lock_fd = self._lock_fd, None
        if fd is None:
            return
        try:
            self._connection.close()
        finally:
            self.release_hold()
            os.close(fd)  # releases the session's lock


class SQLiteStore(SQLStore):
    """Sessions in one SQLite database (WAL). Liveness is an OS lock on a small
    file per session beside the database, so it dies with its process."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)
        if "\0" in self.path:
            raise UsageError(f"database path {self.path!r} holds a NUL byte")
        self.url = f"sqlite:///{self.path}"
        super().__init__()
        self._initialized = False

    # -- connections ---------------------------------------------------------------

    def _ready(self, *, create: bool = False) -> bool:
        """True once the database holds turnlog's schema. With `create`, a new
        or empty database is given it; without, nothing is ever created, so a
        read of a mistyped path finds no store rather than making one."""
        if self._initialized:
            return True
        with PROVING:
            if self._initialized:
                return True
            if probe(self.path, self.url) != "ours":
                if not create:
                    return False
                try:
                    # Private by default: SQLite gives its `-wal` and `-shm`
                    # files the database file's mode.
                    os.close(os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o600))
                except OSError as exc:
                    raise StoreIOError(
                        f"create {self.url}: {exc.strerror or exc}", errno=exc.errno
                    ) from exc
            connection = self._open()
            try:
                self._init_schema(connection)
            finally:
                connection.close()
            self._initialized = True
        return True

    def _open(self) -> sqlite3.Connection:
        try:
            # Any thread may use it, one at a time: a writer is made on one
            # thread and used on another (asyncio's writer thread, a tool
            # thread), and reading connections are lent to any thread.
            connection = sqlite3.connect(
                self.path,
                timeout=BUSY_TIMEOUT_MS / 1000,
                isolation_level=None,
                check_same_thread=False,
            )
            connection.execute("PRAGMA journal_mode=WAL")
            connection.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        except sqlite3.Error as exc:
            raise translate(exc, "open", self.url) from exc
        return connection

    def _connect(self) -> sqlite3.Connection:
        if not self._ready():
            raise StoreNotFoundError(
                f"no turnlog store at {self.url}",
                hint=f"check the path; `turnlog store init {self.url}` creates the store",
            )
        return self._open()

    def init(self) -> None:
        self._ready(create=True)

    def _ready_to_write(self) -> None:
        # A lock file is not a connection: the database (and its schema) is
        # made here, in a new or empty file only.
        self._ready(create=True)

    def present(self) -> bool:
        return self._ready()

    def _init_schema(self, connection: sqlite3.Connection) -> None:
        try:
            connection.execute("BEGIN IMMEDIATE")
            try:
                for statement in _SCHEMA:
                    connection.execute(statement)
                row = connection.execute("SELECT max(version) FROM schema_version").fetchone()
                if row[0] is None:
                    connection.execute("INSERT INTO schema_version VALUES (?)", (SCHEMA_VERSION,))
                elif row[0] > SCHEMA_VERSION:
                    raise UsageError(
                        f"{self.url} has schema version {row[0]}; this turnlog knows "
                        f"{SCHEMA_VERSION}",
                        hint="the database was made by a newer turnlog: upgrade turnlog",
                    )
            except BaseException:
                connection.rollback()
                raise
            connection.commit()
        except sqlite3.Error as exc:
            raise translate(exc, "open", self.url) from exc

    def _driver_errors(self) -> type[Exception]:
        return sqlite3.Error

    def _translate(self, exc: Exception, action: str) -> TurnlogError:
        assert isinstance(exc, sqlite3.Error)
        return translate(exc, action, self.url)

    # -- locks ---------------------------------------------------------------------

    @property
    def _locks_dir(self) -> str:
        # Beside the file SQLite opens, whatever path names it: a writer that
        # came through a symbolic link and an inspector that came by the real
        # path must meet on the same lock files.
        return os.path.realpath(self.path) + ".locks"

    def _lock_file(self, session_id: str) -> int:
        os.makedirs(self._locks_dir, mode=0o700, exist_ok=True)
        # A subagent's id holds '/', which no id may hold otherwise: '%' keeps
        # its lock file flat in the folder and its name unique.
        flat = validate_session_id(session_id).replace("/", "%")
        name = os.path.join(self._locks_dir, flat + ".lock")
        return os.open(name, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)

    def _take_lock(self, session_id: str) -> int:
        fd = self._lock_file(session_id)
        try:
            retry_lock(lambda: try_flock(fd), lambda: self._locked(fd, session_id))
        except BaseException:
            os.close(fd)
            raise
        return fd

    def _locked(self, fd: int, session_id: str) -> SessionLockedError:
        """The refusal of a writer: this process's own (and where it was
        opened), or another process's."""
        here, site = holders.held_here(holders.file_key(fd))
        pid = lock_pid(fd)
        if here or pid == os.getpid():
            return holders.held_here_error(session_id, self.url, site)
        holder = f"process {pid}" if pid else "another process"
        return SessionLockedError(
            f"session {session_id!r} in {self.url} is being written by {holder}", pid=pid
        )

    def lock_holder(self, session_id: str) -> Holder | None:
        if not self._ready():
            return None
        fd = self._lock_file(session_id)
        try:
            return flock_holder(fd, detail=f"lock file in {self._locks_dir}")
        finally:
            os.close(fd)

    # -- writing -------------------------------------------------------------------

    def _lock_session(self, session_id: str, *, force: bool) -> int:
        # `force` writes beside a stuck holder: the lock file is opened, not taken.
        return self._lock_file(session_id) if force else self._take_lock(session_id)

    def _release_lock(self, lock: int) -> None:
        os.close(lock)

    def _held_key(self, session_id: str, lock: int) -> Hashable:
        return holders.file_key(lock)

    def _open_writer(
        self, lock: int, session_id: str, *, next_seq: int, tail: Tail | None
    ) -> StoreWriter:
        return _SQLiteWriter(
            self._connect(),
            url=self.url,
            session_id=session_id,
            lock_fd=lock,
            next_seq=next_seq,
            stored_next_seq=lambda: self._next_seq(session_id),
            tail=tail,
        )

    def _write_whole(
        self, lock: int, session_id: str, batches: Iterator[list[Event]], *, action: str
    ) -> None:
        connection = self._open()
        try:
            connection.execute("PRAGMA synchronous=FULL")
            connection.execute("BEGIN IMMEDIATE")
            try:
                self._insert_session(connection, session_id, batches)
            except BaseException:
                connection.rollback()
                raise
            connection.commit()
        except sqlite3.Error as exc:
            raise translate(exc, action, self.url) from exc
        finally:
            connection.close()

    def _insert_session(
        self, connection: sqlite3.Connection, session_id: str, batches: Iterator[list[Event]]
    ) -> None:
        try:
            connection.execute(
                "INSERT INTO sessions (session_id, next_seq) VALUES (?, 0)", (session_id,)
            )
        except sqlite3.IntegrityError:
            raise SessionExistsError(
                f"session {session_id!r} already exists in {self.url}"
            ) from None
        open_turn: int | None = None
        for batch in batches:
            change = open_turn_change(batch)
            if change is not None:
                open_turn = change[0]
            connection.executemany(
                _INSERT, [(session_id, event.seq, encode_line(event)) for event in batch]
            )
        if open_turn is not None:
            connection.execute(
                "UPDATE sessions SET open_turn_seq = ? WHERE session_id = ?",
                (open_turn, session_id),
            )

    def _next_seq(self, session_id: str) -> int:
        """The seq the next append takes: the events are the truth (the
        sessions row is brought up to date at turn boundaries only)."""
        row = self._query("SELECT MAX(seq) FROM events WHERE session_id = ?", (session_id,))
        return int(row[0][0]) + 1 if row and row[0][0] is not None else 0

    # -- reading -------------------------------------------------------------------

    def _rows(self, session_id: str, *, descending: bool = False) -> Iterator[tuple[int, object]]:
        order = "DESC" if descending else "ASC"
        validate_session_id(session_id)
        with self._reading() as connection:
            try:
                cursor = connection.execute(
                    f"SELECT seq, line FROM events WHERE session_id = ? ORDER BY seq {order}",
                    (session_id,),
                )
                try:
                    while batch := cursor.fetchmany(1024):
                        yield from batch
                finally:
                    # An unfinished statement holds its read snapshot: a stream
                    # left early must not hand a stale view to the next reader.
                    cursor.close()
            except sqlite3.Error as exc:
                raise translate(exc, "read", self.url) from exc

    def read_header(self, session_id: str) -> Event | None:
        rows = self._query(
            "SELECT line FROM events WHERE session_id = ? AND seq = 0",
            (validate_session_id(session_id),),
        )
        return decode_row(self.url, session_id, 0, rows[0][0]) if rows else None

    def sessions(self) -> list[str]:
        if not self._ready():
            return []
        return sorted(str(row[0]) for row in self._query("SELECT session_id FROM sessions"))

    def exists(self, session_id: str) -> bool:
        validate_session_id(session_id)
        if not self._ready():
            return False
        rows = self._query(
            "SELECT 1 FROM sessions WHERE session_id = ?", (validate_session_id(session_id),)
        )
        return bool(rows)

    def sweep_candidates(self) -> list[str]:
        """Sessions whose tail facts show an open turn: an index look-up."""
        if not self._ready():
            return []
        return sorted(
            str(row[0])
            for row in self._query(
                "SELECT session_id FROM sessions WHERE open_turn_seq IS NOT NULL"
            )
        )
