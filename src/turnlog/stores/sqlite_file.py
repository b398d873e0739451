"""An SQLite file before turnlog opens it: whether it is a turnlog store, found without
changing a byte, and the one place this store's driver errors become turnlog errors."""

from __future__ import annotations

import os
import sqlite3
import stat
import urllib.parse
from typing import Final

from turnlog.errors import NotAStoreError, StoreIOError, TurnlogError

# How long a connection waits for another connection's write transaction.
BUSY_TIMEOUT_MS: Final = 10_000
# The first bytes of every SQLite database file.
_MAGIC: Final = b"SQLite format 3\x00"
# The tables that make a database a turnlog store.
TABLES: Final = frozenset({"schema_version", "sessions", "events"})


def probe(path: str, url: str) -> str:
    """What the path holds, found without changing a byte of it: "missing"
    (nothing, or an empty file), or "ours" (turnlog's schema). Raises
    `NotAStoreError` for anything else: another application's database is
    never switched to WAL, never given turnlog's tables, and no `-wal` or
    `-shm` file is left beside it."""
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return "missing"
    except OSError as exc:
        raise StoreIOError(f"open {url}: {exc.strerror or exc}", errno=exc.errno) from exc
    if not stat.S_ISREG(st.st_mode):
        raise NotAStoreError(f"{url} is not an SQLite database: not a regular file")
    if st.st_size == 0:
        return "missing"
    try:
        with open(path, "rb") as f:
            magic = f.read(len(_MAGIC))
    except OSError as exc:
        raise StoreIOError(f"open {url}: {exc.strerror or exc}", errno=exc.errno) from exc
    if magic != _MAGIC:
        raise NotAStoreError(
            f"{url} is not an SQLite database",
            hint="check the path in the store URL; turnlog leaves the file as it is",
        )
    # Read-only, and immutable unless a write-ahead log is already there:
    # a read-only open of a WAL database would otherwise leave `-shm` and
    # `-wal` files behind.
    mode = "mode=ro" if os.path.exists(path + "-wal") else "immutable=1"
    uri = f"file:{urllib.parse.quote(os.path.abspath(path))}?{mode}"
    try:
        probe = sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT_MS / 1000)
        try:
            names = {
                str(row[0])
                for row in probe.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            }
        finally:
            probe.close()
    except sqlite3.Error as exc:
        raise translate(exc, "open", url) from exc
    if names >= TABLES:
        return "ours"
    if not names:
        return "missing"
    shown = ", ".join(sorted(names)[:3]) + (", ..." if len(names) > 3 else "")
    raise NotAStoreError(
        f"{url} is the SQLite database of another application, not a turnlog store "
        f"(it holds {shown})"
    )


def translate(exc: sqlite3.Error, action: str, where: str) -> TurnlogError:
    """The one place driver errors of this store become turnlog errors."""
    text = str(exc)
    if isinstance(exc, sqlite3.OperationalError) and "locked" in text:
        return StoreIOError(
            f"{action} {where}: the database stayed locked for {BUSY_TIMEOUT_MS} ms",
            hint="another process holds a long write transaction on the database",
        )
    if isinstance(exc, sqlite3.DatabaseError) and "not a database" in text:
        return StoreIOError(
            f"{where} is not an SQLite database",
            hint="check the path in the store URL; turnlog leaves the file as it is",
        )
    return StoreIOError(f"{action} {where}: {text}")
