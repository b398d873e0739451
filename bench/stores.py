"""Store benchmarks: SQLite and PostgreSQL appends against bare driver inserts, loads
against JSONL, and a sweep over a fleet's worth of sessions. Run by bench/run.py."""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
TS = "2026-11-29T12:00:00.000000Z"


@contextlib.contextmanager
def postgres() -> Iterator[str | None]:
    """A server to measure on: $TURNLOG_BENCH_POSTGRES_DSN, or a throwaway
    cluster started the way the tests start theirs; None without binaries."""
    if os.environ.get("TURNLOG_BENCH_POSTGRES_DSN"):
        yield os.environ["TURNLOG_BENCH_POSTGRES_DSN"]
        return
    sys.path.insert(0, str(ROOT / "tests" / "support"))
    from postgres_server import postgres_dsn

    with postgres_dsn() as dsn:
        yield dsn


def paired(subjects: dict[str, Callable[[], Any]], blocks: int, per_block: int) -> dict[str, Any]:
    """Per-op times in blocks, the order rotating; ratios paired by block
    against the first subject (the bare baseline)."""
    names = list(subjects)
    for run in subjects.values():  # warm every subject the same
        for _ in range(per_block):
            run()
    per_op: dict[str, list[float]] = {name: [] for name in names}
    for block in range(blocks):
        shift = block % len(names)
        for name in names[shift:] + names[:shift]:
            run = subjects[name]
            start = time.perf_counter()
            for _ in range(per_block):
                run()
            per_op[name].append((time.perf_counter() - start) / per_block)
    base = names[0]
    ratios = {
        name: [s / b for s, b in zip(per_op[name], per_op[base], strict=True)] for name in names[1:]
    }
    return {"per_op": per_op, "ratios": ratios, "ops": blocks * per_block}


def _line() -> str:
    from turnlog import events as ev
    from turnlog.stores.record import encode_line

    dispatch = ev.ToolDispatch(call_id="call_0123456789abcdef", name="write_file")
    return encode_line(ev.Event(seq=2, data=dispatch, ts=TS)).decode()


def paired_with_turnlog(
    store: Any, bare_insert: Callable[[], None], blocks: int, per_block: int
) -> dict[str, Any]:
    """A durable append of the store's writer (one `tool_dispatch` inside an
    open turn: no tail fact moves) paired block by block with the bare driver
    insert. The writer is driven directly: the handle's write-order guard
    refuses a dispatch repeated for the same call, and the store's cost is
    what this row measures."""
    from turnlog import events as ev

    writer = store.create(ev.Event(seq=0, data=ev.Session(session_id="s"), ts=TS))
    writer.append_one(ev.Event(seq=1, data=ev.TurnStart(turn=1, revivals=0), ts=TS), True)
    dispatch = ev.ToolDispatch(call_id="call_0123456789abcdef", name="write_file")

    def append() -> None:
        writer.append_one(ev.Event(seq=writer.next_seq, data=dispatch, ts=TS), True)

    try:
        return paired({"bare": bare_insert, "turnlog": append}, blocks, per_block)
    finally:
        writer.close()


def durable_sqlite(directory: Path, blocks: int, per_block: int) -> dict[str, Any]:
    from turnlog.stores import SQLiteStore

    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    line = _line()
    # The bare baseline: the same line, the same table shape, WAL and
    # synchronous=FULL, one INSERT and COMMIT per append.
    bare = sqlite3.connect(directory / "bare.db", isolation_level=None)
    bare.execute("PRAGMA journal_mode=WAL")
    bare.execute("PRAGMA synchronous=FULL")
    bare.execute(
        "CREATE TABLE events (session_id TEXT, seq INTEGER, line BLOB, "
        "PRIMARY KEY (session_id, seq)) WITHOUT ROWID"
    )
    counter = [0]

    def bare_insert() -> None:
        # One statement in autocommit: its own transaction, the least a
        # durable insert can cost.
        counter[0] += 1
        bare.execute("INSERT INTO events VALUES ('s', ?, ?)", (counter[0], line.encode()))

    result = paired_with_turnlog(SQLiteStore(directory / "t.db"), bare_insert, blocks, per_block)
    bare.close()
    return result


