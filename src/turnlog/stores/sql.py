"""What the SQL stores share: a reading connection per thread, queries with their
driver's errors translated, and reads built on streaming events."""

from __future__ import annotations

import abc
import threading
from typing import Any

from turnlog.errors import TurnlogError, UsageError
from turnlog.events import Event
from turnlog.stores.base import Store


class SQLStore(Store):
    """A store on a database driver. Subclasses say how to connect, which
    exceptions are the driver's, and how those become turnlog errors."""

    def __init__(self) -> None:
        # One reading connection per thread: database connections are not
        # shared between threads, and a writer always has its own.
        self._local = threading.local()

    @abc.abstractmethod
    def _connect(self) -> Any:
        """A new connection, with the schema ready."""

    @abc.abstractmethod
    def _driver_errors(self) -> type[Exception]:
        """The base class of the driver's errors."""

    @abc.abstractmethod
    def _translate(self, exc: Exception, action: str) -> TurnlogError:
        """The one place this store's driver errors become turnlog errors."""

    @property
    def _reader(self) -> Any:
        connection = getattr(self._local, "connection", None)
        if connection is None or getattr(connection, "closed", False) is True:
            connection = self._connect()
            self._local.connection = connection
        return connection

    def _query(self, sql: str, parameters: tuple[object, ...] = ()) -> list[tuple[Any, ...]]:
        try:
            return list(self._reader.execute(sql, parameters).fetchall())
        except self._driver_errors() as exc:
            raise self._translate(exc, "read") from exc

    def init(self) -> None:
        self._query("SELECT 1")

    def close(self) -> None:
        connection = getattr(self._local, "connection", None)
        if connection is not None:
            connection.close()
            self._local.connection = None

    def read(self, session_id: str, from_seq: int = 0) -> list[Event]:
        if from_seq < 0:
            raise UsageError(f"from_seq must be >= 0, not {from_seq}")
        return list(self.iter_events(session_id))[from_seq:]
