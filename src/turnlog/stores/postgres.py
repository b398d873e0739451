"""The PostgreSQL store: sessions shared by a fleet of workers, liveness by advisory lock."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Final

from turnlog.core.tail import Tail
from turnlog.errors import (
    LogPoisonedError,
    SessionExistsError,
    SessionLockedError,
    StoreIOError,
    TurnlogError,
    UsageError,
)
from turnlog.events import Event
from turnlog.stores import holders
from turnlog.stores.base import (
    Holder,
    StoreWriter,
    check_contiguous,
    open_turn_change,
    seq_conflict,
    validate_session_id,
)
from turnlog.stores.locks import retry_lock
from turnlog.stores.postgres_url import SCHEMA_NAME, redact_dsn, split_url
from turnlog.stores.record import encode_line
from turnlog.stores.rows import decode_row
from turnlog.stores.sql import SQLStore

if TYPE_CHECKING:
    import psycopg

SCHEMA_VERSION: Final = 1
# Rows fetched per round trip when a session is streamed.
PAGE_EVENTS: Final = 1000

# Every row carries its tenant, the role that wrote it; with row-level
# security forced, a role sees, counts, appends to and sweeps only its own
# sessions (a superuser, or a role with BYPASSRLS, sees all).
_SCHEMA: Final = (
    "CREATE TABLE IF NOT EXISTS turnlog_schema_version (version integer NOT NULL)",
    """CREATE TABLE IF NOT EXISTS turnlog_sessions (
        tenant text NOT NULL DEFAULT current_user,
        session_id text NOT NULL,
        next_seq bigint NOT NULL,
        open_turn_seq bigint,
        revivals integer NOT NULL DEFAULT 0,
        last_ts text,
        PRIMARY KEY (tenant, session_id)
    )""",
    """CREATE TABLE IF NOT EXISTS turnlog_events (
        tenant text NOT NULL DEFAULT current_user,
        session_id text NOT NULL,
        seq bigint NOT NULL,
        line text NOT NULL,
        record jsonb NOT NULL,
        PRIMARY KEY (tenant, session_id, seq)
    )""",
    "CREATE INDEX IF NOT EXISTS turnlog_sessions_open ON turnlog_sessions (open_turn_seq) "
    "WHERE open_turn_seq IS NOT NULL",
    "ALTER TABLE turnlog_sessions ENABLE ROW LEVEL SECURITY",
    "ALTER TABLE turnlog_sessions FORCE ROW LEVEL SECURITY",
    "ALTER TABLE turnlog_events ENABLE ROW LEVEL SECURITY",
    "ALTER TABLE turnlog_events FORCE ROW LEVEL SECURITY",
)
_POLICIES: Final = (
    ("turnlog_sessions", "turnlog_sessions_tenant"),
    ("turnlog_events", "turnlog_events_tenant"),
)


def _driver() -> Any:
    try:
        import psycopg
    except ImportError:
        raise UsageError(
            "the PostgreSQL store needs psycopg 3",
            hint="pip install 'turnlog[postgres]'",
        ) from None
    return psycopg


def _translate(exc: Exception, action: str, where: str) -> TurnlogError:
    """The one place driver errors of this store become turnlog errors."""
    psycopg = _driver()
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    if isinstance(exc, psycopg.OperationalError):
        return StoreIOError(
            f"{action} {where}: {text}",
            hint="is the PostgreSQL server running, and does the URL name it and a database?",
        )
    if isinstance(exc, psycopg.errors.InsufficientPrivilege):
        return StoreIOError(f"{action} {where}: {text}", hint="the role lacks a privilege")
    return StoreIOError(f"{action} {where}: {text}")


# An append that holds a turn boundary or a revival moves the session's tail
# facts and inserts its events in one statement; the events' primary key
# refuses a seq already taken, and the whole statement with it. The sessions
# row's `next_seq`, `revivals` and `last_ts` were kept by earlier versions and
# never read: they stay in the schema (version 1, shared by databases of every
# version) and are no longer written; the events are the truth for the next seq.
_MOVE: Final = """
WITH moved AS (
    UPDATE turnlog_sessions
    SET open_turn_seq = CASE WHEN %s THEN %s ELSE open_turn_seq END
    WHERE tenant = current_user AND session_id = %s
    RETURNING session_id
)"""
# A batch: its events as arrays; returns how many were inserted.
_APPEND: Final = (
    _MOVE
    + """, added AS (
    INSERT INTO turnlog_events (session_id, seq, line, record)
    SELECT moved.session_id, batch.seq, batch.line, batch.record::jsonb
    FROM moved, unnest(%s::bigint[], %s::text[], %s::text[]) AS batch (seq, line, record)
    RETURNING 1
)
SELECT count(*) FROM added"""
)
# One event that moves no tail fact, which most appends are: one INSERT,
# the statement a bare insert runs.
_INSERT_ONE: Final = (
    "INSERT INTO turnlog_events (session_id, seq, line, record) VALUES (%s, %s, %s, %s::jsonb)"
)


def _record(line: str) -> str:
    """The JSONB copy of a line, for queries: the record without its checksum.
    PostgreSQL's jsonb cannot hold U+0000, so it reads U+2400 there; the line
    itself, which every read uses, keeps the record exactly."""
    return line[: line.rindex(',"crc"')].rstrip("\n").replace("\\u0000", "\\u2400") + "}"


class _PostgresWriter(StoreWriter):
    """One session's writer: a connection of its own, holding the session's
    advisory lock for as long as it lives (the lock dies with it)."""

    def __init__(
        self,
        connection: psycopg.Connection[Any],
        *,
        url: str,
        session_id: str,
        next_seq: int,
        stored_next_seq: Callable[[], int],
        tail: Tail | None = None,
    ) -> None:
        super().__init__(tail=tail)
        self._url = url
        self._session_id = session_id
        self._connection: psycopg.Connection[Any] | None = connection
        self._next_seq = next_seq
        # How to read the stored next seq when another writer (one forced past
        # the lock) took a seq first.
        self._stored_next_seq = stored_next_seq
        self._poisoned: BaseException | None = None
        self._synchronous_commit = "on"

    @property
    def next_seq(self) -> int:
        return self._next_seq

    def append(self, events: Sequence[Event], *, expected_seq: int, sync: bool) -> None:
        connection = self._connection
        if connection is None:
            raise UsageError("append on a closed writer")
        if self._poisoned is not None:
            raise LogPoisonedError(f"an earlier write failed ({self._poisoned})")
        check_contiguous(events, expected_seq)
        if expected_seq != self._next_seq:
            raise seq_conflict(self._session_id, expected_seq, self._next_seq)
        seqs, lines, records = [], [], []
        for event in events:
            line = encode_line(event).decode()
            seqs.append(event.seq)
            lines.append(line)
            records.append(_record(line))
        # The open turn after these events: None when they hold no boundary
        # (the stored one stays), else (the new start seq or NULL,).
        turn_change = open_turn_change(events)
        mode = "on" if sync else "off"
        try:
            if mode != self._synchronous_commit:
                # Off: kept by the server across a client crash, made durable
                # by the next synchronous commit.
                connection.execute(f"SET synchronous_commit = {mode}")
                self._synchronous_commit = mode
            if len(events) == 1 and turn_change is None:
                connection.execute(_INSERT_ONE, (self._session_id, seqs[0], lines[0], records[0]))
            else:
                # One statement, so one round trip and one implicit
                # transaction: the tail facts and the events move together.
                moved = (
                    turn_change is not None,
                    turn_change[0] if turn_change is not None else None,
                    self._session_id,
                )
                row = connection.execute(_APPEND, (*moved, seqs, lines, records)).fetchone()
                if row is None or int(row[0]) != len(events):
                    raise seq_conflict(self._session_id, expected_seq, self._stored_next_seq())
        except TurnlogError:
            raise
        # The driver's classes are looked up only when a statement failed.
        except _driver().errors.UniqueViolation:
            # The seq is taken: another writer (one forced past the lock)
            # appended meanwhile. The statement changed nothing.
            raise seq_conflict(self._session_id, expected_seq, self._stored_next_seq()) from None
        except _driver().Error as exc:
            raise _translate(exc, "append to", self._url) from exc
        self._next_seq = expected_seq + len(events)

    def sync(self) -> None:
        if self._connection is None:
            raise UsageError("sync on a closed writer")
        try:
            # Any synchronous commit flushes the WAL up to it, and with it
            # every earlier asynchronous one.
            with self._connection.transaction():
                self._connection.execute("SET LOCAL synchronous_commit = on")
                self._connection.execute("SELECT txid_current()")
        except _driver().Error as exc:
            raise _translate(exc, "sync", self._url) from exc

    def close(self) -> None:
        connection, self._connection = self._connection, None
        if connection is None:
            return
        self.release_hold()
        try:
            # Released here, not when the server notices the connection is
            # gone (a backend exits asynchronously after the client closes).
            if not connection.closed and not connection.broken:
                connection.execute("SELECT pg_advisory_unlock_all()")
        except _driver().Error:
            pass  # the lock ends with the connection anyway
        finally:
            connection.close()


class PostgresStore(SQLStore):
    """Sessions in PostgreSQL tables (`turnlog_sessions`, `turnlog_events`), in
    `schema` (default `public`). Each writer holds a session-scoped advisory
    lock keyed on its tenant and session id: a killed worker's lock goes with
    its connection, so any worker can tell a crashed session from a live one."""

    def __init__(self, dsn: str, *, schema: str = "public") -> None:
        _driver()
        if SCHEMA_NAME.fullmatch(schema) is None:
            raise UsageError(f"schema name {schema!r} is not allowed")
        self.dsn = dsn
        self.schema = schema
        self.url = redact_dsn(dsn, schema=schema)
        super().__init__()
        self._initialized = False

    # -- connections ---------------------------------------------------------------

    def _open(self) -> psycopg.Connection[Any]:
        psycopg = _driver()
        try:
            connection = psycopg.connect(self.dsn, autocommit=True)
            connection.execute("SELECT set_config('search_path', %s, false)", (self.schema,))
        except psycopg.Error as exc:
            raise _translate(exc, "connect to", self.url) from exc
        return connection  # type: ignore[no-any-return]

    def _connect(self) -> psycopg.Connection[Any]:
        connection = self._open()
        if not self._initialized:
            try:
                self._init_schema(connection)
            except TurnlogError:
                connection.close()
                raise
            except _driver().Error as exc:
                connection.close()
                raise _translate(exc, "connect to", self.url) from exc
        return connection

    def present(self) -> bool:
        """Whether turnlog's tables are there, looked up without creating them."""
        if self._initialized:
            return True
        connection = self._open()
        try:
            row = connection.execute(
                "SELECT to_regclass('turnlog_schema_version') IS NOT NULL"
            ).fetchone()
        except _driver().Error as exc:
            raise _translate(exc, "connect to", self.url) from exc
        finally:
            connection.close()
        return bool(row and row[0])

    def _init_schema(self, connection: psycopg.Connection[Any]) -> None:
        with connection.transaction():
            # One initializer at a time across the fleet.
            connection.execute("SELECT pg_advisory_xact_lock(hashtext('turnlog schema'))")
            present = connection.execute(
                "SELECT 1 FROM pg_namespace WHERE nspname = %s", (self.schema,)
            ).fetchone()
            if present is None:
                # Only when missing: creating needs a privilege a tenant role lacks.
                connection.execute(f'CREATE SCHEMA "{self.schema}"')
            exists = connection.execute(
                "SELECT to_regclass('turnlog_schema_version') IS NOT NULL"
            ).fetchone()
            if not (exists and exists[0]):
                for statement in _SCHEMA:
                    connection.execute(statement)
                for table, policy in _POLICIES:
                    connection.execute(
                        f"CREATE POLICY {policy} ON {table} "
                        "USING (tenant = current_user) WITH CHECK (tenant = current_user)"
                    )
                connection.execute(
                    "INSERT INTO turnlog_schema_version VALUES (%s)", (SCHEMA_VERSION,)
                )
            row = connection.execute("SELECT max(version) FROM turnlog_schema_version").fetchone()
            if row is not None and row[0] is not None and row[0] > SCHEMA_VERSION:
                raise UsageError(
                    f"{self.url} has schema version {row[0]}; this turnlog knows {SCHEMA_VERSION}",
                    hint="the database was made by a newer turnlog: upgrade turnlog",
                )
        self._initialized = True

    def _driver_errors(self) -> type[Exception]:
        return _driver().Error  # type: ignore[no-any-return]

    def _translate(self, exc: Exception, action: str) -> TurnlogError:
        return _translate(exc, action, self.url)

    # -- locks ---------------------------------------------------------------------

    # Keyed on the role, the schema and the session id: the same id in another
    # schema or for another tenant is another session.
    _LOCK_KEY: Final = "hashtextextended(current_user || '/' || current_schema() || '/' || %s, 0)"

    def _take_lock(self, session_id: str, *, force: bool) -> psycopg.Connection[Any]:
        connection = self._connect()
        try:
            if not force:

                def try_once() -> bool:
                    got = connection.execute(
                        f"SELECT pg_try_advisory_lock({self._LOCK_KEY})", (session_id,)
                    ).fetchone()
                    return bool(got and got[0])

                retry_lock(try_once, lambda: self._locked(session_id))
        except BaseException:
            connection.close()
            raise
        return connection

    def _locked(self, session_id: str) -> SessionLockedError:
        """The refusal of a writer: this process's own (and where it was
        opened), or another worker's."""
        here, site = holders.held_here(self._held_key(session_id))
        if here:
            return holders.held_here_error(session_id, self.url, site)
        holder = self.lock_holder(session_id)
        where = holder.describe() if holder is not None else "another worker"
        return SessionLockedError(
            f"session {session_id!r} in {self.url} is being written by {where}"
        )

    def _held_key(self, session_id: str, lock: object = None) -> Hashable:
        """The session's lock among this process's writers: the same server,
        role and schema (as the connection string names them) and session."""
        return ("postgresql", self.dsn, self.schema, session_id)

    def lock_holder(self, session_id: str) -> Holder | None:
        validate_session_id(session_id)
        with self._reading() as connection:
            # Shared, so that inspectors never mistake each other for a
            # writer; released on the connection that took it (the lock is
            # the connection's, and a lent connection is used again).
            rows = self._fetch(
                connection, f"SELECT pg_try_advisory_lock_shared({self._LOCK_KEY})", (session_id,)
            )
            if rows and rows[0][0]:
                self._fetch(
                    connection, f"SELECT pg_advisory_unlock_shared({self._LOCK_KEY})", (session_id,)
                )
                return None
        found = self._query(
            "SELECT a.pid, host(a.client_addr), a.backend_start::text FROM pg_locks l "
            "JOIN pg_stat_activity a ON a.pid = l.pid "
            "WHERE l.locktype = 'advisory' AND l.granted AND "
            f"((l.classid::bigint << 32) | l.objid::bigint) = {self._LOCK_KEY} LIMIT 1",
            (session_id,),
        )
        if not found:
            return Holder(detail="an advisory lock held by another session")
        backend, host, since = found[0]
        return Holder(host=host, since=since, detail=f"PostgreSQL backend {backend}")

    # -- writing -------------------------------------------------------------------

    def _lock_session(self, session_id: str, *, force: bool) -> psycopg.Connection[Any]:
        return self._take_lock(session_id, force=force)

    def _release_lock(self, lock: psycopg.Connection[Any]) -> None:
        try:
            # Released here, not when the server notices the connection is
            # gone (a backend exits asynchronously after the client closes).
            if not lock.closed and not lock.broken:
                lock.execute("SELECT pg_advisory_unlock_all()")
        except _driver().Error:
            pass  # the lock ends with the connection anyway
        finally:
            lock.close()

    def _open_writer(
        self, lock: psycopg.Connection[Any], session_id: str, *, next_seq: int, tail: Tail | None
    ) -> StoreWriter:
        return _PostgresWriter(
            lock,
            url=self.url,
            session_id=session_id,
            next_seq=next_seq,
            stored_next_seq=lambda: self._next_seq(session_id),
            tail=tail,
        )

    def _write_whole(
        self,
        lock: psycopg.Connection[Any],
        session_id: str,
        batches: Iterator[list[Event]],
        *,
        action: str,
    ) -> None:
        open_turn: int | None = None
        try:
            with lock.transaction():
                inserted = lock.execute(
                    "INSERT INTO turnlog_sessions (session_id, next_seq) VALUES (%s, 0) "
                    "ON CONFLICT DO NOTHING RETURNING 1",
                    (session_id,),
                ).fetchone()
                if inserted is None:
                    raise SessionExistsError(f"session {session_id!r} already exists in {self.url}")
                with lock.cursor() as cursor:
                    for batch in batches:
                        change = open_turn_change(batch)
                        if change is not None:
                            open_turn = change[0]
                        rows = []
                        for event in batch:
                            line = encode_line(event).decode()
                            rows.append((session_id, event.seq, line, _record(line)))
                        cursor.executemany(_INSERT_ONE, rows)
                if open_turn is not None:
                    lock.execute(
                        "UPDATE turnlog_sessions SET open_turn_seq = %s "
                        "WHERE tenant = current_user AND session_id = %s",
                        (open_turn, session_id),
                    )
        except _driver().Error as exc:
            raise _translate(exc, action, self.url) from exc

    def _next_seq(self, session_id: str) -> int:
        """The seq the next append takes: the events are the truth (the
        sessions row is brought up to date at turn boundaries only)."""
        rows = self._query(
            "SELECT MAX(seq) FROM turnlog_events WHERE tenant = current_user AND session_id = %s",
            (session_id,),
        )
        return int(rows[0][0]) + 1 if rows and rows[0][0] is not None else 0

    # -- reading -------------------------------------------------------------------

    def _page(self, session_id: str, bound: int, *, descending: bool) -> list[tuple[Any, ...]]:
        comparison, order = ("<=", "DESC") if descending else (">=", "ASC")
        return self._query(
            "SELECT seq, line FROM turnlog_events WHERE tenant = current_user AND "
            f"session_id = %s AND seq {comparison} %s ORDER BY seq {order} LIMIT {PAGE_EVENTS}",
            (session_id, bound),
        )

    def _rows(self, session_id: str, *, descending: bool = False) -> Iterator[tuple[int, object]]:
        # A page at a time, each a query of its own: a stream holds no
        # connection between pages.
        bound = 2**62 if descending else 0
        while bound >= 0 and (page := self._page(session_id, bound, descending=descending)):
            for seq, line in page:
                yield int(seq), line
            bound = int(page[-1][0]) + (-1 if descending else 1)

    def read_header(self, session_id: str) -> Event | None:
        rows = self._page(validate_session_id(session_id), 0, descending=False)[:1]
        return decode_row(self.url, session_id, 0, rows[0][1]) if rows and rows[0][0] == 0 else None

    def sessions(self) -> list[str]:
        return [
            str(row[0])
            for row in self._query(
                "SELECT session_id FROM turnlog_sessions WHERE tenant = current_user "
                "ORDER BY session_id"
            )
        ]

    def exists(self, session_id: str) -> bool:
        rows = self._query(
            "SELECT 1 FROM turnlog_sessions WHERE tenant = current_user AND session_id = %s",
            (validate_session_id(session_id),),
        )
        return bool(rows)

    def sweep_candidates(self) -> list[str]:
        """Sessions whose tail facts show an open turn: an index look-up."""
        return [
            str(row[0])
            for row in self._query(
                "SELECT session_id FROM turnlog_sessions WHERE tenant = current_user "
                "AND open_turn_seq IS NOT NULL ORDER BY session_id"
            )
        ]


def store_from_url(url: str) -> PostgresStore:
    """`postgresql://user:pass@host:port/db[?schema=NAME]`: the schema is
    turnlog's own parameter; everything else goes to libpq as it is."""
    dsn, schema = split_url(url)
    return PostgresStore(dsn, schema=schema)
