"""Opening a session: `open` and its asyncio twin `aopen`, which recover or revive it on request.

They stand above the writer handle and revival, which is built on the
handle: a crashed session opened with `revive=True` is revived before the
handle is handed back.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Generator
from types import TracebackType
from typing import Any

from turnlog import events as ev
from turnlog.core.durability import Durability
from turnlog.errors import UsageError
from turnlog.handle.async_log import AsyncLog
from turnlog.handle.log import Log, open_handle
from turnlog.handle.opening import OpenOptions
from turnlog.ops.revival import refuse_engine_owned, revive as revive_log
from turnlog.stores.base import Store
from turnlog.stores.holders import OPENED_AT, caller_site


def open(
    target: str | os.PathLike[str] | Store,
    session_id: str | None = None,
    *,
    create: bool | None = None,
    durability: Durability = "barrier",
    agent: ev.Agent | None = None,
    parent: ev.Parent | None = None,
    spawned_by: ev.SpawnedBy | None = None,
    meta: dict[str, Any] | None = None,
    recover: bool = False,
    revive: bool = False,
    engine_run: ev.EngineRun | None = None,
    replay: bool = True,
) -> Log:
    """Open a session for writing, creating it if needed.

    `target` is a `.jsonl` file, a store directory or URL, or a `Store`.
    `create=None` creates the session when it does not exist, `True` requires
    that it does not, `False` requires that it does. A new session without an
    id gets a random one.

    A session whose last writer died mid-turn opens as `crashed`: it refuses
    every write until it is recovered. `recover=True` recovers it on open
    (`log.recover()`); `revive=True` revives it (`turnlog.revive(log)`: recover,
    mark the revival, tell the model), within the default revival cap. A
    paused session opens as it is, never crashed; with either flag, its
    pauses past their deadline are settled as not run (A2).

    `engine_run` opens the session for a durable-execution engine's run
    (docs/engines.md): its turns are stamped with the run, and the run, run
    again by the engine after a crash, meets its earlier writes instead of
    writing them twice (`replay=False` for a handle inside one step, which
    writes only its own tool calls). The engine restarts such a run, so it is
    never recovered or revived on open.
    """
    if engine_run is not None and revive:
        raise UsageError(
            "a session opened for an engine run is never revived on open",
            hint="the engine runs the workflow again; drop revive=True",
        )
    options = OpenOptions(
        create=create,
        durability=durability,
        agent=agent,
        parent=parent,
        spawned_by=spawned_by,
        meta=meta,
        # A revival recovers as it revives (past its cap, recovery still runs).
        recover=recover and not revive,
        engine_run=engine_run,
        replay=replay,
    )
    log = open_handle(target, session_id, options)
    # Also a session recovered already (by `turnlog recover` or a sweep) and
    # not yet told is revived, as `turnlog revive` revives it; a healthy
    # session is left as it is.
    try:
        if revive:
            refuse_engine_owned(revive_log(log))
            if log.crashed:  # not revived (past the cap): recovery still closes the turn
                log.recover()
        if (recover or revive) and log.awaiting:
            # A pause is never repaired, but one past its deadline is settled.
            log.expire()
    except BaseException:
        log.close()
        raise
    return log


class Opening(Awaitable[AsyncLog]):
    """What `aopen` returns: await it for the `AsyncLog`, or use it as
    `async with turnlog.aopen(...) as log:`, which closes the log at the end."""

    def __init__(
        self,
        target: str | os.PathLike[str] | Store,
        session_id: str | None,
        options: dict[str, Any],
        site: str | None,
    ) -> None:
        self._target = target
        self._session_id = session_id
        self._options = options
        self._site = site
        self._log: AsyncLog | None = None

    async def _open(self) -> AsyncLog:
        # The open runs on a worker thread, where no frame of the program is
        # left: the line that called `aopen` goes with it (asyncio copies the
        # context), for the refusal a second handle on the session gets.
        token = OPENED_AT.set(self._site)
        try:
            log = await asyncio.to_thread(open, self._target, self._session_id, **self._options)
        finally:
            OPENED_AT.reset(token)
        return AsyncLog(log)

    def __await__(self) -> Generator[Any, None, AsyncLog]:
        return self._open().__await__()

    async def __aenter__(self) -> AsyncLog:
        self._log = await self._open()
        return self._log

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._log is not None:
            await self._log.close()


def aopen(
    target: str | os.PathLike[str] | Store,
    session_id: str | None = None,
    **options: Any,
) -> Opening:
    """`turnlog.open` for asyncio: opens off the event loop. Use it as
    `async with turnlog.aopen(path) as log:` (closed at the end), or
    `log = await turnlog.aopen(path)` and close it yourself."""
    return Opening(target, session_id, options, caller_site())
