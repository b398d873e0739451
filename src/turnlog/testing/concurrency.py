"""The store contract across threads, asyncio, second handles and processes."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence

import pytest

import turnlog
from turnlog import events as ev
from turnlog.core.fold import fold
from turnlog.events import Event, ToolCall
from turnlog.stores.base import Store
from turnlog.testing.support import (
    LOG,
    TS,
    ContractBase,
    assert_written_ahead,
    in_threads,
    on_a_new_thread,
)


class ConcurrencyContract(ContractBase):
    """A store works from any thread, loop or process, with the same guarantees."""

    # -- threads and asyncio ---------------------------------------------------------
    #
    # Agent frameworks run parallel tool calls on threads, asyncio runs appends
    # on a writer thread, and readers watch a session while it is written: a
    # store works from any thread, with the same guarantees.

    def test_a_log_shared_by_eight_threads_answers_parallel_calls(self, store: Store) -> None:
        calls = [ToolCall(id=f"c{t}.{i}", name="work") for t in range(8) for i in range(3)]
        with turnlog.open(store, "par", create=True) as log:
            log.user("fan out")
            with log.turn(), log.step():
                log.assistant("fan out", calls)

                def answer(t: int) -> None:
                    for call in calls[t * 3 : t * 3 + 3]:
                        with log.dispatch(call) as running:
                            running.result(f"done {call.id}")

                in_threads(8, answer)
            assert log.state == fold(store.read("par"))
        events = store.read("par")
        assert sorted(assert_written_ahead(events)) == sorted(call.id for call in calls)
        assert turnlog.inspect(store, "par").status == "idle"
        assert store.lock_holder("par") is None

    def test_a_writer_made_on_one_thread_is_used_and_closed_on_another(self, store: Store) -> None:
        writer = on_a_new_thread(lambda: store.create(LOG[0]))

        def write() -> None:
            writer.append(LOG[1:4], expected_seq=1, sync=True)
            writer.append_one(LOG[4], False)
            writer.sync()
            writer.close()

        on_a_new_thread(write)
        assert store.lock_holder("s1") is None
        assert store.read("s1") == LOG[:5]
        # Reopened on yet another thread, appended to and closed on this one.
        again = on_a_new_thread(lambda: store.writer("s1", check="tail"))
        assert again.next_seq == 5
        again.append(LOG[5:], expected_seq=5, sync=True)
        again.close()
        assert store.lock_holder("s1") is None
        assert store.read("s1") == LOG
        store.writer("s1").close()

    def test_the_asyncio_handle_runs_a_turn_of_parallel_calls(self, store: Store) -> None:
        from turnlog.core.fold import Message
        from turnlog.runtime.async_loop import aopen, arun_turn
        from turnlog.runtime.loop import Reply, Tool

        calls = tuple(ToolCall(id=f"q{n}", name="slow" if n % 2 else "plain") for n in range(6))

        def model(messages: Sequence[Message]) -> Reply:
            if messages[-1].role == "user":
                return Reply(content="on it", tool_calls=calls)
            return Reply(content="all done")

        async def slow() -> str:
            await asyncio.sleep(0.01)
            return "slept"

        tools = {
            "slow": Tool(run=slow, idempotency="read_only"),
            "plain": Tool(run=lambda: "ran on a thread", idempotency="read_only"),
        }

        async def main() -> Reply:
            async with await aopen(store, "aio", create=True) as log:
                await log.user("go")
                return await arun_turn(log, model, tools)

        assert asyncio.run(main()).content == "all done"
        events = store.read("aio")
        assert sorted(assert_written_ahead(events)) == sorted(call.id for call in calls)
        assert turnlog.inspect(store, "aio").status == "finished"
        assert store.lock_holder("aio") is None

    def test_readers_on_other_threads_while_the_writer_appends(self, store: Store) -> None:
        self.populate(store, LOG[:3])
        writer = store.writer("s1")
        total = 300
        done = threading.Event()
        seen: list[int] = [0, 0, 0]

        def append() -> None:
            try:
                for seq in range(3, total):
                    data = ev.UserMessage(content=f"m{seq}")
                    writer.append_one(Event(seq=seq, data=data, ts=TS), seq % 50 == 0)
            finally:
                done.set()

        def read(index: int) -> None:
            if index == 0:
                append()
                return
            while True:
                finished = done.is_set()
                if index == 1:
                    events = list(store.iter_events("s1"))
                    assert [event.seq for event in events] == list(range(len(events)))
                    assert events[:3] == LOG[:3]
                    seen[index] += 1
                else:
                    tail = store.read_tail("s1")
                    assert tail.events and tail.verdict().open_turn is not None
                    assert store.sessions() == ["s1"] and store.exists("s1")
                    seen[index] += 1
                if finished:
                    return

        in_threads(3, read)
        writer.close()
        assert all(seen[1:]), seen
        assert len(store.read("s1")) == total
        # A stream may be read on other threads than the one that began it
        # (as `asyncio.to_thread(next, events)` does): it carries on.
        stream = store.iter_events("s1")
        first = on_a_new_thread(lambda: next(stream))
        second = on_a_new_thread(lambda: next(stream))
        rest = list(stream)
        assert [first.seq, second.seq, *(event.seq for event in rest)] == list(range(total))

    # -- a second handle in this process ----------------------------------------------

    @staticmethod
    def _refused_here(open_second: Callable[[], object], line: int) -> None:
        """`open_second` is refused as a second handle of this process, told
        where the first was opened (`line` of this file) and what to do."""
        with pytest.raises(turnlog.SessionLockedError) as info:
            open_second()
        message = str(info.value)
        assert "this process already holds the writer for session 's1'" in message, message
        assert f"concurrency.py:{line}; pid {os.getpid()})" in message, message
        assert info.value.pid == os.getpid()
        assert "close that handle first or share it" in info.value.hint

    def test_a_second_handle_in_this_process_is_told_where_the_first_was_opened(
        self, store: Store
    ) -> None:
        line = sys._getframe().f_lineno + 1
        first = store.create(LOG[0])
        self._refused_here(lambda: store.writer("s1"), line)
        self._refused_here(lambda: turnlog.open(store, "s1"), line)
        # On another thread too: the registry is the process's.
        self._refused_here(lambda: on_a_new_thread(lambda: store.writer("s1")), line)
        first.close()
        # Closed, it is forgotten: the next holder is the one named.
        line = sys._getframe().f_lineno + 1
        log = turnlog.open(store, "s1")
        self._refused_here(lambda: store.writer("s1", check="tail"), line)
        log.close()
        store.writer("s1").close()

    def test_a_session_opened_with_asyncio_names_the_line_that_opened_it(
        self, store: Store
    ) -> None:
        from turnlog.runtime.async_loop import aopen

        self.populate(store, LOG[:2])

        async def main() -> int:
            line = sys._getframe().f_lineno + 1
            async with await aopen(store, "s1"):
                self._refused_here(lambda: store.writer("s1"), line)
            return line

        asyncio.run(main())
        store.writer("s1").close()

    def test_processes_racing_for_one_writer_one_wins(self, store: Store) -> None:
        if not self.process_safe:
            pytest.skip("the store lives in this process only")
        self.populate(store)
        racers = [
            subprocess.Popen(
                [
                    sys.executable,
                    "-c",
                    _RACER,
                    store.url if ":" in store.url else f"jsonl:{store.url}",
                ],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
            )
            for _ in range(4)
        ]
        try:
            answers = [racer.stdout.readline().strip() for racer in racers]  # type: ignore[union-attr]
            assert sorted(answers) == ["got", "locked", "locked", "locked"], answers
            (winner,) = [r for r, a in zip(racers, answers, strict=True) if a == "got"]
            assert store.lock_holder("s1") is not None
        finally:
            for racer in racers:
                if racer.stdin is not None:
                    racer.stdin.close()
                racer.wait(timeout=60)
        assert [racer.returncode for racer in racers] == [0, 0, 0, 0]
        assert winner.returncode == 0 and store.lock_holder("s1") is None


# A racer: takes the writer of session s1 or is refused, and says which; the
# winner holds the writer until its stdin closes, so every other racer, however
# late it starts, finds it held.
_RACER = """
import sys, turnlog
store, _ = turnlog.open_store(sys.argv[1])
try:
    writer = store.writer("s1", check="tail")
except turnlog.SessionLockedError:
    print("locked", flush=True)
    sys.exit(0)
print("got", flush=True)
sys.stdin.read()
writer.close()
"""