def durable_postgres(dsn: str, blocks: int, per_block: int) -> dict[str, Any]:
    import psycopg

    from turnlog.stores.postgres import PostgresStore

    line = _line()
    bare = psycopg.connect(dsn, autocommit=True)
    bare.execute("DROP TABLE IF EXISTS bench_bare")
    bare.execute(
        "CREATE TABLE bench_bare (session_id text, seq bigint, line text, record jsonb, "
        "PRIMARY KEY (session_id, seq))"
    )
    record = line[: line.rindex(',"crc"')] + "}"
    counter = [0]

    def bare_insert() -> None:
        # One statement in autocommit: one round trip, committed synchronously.
        counter[0] += 1
        bare.execute(
            "INSERT INTO bench_bare VALUES ('s', %s, %s, %s::jsonb)", (counter[0], line, record)
        )

    store = PostgresStore(dsn, schema=f"bench_durable_{os.getpid()}")
    result = paired_with_turnlog(store, bare_insert, blocks, per_block)
    bare.close()
    return result


def sweep_fleet(dsn: str, sessions: int, crashed: int) -> dict[str, Any]:
    """`sessions` sessions in PostgreSQL, `crashed` of them with an open turn:
    the time to find the crashed ones, and to repair them all."""
    import psycopg

    import turnlog
    from turnlog import events as ev
    from turnlog.ops.sweep import sweep
    from turnlog.ops.transfer import write_events
    from turnlog.stores.postgres import PostgresStore
    from turnlog.stores.record import encode_line

    schema = f"bench_sweep_{os.getpid()}"
    store = PostgresStore(dsn, schema=schema)
    store.init()
    # The healthy majority goes in with one bulk statement per table: the
    # same rows a header-only session has, without 10,000 round trips.
    with psycopg.connect(dsn, autocommit=True) as connection:
        connection.execute(f'SET search_path = "{schema}"')
        rows = []
        for i in range(sessions - crashed):
            sid = f"ok{i:05d}"
            line = encode_line(ev.Event(seq=0, data=ev.Session(session_id=sid), ts=TS)).decode()
            rows.append((sid, line, line[: line.rindex(',"crc"')] + "}"))
        with connection.cursor() as cursor:
            cursor.executemany(
                "INSERT INTO turnlog_sessions (session_id, next_seq, last_ts) VALUES (%s, 1, NULL)",
                [(sid,) for sid, _, _ in rows],
            )
            cursor.executemany(
                "INSERT INTO turnlog_events (session_id, seq, line, record) "
                "VALUES (%s, 0, %s, %s::jsonb)",
                rows,
            )
    for i in range(crashed):
        sid = f"crash{i:03d}"
        write_events(
            store,
            [
                ev.Event(seq=0, data=ev.Session(session_id=sid), ts=TS),
                ev.Event(seq=1, data=ev.UserMessage(content="deploy"), ts=TS),
                ev.Event(seq=2, data=ev.TurnStart(turn=1, revivals=0), ts=TS),
                ev.Event(
                    seq=3,
                    data=ev.AssistantMessage(tool_calls=[ev.ToolCall(id="d", name="deploy")]),
                    ts=TS,
                ),
                ev.Event(seq=4, data=ev.ToolDispatch(call_id="d", name="deploy"), ts=TS),
            ],
        )
    assert len(store.sessions()) == sessions
    find_s = []
    for _ in range(5):
        start = time.perf_counter()
        found = store.sweep_candidates()
        find_s.append(time.perf_counter() - start)
        assert len(found) == crashed
    start = time.perf_counter()
    done = sweep(store)
    repair_s = time.perf_counter() - start
    assert sum(s.action == "recovered" for s in done) == crashed
    assert store.sweep_candidates() == []
    assert turnlog.inspect(store, "crash000").status == "idle"
    return {"find_s": find_s, "repair_s": repair_s, "sessions": sessions, "crashed": crashed}
