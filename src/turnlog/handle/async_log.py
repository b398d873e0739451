"""The asyncio writer handle `AsyncLog`: no sync or database write on the loop."""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import functools
import threading
from collections.abc import AsyncIterator, Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import asynccontextmanager
from types import TracebackType
from typing import Any, Final, ParamSpec, TypeVar

from turnlog import events as ev
from turnlog.core.durability import Durability
from turnlog.core.fold import Message
from turnlog.core.open_turn import OpenTurn
from turnlog.core.pauses import Awaiting
from turnlog.core.recovery import Plan
from turnlog.core.verdict import Verdict
from turnlog.errors import UsageError
from turnlog.events import Content, Event, EventData, IdempotencyValue, P, ToolCall
from turnlog.handle.dispatch import Dispatch, begin_dispatch_with
from turnlog.handle.log import Log
from turnlog.handle.state import Turn
from turnlog.stores import Store

#: The most events an `append_many` runs on the event loop's thread (see `AsyncLog`).
LIGHT_BATCH_MAX_EVENTS: Final = 64

_P = ParamSpec("_P")
_T = TypeVar("_T")


class AsyncDispatch:
    """A dispatched call in an async loop; `await result(...)` records its outcome."""

    def __init__(self, log: AsyncLog, handle: Dispatch) -> None:
        self._log = log
        self._handle = handle
        self.call = handle.call

    @property
    def answered(self) -> bool:
        return self._handle.answered

    @property
    def handle(self) -> Dispatch:
        return self._handle

    def mark_answered(self) -> None:
        """The call was answered by a result written outside this handle
        (a deadline's D1), so the block's end must not answer it again."""
        self._handle.answered = True

    async def result(self, content: Content, *, is_error: bool = False) -> Event[ev.ToolResult]:
        return await self._log._run_light(self._handle.result, content, is_error=is_error)


