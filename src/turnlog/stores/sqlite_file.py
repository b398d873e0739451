"""An SQLite file before turnlog opens it: whether it is a turnlog store, found without
changing a byte, and the one place this store's driver errors become turnlog errors."""

from __future__ import annotations

import os
import sqlite3
import stat
import threading
import time
import urllib.parse
from typing import Final

from turnlog.errors import NotAStoreError, StoreIOError, TurnlogError

# How long a connection waits for another connection's write transaction.
BUSY_TIMEOUT_MS: Final = 10_000
# How often, and how far apart, a probe reads again a database another
# process is making (a read of its half-written first pages).
PROBE_ATTEMPTS: Final = 20
PROBE_RETRY_S: Final = 0.025
# The tables that make a database a turnlog store.
TABLES: Final = frozenset({"schema_version", "sessions", "events"})


# Every database file this process has proven to be a turnlog store, by
# (device, inode). A proof is never made twice: the next store object on the
# same file, however it is named, asks SQLite nothing and opens nothing.
_proven: set[tuple[int, int]] = set()
# Held while a file is proven, made or given its schema, by every store object
# of this process: two objects on one new path must not both make it.
PROVING: Final = threading.Lock()


def probe(path: str, url: str) -> str:
    """What the path holds, found without changing a byte of it: "missing"
    (nothing, or an empty file), or "ours" (turnlog's schema). Raises
    `NotAStoreError` for anything else: another application's database is
    never switched to WAL, never given turnlog's tables, and no `-wal` or
    `-shm` file is left beside it.

    The file is opened through SQLite only, never with a plain `open()`: this
    process may hold connections to it, and closing any descriptor of a file
    drops every POSIX lock the process holds on it. Another process would
    then take itself for the last connection and checkpoint and remove the
    write-ahead log under ours (SQLite's "How To Corrupt An SQLite Database
    File", section 2.2). SQLite keeps such a descriptor open until its own
    last connection to the file closes."""
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return "missing"
    except OSError as exc:
        raise StoreIOError(f"open {url}: {exc.strerror or exc}", errno=exc.errno) from exc
    if not stat.S_ISREG(st.st_mode):
        raise NotAStoreError(f"{url} is not an SQLite database: not a regular file")
    key = (st.st_dev, st.st_ino)
    if key in _proven:
        return "ours"
    if st.st_size == 0:
        return "missing"
    names = _table_names(path, url)
    if names >= TABLES:
        _proven.add(key)
        return "ours"
    if not names:
        return "missing"
    shown = ", ".join(sorted(names)[:3]) + (", ..." if len(names) > 3 else "")
    raise NotAStoreError(
        f"{url} is the SQLite database of another application, not a turnlog store "
        f"(it holds {shown})"
    )


def _table_names(path: str, url: str) -> set[str]:
    """The tables of the database at `path`, read through SQLite without a
    write: read-only, and immutable unless a write-ahead log is already there
    (a read-only open of a WAL database would otherwise leave `-shm` and
    `-wal` files behind).

    An immutable read may meet a database another process is making (its
    first pages half written): such a read is tried again, a few times,
    before it is reported."""
    # The file the kernel opens for the path (`lnk/..` goes through the link),
    # not the one `abspath` would name by text.
    real = os.path.realpath(path)
    for attempt in range(PROBE_ATTEMPTS):
        mode = "mode=ro" if os.path.exists(real + "-wal") else "immutable=1"
        uri = f"file:{urllib.parse.quote(real)}?{mode}"
        try:
            connection = sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT_MS / 1000)
            try:
                return {
                    str(row[0])
                    for row in connection.execute(
                        "SELECT name FROM sqlite_master WHERE type = 'table'"
                    )
                }
            finally:
                connection.close()
        except sqlite3.DatabaseError as exc:
            text = str(exc)
            if "not a database" in text or "encrypted" in text:
                raise NotAStoreError(
                    f"{url} is not an SQLite database",
                    hint="check the path in the store URL; turnlog leaves the file as it is",
                ) from exc
            if "malformed" in text and attempt + 1 < PROBE_ATTEMPTS:
                time.sleep(PROBE_RETRY_S)
                continue
            raise translate(exc, "open", url) from exc
        except sqlite3.Error as exc:
            raise translate(exc, "open", url) from exc
    raise AssertionError("unreachable: the last attempt returns or raises")


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
