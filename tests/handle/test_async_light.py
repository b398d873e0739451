"""The asyncio handle's light path: which calls run on the event loop's thread,
and that order, durability and the lock hold either way, on every backend."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path

import pytest

import turnlog
from conftest import make_store
from fileio_doubles import RecordingIO
from turnlog import events as ev
from turnlog.handle.async_log import LIGHT_BATCH_MAX_EVENTS
from turnlog.runtime.async_loop import aopen
from turnlog.stores import Store
from turnlog.stores.jsonl import JSONLStore

# Stores whose unsynced append only hands bytes to memory.
LIGHT = ("jsonl", "memory")


@pytest.fixture(params=(*LIGHT, "sqlite", "postgres"))
def any_store(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, Store]:
    return request.param, make_store(request.param, tmp_path, request)


def thread_of() -> str:
    """The thread a call ran on, as `call_light` ran it."""
    return "loop" if threading.current_thread() is threading.main_thread() else "writer"


def test_a_light_call_runs_on_the_loop_only_where_it_cannot_wait(
    any_store: tuple[str, Store],
) -> None:
    kind, store = any_store

    async def main() -> tuple[str, str]:
        async with aopen(store, "s", create=True) as log:
            light = await log.call_light(lambda: (thread_of(), log.log.user("hi"))[0])
            # `call` is for any function: always the writer thread.
            heavy = await log.call(lambda: (thread_of(), log.log.user("there"))[0])
        return light, heavy

    light, heavy = asyncio.run(main())
    assert light == ("loop" if kind in LIGHT else "writer")
    assert heavy == "writer"
    texts = [e.data.content for e in store.read("s") if isinstance(e.data, ev.UserMessage)]
    assert texts == ["hi", "there"]


def test_a_durable_append_is_synced_off_the_loop_before_its_await_returns(
    tmp_path: Path,
) -> None:
    io = RecordingIO()
    synced_on: list[str] = []
    fsync = io.fsync

    def recording_fsync(fd: int) -> None:
        synced_on.append(threading.current_thread().name)
        fsync(fd)

    io.fsync = recording_fsync  # type: ignore[method-assign]
    store = JSONLStore(tmp_path, io=io)
    call = ev.ToolCall(id="c1", name="charge", arguments={})

    async def main() -> None:
        async with aopen(store, "d", create=True) as log:
            await log.user("charge")
            synced_on.clear()  # the header's, synced where the open ran
            async with log.turn(), log.step():
                await log.assistant("", [call])
                before = len(io.ops)
                async with log.dispatch(call, idempotency="destructive") as running:
                    # Inside the tool body: the dispatch is written and synced.
                    assert [op[0] for op in io.ops[before:]] == ["write", "fsync"]
                    await running.result("charged")
                # The result is not synced: one write, no hand-off.
                assert [op[0] for op in io.ops[before + 2 :]] == ["write"]

    asyncio.run(main())
    assert synced_on and all(name.startswith("turnlog-") for name in synced_on)


def test_calls_keep_their_order_when_some_wait_for_the_writer_thread(
    any_store: tuple[str, Store],
) -> None:
    """Durable appends hand their sync to the writer thread; a light call
    behind one must not overtake it."""
    _, store = any_store

    async def main() -> None:
        async with aopen(store, "o", create=True) as log:
            await asyncio.gather(
                *(
                    log.user(f"m{i}")
                    if i % 3
                    else log.append(ev.UserMessage(content=f"m{i}"), sync=True)
                    for i in range(30)
                ),
                log.call(time.sleep, 0.01),
                *(log.user(f"n{i}") for i in range(10)),
            )

    asyncio.run(main())
    texts = [e.data.content for e in store.read("o") if isinstance(e.data, ev.UserMessage)]
    assert texts == [f"m{i}" for i in range(30)] + [f"n{i}" for i in range(10)]


def test_a_durable_append_cancelled_during_its_sync_is_still_synced(tmp_path: Path) -> None:
    """Written on the loop's thread, its sync owed to the writer thread: a
    caller cancelled meanwhile does not leave it unsynced."""
    io = RecordingIO()
    fsync = io.fsync

    def slow_fsync(fd: int) -> None:
        time.sleep(0.05)
        fsync(fd)

    io.fsync = slow_fsync  # type: ignore[method-assign]
    store = JSONLStore(tmp_path, io=io)

    async def main() -> None:
        log = await aopen(store, "x", create=True)
        append = asyncio.ensure_future(log.append(ev.UserMessage(content="keep"), sync=True))
        await asyncio.sleep(0.01)
        assert not append.done()
        append.cancel()
        with pytest.raises(asyncio.CancelledError):
            await append
        await log.call(lambda: None)  # the writer thread has done what it was given
        before_close.extend(io.ops)
        await log.close()

    before_close: list[tuple[object, ...]] = []
    asyncio.run(main())
    kinds = [op[0] for op in before_close]
    written = next(i for i, op in enumerate(before_close) if op[0] == "write" and b"keep" in op[2])
    assert "fsync" in kinds[written:]
    assert [e.data.content for e in store.read("x") if isinstance(e.data, ev.UserMessage)] == [
        "keep"
    ]


def test_a_light_call_waits_for_a_thread_holding_the_log(tmp_path: Path) -> None:
    store = JSONLStore(tmp_path)
    held, release = threading.Event(), threading.Event()

    async def main() -> str:
        async with aopen(store, "h", create=True) as log:

            def hold() -> None:
                with log.log.lock:
                    held.set()
                    release.wait(5)

            holder = threading.Thread(target=hold)
            holder.start()
            held.wait(5)
            # The loop is not blocked on the lock: the call goes to the writer
            # thread, which waits there.
            pending = asyncio.ensure_future(
                log.call_light(lambda: (thread_of(), log.log.user("after"))[0])
            )
            await asyncio.sleep(0.05)
            assert not pending.done()
            release.set()
            where = await pending
            holder.join()
            return where

    assert asyncio.run(main()) == "writer"


def test_a_closed_handle_refuses_light_calls(tmp_path: Path) -> None:
    store = JSONLStore(tmp_path)

    async def main() -> None:
        log = await aopen(store, "z", create=True)
        await log.close()
        with pytest.raises(turnlog.UsageError, match="closed"):
            await log.user("after close")
        with pytest.raises(turnlog.UsageError, match="closed"):
            await log.call_light(log.log.user, "after close")

    asyncio.run(main())
    assert not [e for e in store.read("z") if isinstance(e.data, ev.UserMessage)]


def test_a_big_batch_is_encoded_off_the_loop(tmp_path: Path) -> None:
    written_on: list[str] = []

    class ThreadRecordingIO(RecordingIO):
        def write(self, fd: int, data: bytes | bytearray) -> int:
            written_on.append(threading.current_thread().name)
            return super().write(fd, data)

    store = JSONLStore(tmp_path, io=ThreadRecordingIO())
    small = [ev.UserMessage(content=f"s{i}") for i in range(LIGHT_BATCH_MAX_EVENTS)]
    big = [ev.UserMessage(content=f"b{i}") for i in range(LIGHT_BATCH_MAX_EVENTS + 1)]

    async def main() -> None:
        async with aopen(store, "b", create=True) as log:
            written_on.clear()
            await log.append_many(small)
            await log.append_many(big)

    asyncio.run(main())
    assert written_on == [threading.main_thread().name, written_on[1]]
    assert written_on[1].startswith("turnlog-")
    assert len(store.read("b")) == 1 + len(small) + len(big)


def test_a_durable_append_racing_a_close_succeeds(tmp_path: Path) -> None:
    """Its sync is queued before anything else runs on the loop, a close
    among it: the append returns its event, and the event is on disk."""
    store = JSONLStore(tmp_path)

    async def main() -> list[object]:
        log = await aopen(store, "r", create=True)
        return await asyncio.gather(
            log.append(ev.UserMessage(content="kept"), sync=True),
            log.close(),
            return_exceptions=True,
        )

    appended, closed = asyncio.run(main())
    assert isinstance(appended, ev.Event) and closed is None
    assert [e.data for e in store.read("r")][1:] == [ev.UserMessage(content="kept")]


def test_a_cancelled_queued_call_leaves_the_light_path_open(tmp_path: Path) -> None:
    store = JSONLStore(tmp_path)

    async def main() -> str:
        async with aopen(store, "q", create=True) as log:
            busy = asyncio.ensure_future(log.call(time.sleep, 0.1))
            await asyncio.sleep(0.01)
            queued = asyncio.ensure_future(log.append(ev.UserMessage(content="dropped")))
            await asyncio.sleep(0.01)
            queued.cancel()
            await busy
            await asyncio.sleep(0.01)
            return await log.call_light(thread_of)

    assert asyncio.run(main()) == "loop"
    assert not [e for e in store.read("q") if e.data == ev.UserMessage(content="dropped")]


def test_a_task_holding_the_log_keeps_other_tasks_writes_out(tmp_path: Path) -> None:
    store = JSONLStore(tmp_path)

    async def main() -> None:
        async with aopen(store, "l", create=True) as log:

            async def holder() -> None:
                with log.log.lock:
                    await asyncio.sleep(0.05)
                    log.log.user("held")

            async def other() -> None:
                await asyncio.sleep(0.01)
                await log.user("other")

            await asyncio.gather(holder(), other())

    asyncio.run(main())
    texts = [e.data.content for e in store.read("l") if isinstance(e.data, ev.UserMessage)]
    assert texts == ["held", "other"]