class AsyncLog:
    """A `Log` for asyncio programs: no `fsync` and no database round trip
    ever blocks the event loop, and the order of events is the order of calls.

    A write runs on one writer thread of its own, one at a time in the order
    the writes were awaited. A write that only hands bytes to memory (an
    unsynced append to a JSONL file or the memory store, a batch of at most
    `LIGHT_BATCH_MAX_EVENTS`, a read of a loaded transcript) runs at once on
    the loop's thread instead, when nothing is
    queued ahead of it and no other thread holds the log: a hand-off to a
    thread costs more than the write. A sync such a write asks for runs on
    the writer thread before its await returns, so what an await promised
    durable is durable either way.
    """

    def __init__(self, log: Log, *, release: Callable[[Log], None] | None = None) -> None:
        self.log = log
        # The state the sync handle holds: the light path reads it directly.
        self._held = log.held
        # What closing this handle does to the log: close it, or (a handle on
        # a log shared in the process) give it back with `release`.
        self._release = release if release is not None else Log.close
        self._executor = ThreadPoolExecutor(
            max_workers=1, thread_name_prefix=f"turnlog-{log.session_id[:32]}"
        )
        self._closing: Future[None] | None = None
        # Calls handed to the writer thread and not yet done: a call runs on
        # the loop's thread only when none is ahead of it.
        self._queued = 0
        self._queued_lock = threading.Lock()

    def _done(self, _: Future[Any]) -> None:
        with self._queued_lock:
            self._queued -= 1

    def _submit(self, job: Callable[[], _T]) -> Future[_T]:
        with self._queued_lock:
            self._queued += 1
        try:
            future = self._executor.submit(job)
        except BaseException:
            with self._queued_lock:
                self._queued -= 1
            raise
        # Done, failed or cancelled before it ran: no longer ahead of anyone.
        future.add_done_callback(self._done)
        return future

    async def _run(self, fn: Callable[_P, _T], *args: _P.args, **kwargs: _P.kwargs) -> _T:
        try:
            future = self._submit(functools.partial(fn, *args, **kwargs))
        except RuntimeError:  # the writer thread is shut down: the handle is closing
            raise UsageError(
                "the log is closed", hint="open the session again to write to it"
            ) from None
        return await asyncio.wrap_future(future)

    async def _run_light(self, fn: Callable[_P, _T], *args: _P.args, **kwargs: _P.kwargs) -> _T:
        """Run `fn`, which only reads and appends through the `Log`, on the
        loop's thread when that cannot wait on I/O or reorder calls;
        otherwise on the writer thread, as `_run` does."""
        held = self._held
        writer = held.writer
        lock = held.lock
        if (
            self._queued
            or self._closing is not None
            or writer is None
            or writer.unsynced_append_waits
            # A subscriber is told whether the events it gets are durable.
            or held.subscribers
            # A task holding the log across an await keeps every other
            # task's writes out, as it does on the writer thread.
            or lock._is_owned()  # type: ignore[attr-defined]
            or not lock.acquire(blocking=False)
        ):
            return await self._run(fn, *args, **kwargs)
        syncing: Future[None] | None = None
        try:
            held.owed_sync = False
            try:
                return fn(*args, **kwargs)
            finally:
                owed = held.owed_sync
                held.owed_sync = None
                lock.release()
                if owed:
                    # Queued before anything else can run on the loop (a
                    # close among it): the sync goes first.
                    syncing = self._submit(held.sync)
        finally:
            if syncing is not None:
                # Shielded: an append that asked to be durable is, even when
                # its caller is cancelled meanwhile.
                await asyncio.shield(asyncio.wrap_future(syncing))

    def call_soon(self, fn: Callable[_P, Any], *args: _P.args, **kwargs: _P.kwargs) -> None:
        """Queue `fn` on the writer thread without waiting for it (from a
        callback that cannot await); dropped once the handle is closed."""
        # RuntimeError: the closed handle's writer thread is gone.
        with contextlib.suppress(RuntimeError):
            self._submit(functools.partial(fn, *args, **kwargs))

    async def call(self, fn: Callable[_P, _T], *args: _P.args, **kwargs: _P.kwargs) -> _T:
        """Run `fn` (which writes through the sync `Log`) on the writer thread,
        in order with the appends awaited before it."""
        return await self._run(fn, *args, **kwargs)

    async def call_read(self, fn: Callable[_P, _T], *args: _P.args, **kwargs: _P.kwargs) -> _T:
        """As `call`, for a `fn` that reads the session from its store and
        appends nothing: run as `call_light` runs when the store's writer says
        such a read is light (`StoreWriter.light_read`: a small local file),
        otherwise on the writer thread."""
        writer = self._held.writer
        if writer is not None and writer.light_read:
            return await self._run_light(fn, *args, **kwargs)
        return await self._run(fn, *args, **kwargs)

    async def call_light(self, fn: Callable[_P, _T], *args: _P.args, **kwargs: _P.kwargs) -> _T:
        """As `call`, for a `fn` that does nothing but read and append through
        the `Log` (no other I/O, no waiting): it may run at once on the loop's
        thread, as an unsynced append does (see the class)."""
        return await self._run_light(fn, *args, **kwargs)

    # -- what the sync handle knows ------------------------------------------------

    @property
    def session_id(self) -> str:
        return self.log.session_id

    @property
    def store(self) -> Store:
        return self.log.store

    @property
    def header(self) -> ev.Session:
        return self.log.header

    @property
    def durability(self) -> Durability:
        return self.log.durability

    @property
    def closed(self) -> bool:
        return self.log.closed

    def verdict(self) -> Verdict:
        return self.log.verdict()

    @property
    def turn_open(self) -> bool:
        return self.log.turn_open

    @property
    def open_turn(self) -> OpenTurn | None:
        return self.log.open_turn

    def owed_calls(self) -> dict[str, str | None]:
        return self.log.owed_calls()

    async def messages(self) -> tuple[Message, ...]:
        """The transcript (the first call may read the whole log, off the loop)."""
        if self.log.transcript_read:
            return await self._run_light(lambda: self.log.messages)
        return await self._run(lambda: self.log.messages)

    # -- writing ----------------------------------------------------------------

    async def append(self, data: P, **options: Any) -> Event[P]:
        return await self._run_light(functools.partial(self.log.append, data, **options))

    async def append_many(self, items: Sequence[EventData], **options: Any) -> list[Event]:
        if len(items) > LIGHT_BATCH_MAX_EVENTS:
            # Encoding a big batch is work the loop should not wait on.
            return await self._run(self.log.append_many, items, **options)
        return await self._run_light(self.log.append_many, items, **options)

    async def system(self, content: Content) -> Event[ev.SystemMessage]:
        return await self._run_light(self.log.system, content)

    async def user(self, content: Content, *, injected: str | None = None) -> Event[ev.UserMessage]:
        return await self._run_light(self.log.user, content, injected=injected)

    async def assistant(
        self,
        content: Content = "",
        tool_calls: Sequence[ToolCall] = (),
        *,
        usage: ev.TokenUsage | None = None,
    ) -> Event[ev.AssistantMessage]:
        return await self._run_light(self.log.assistant, content, tool_calls, usage=usage)

    async def pause(
        self,
        call_id: str,
        *,
        kind: str = "approval",
        until: datetime.datetime | str | None = None,
        prompt: str | None = None,
        decided_in: str | None = None,
    ) -> Event[ev.ToolPaused]:
        """`Log.pause`, synced off the event loop."""
        return await self._run(
            self.log.pause, call_id, kind=kind, until=until, prompt=prompt, decided_in=decided_in
        )

    async def approve(
        self,
        call_id: str,
        *,
        by: str | None = None,
        reason: str | None = None,
        keeper: str | None = None,
    ) -> Event[ev.ToolDecision]:
        """`Log.approve`, synced off the event loop."""
        return await self._run(self.log.approve, call_id, by=by, reason=reason, keeper=keeper)

    async def reject(
        self,
        call_id: str,
        *,
        by: str | None = None,
        reason: str | None = None,
        keeper: str | None = None,
    ) -> list[Event]:
        """`Log.reject`, synced off the event loop."""
        return await self._run(self.log.reject, call_id, by=by, reason=reason, keeper=keeper)

    async def deliver(
        self,
        call_id: str,
        content: Content,
        *,
        by: str | None = None,
        is_error: bool = False,
        keeper: str | None = None,
    ) -> list[Event]:
        """`Log.deliver`, synced off the event loop."""
        return await self._run(
            self.log.deliver, call_id, content, by=by, is_error=is_error, keeper=keeper
        )

    async def expire(
        self,
        *,
        now: datetime.datetime | None = None,
        max_age_s: float | None = None,
        because: str | None = None,
        keep_turn_open: bool = False,
    ) -> list[Event]:
        """`Log.expire`, synced off the event loop."""
        return await self._run(
            self.log.expire,
            now=now,
            max_age_s=max_age_s,
            because=because,
            keep_turn_open=keep_turn_open,
        )

    @property
    def awaiting(self) -> tuple[Awaiting, ...]:
        return self.log.awaiting

    @property
    def paused(self) -> bool:
        return self.log.paused

    async def recover(self) -> Plan:
        return await self._run(self.log.recover)

    async def sync(self) -> None:
        await self._run(self.log.sync)

    @asynccontextmanager
    async def turn(self, *, resume: bool = False) -> AsyncIterator[Turn]:
        """As `Log.turn`: a raising block closes the turn honestly."""
        turn = await self._run_light(self.log.begin_turn, resume=resume)
        try:
            yield turn
        except BaseException as exc:
            await asyncio.shield(self._run(self.log.fail_turn, exc))
            raise
        else:
            await self._run_light(self.log.end_turn, turn)

    @asynccontextmanager
    async def step(self) -> AsyncIterator[int]:
        number = await self._run_light(self.log.begin_step)
        try:
            yield number
        except BaseException as exc:
            await asyncio.shield(self._run(self.log.fail_step, exc))
            raise
        await self._run_light(self.log.end_step)

    @asynccontextmanager
    async def dispatch(
        self, call: ToolCall, *, idempotency: IdempotencyValue | None = None, **options: Any
    ) -> AsyncIterator[AsyncDispatch]:
        """Write `tool_dispatch` durably (its sync off the loop) before the block runs the tool.
        `options` are the dispatch's other fields (`join`, `timeout_s`, `background`)."""
        fields = {"idempotency": idempotency, **options}
        handle = await self._run_light(begin_dispatch_with, self._held, call, fields)
        try:
            yield AsyncDispatch(self, handle)
        except BaseException as exc:
            # Shielded: a cancelled tool still gets its honest result.
            await asyncio.shield(self._run(self.log.end_dispatch, handle, exc))
            raise
        else:
            await self._run_light(self.log.end_dispatch, handle, None)

    async def close(self) -> None:
        """Sync what is not yet durable and release the lock (a handle made
        with `release` gives its shared log back instead). Idempotent.

        The close runs on the writer thread after what was queued before it,
        and a cancelled caller (an event loop shutting down cancels its tasks)
        still closes: a close left queued and cancelled would keep the
        session's lock for the rest of the process. A second close waits for
        the first.
        """
        await asyncio.shield(asyncio.wrap_future(self.start_close()))

    def start_close(self) -> Future[None]:
        """Queue the close (see `close`) without waiting for it, for a caller
        that cannot await; the future is done once the log is released."""
        closing = self._closing
        if closing is None:
            closing = self._closing = self._executor.submit(self._release, self.log)
            self._executor.shutdown(wait=False)
        return closing

    async def __aenter__(self) -> AsyncLog:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    def __repr__(self) -> str:
        return f"<turnlog.AsyncLog {self.session_id!r}>"
