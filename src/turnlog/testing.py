"""The store contract as a public test suite: subclass it to check a backend.

    from turnlog.testing import StoreContract

    class TestMyStore(StoreContract):
        def make_store(self, tmp_path):
            return MyStore(tmp_path / "data")

pytest collects the subclass and runs every contract test against the
store it makes; turnlog runs it over its memory, JSONL, SQLite and
PostgreSQL stores. Needs pytest.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

import msgspec
import pytest

import turnlog
from turnlog import events as ev
from turnlog.events import Event, ToolCall
from turnlog.fold import fold
from turnlog.stores.base import Store

__all__ = ["CONTRACT_LOG", "StoreContract"]

_TS = "2026-11-29T12:00:00.000000Z"
_T = TypeVar("_T")


def _on_a_new_thread(fn: Callable[[], _T]) -> _T:
    """Run `fn` on a thread of its own and hand back its result or its error."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(fn).result(timeout=60)


def _in_threads(count: int, work: Callable[[int], None]) -> None:
    """Run `work(0)` ... `work(count - 1)` on threads of their own, released
    together, and raise the first error any of them met."""
    barrier = threading.Barrier(count)
    errors: list[BaseException] = []

    def run(index: int) -> None:
        try:
            barrier.wait(timeout=30)
            work(index)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(index,)) for index in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not any(thread.is_alive() for thread in threads), "a thread never finished"
    if errors:
        raise errors[0]


def _assert_written_ahead(events: Sequence[Event]) -> dict[str, int]:
    """Seqs are 0, 1, 2, ... and every result follows its call's dispatch;
    returns each dispatched call's seq."""
    assert [event.seq for event in events] == list(range(len(events)))
    dispatched: dict[str, int] = {}
    for event in events:
        if isinstance(event.data, ev.ToolDispatch):
            dispatched[event.data.call_id] = event.seq
        elif isinstance(event.data, ev.ToolResult):
            assert dispatched[event.data.call_id] < event.seq
    return dispatched


def _log() -> list[Event]:
    call_a = ToolCall(id="a", name="pay")
    call_b = ToolCall(id="b", name="rm")
    payloads: list[ev.EventData] = [
        ev.Session(session_id="s1", created_at=_TS),
        ev.UserMessage(content="hi"),
        ev.TurnStart(turn=1),
        ev.StepStart(turn=1, step=1),
        ev.AssistantMessage(tool_calls=[call_a]),
        ev.ToolDispatch(call_id="a", name="pay"),
        ev.ToolResult(call_id="a", name="pay", content="ok"),
        ev.TurnEnd(reason="complete", turn=1),
        ev.UserMessage(content="again"),
        ev.TurnStart(turn=2),
        ev.AssistantMessage(tool_calls=[call_b]),
        ev.ToolDispatch(call_id="b", name="rm"),
    ]
    return [Event(seq=i, data=data, ts=_TS) for i, data in enumerate(payloads)]


#: The session every contract test writes: a closed turn, then one that
#: crashed with a dispatched call.
CONTRACT_LOG = _log()
LOG = CONTRACT_LOG


class StoreContract:
    """What every store promises. Subclass with `make_store`."""

    def make_store(self, tmp_path: Path) -> Store:
        raise NotImplementedError("a StoreContract subclass makes the store under test")

    @pytest.fixture
    def store(self, tmp_path: Path) -> Iterator[Store]:
        with self.make_store(tmp_path) as made:
            yield made

    @staticmethod
    def populate(store: Store, events: list[Event] = LOG) -> None:
        with store.create(events[0]) as writer:
            writer.append(events[1:], expected_seq=1, sync=True)

    def test_create_read_round_trip(self, store: Store) -> None:
        self.populate(store)
        assert store.read("s1") == LOG
        assert store.read("s1", from_seq=5) == LOG[5:]
        assert store.read("s1", from_seq=len(LOG)) == []
        assert store.sessions() == ["s1"]
        assert store.exists("s1") and not store.exists("s2")
        assert store.read_header("s1") == LOG[0]

    def test_append_with_wrong_expected_seq_conflicts(self, store: Store) -> None:
        self.populate(store, LOG[:3])
        with store.writer("s1") as writer:
            with pytest.raises(turnlog.errors.SeqConflictError) as info:
                writer.append(LOG[4:5], expected_seq=4, sync=False)
            assert (info.value.expected, info.value.actual) == (4, 3)
            writer.append(LOG[3:5], expected_seq=3, sync=False)
        assert store.read("s1") == LOG[:5]

    def test_append_must_be_contiguous(self, store: Store) -> None:
        self.populate(store, LOG[:3])
        with store.writer("s1") as writer, pytest.raises(turnlog.UsageError):
            writer.append([LOG[3], LOG[5]], expected_seq=3, sync=False)
        assert store.read("s1") == LOG[:3]

    def test_second_writer_is_refused_until_the_first_closes(self, store: Store) -> None:
        self.populate(store, LOG[:2])
        first = store.writer("s1")
        assert store.lock_holder("s1") is not None
        with pytest.raises(turnlog.SessionLockedError):
            store.writer("s1")
        first.close()
        assert store.lock_holder("s1") is None
        store.writer("s1").close()

    def test_create_twice_is_refused(self, store: Store) -> None:
        self.populate(store, LOG[:1])
        with pytest.raises(turnlog.SessionExistsError):
            store.create(LOG[0])

    def test_missing_session(self, store: Store) -> None:
        with pytest.raises(turnlog.SessionNotFoundError):
            store.read("nope")
        with pytest.raises(turnlog.SessionNotFoundError):
            store.writer("nope")

    @pytest.mark.parametrize(
        "bad",
        [
            "",
            "../x",
            "/abs",
            "a/b",
            "a\x00b",
            ".hidden",
            "x" * 129,
            "..",
            "a.agents/",
            "a.agents/../b",
            ".agents/b",
            "a.agents/b/c",
            "/".join(["a.agents"] * 9 + ["b"]),
        ],
    )
    def test_bad_session_ids_are_refused(self, store: Store, bad: str) -> None:
        with pytest.raises(turnlog.errors.InvalidSessionIdError):
            store.read(bad)
        header = Event(seq=0, data=ev.Session(session_id=bad))
        with pytest.raises(turnlog.errors.InvalidSessionIdError):
            store.create(header)

    def test_tail_decides_like_a_full_fold(self, store: Store) -> None:
        self.populate(store)
        tail = store.read_tail("s1").verdict()
        assert tail == turnlog.verdict(LOG)
        assert tail.session is not None and tail.session.session_id == "s1"

    def test_recover_through_the_contract(self, store: Store) -> None:
        self.populate(store)
        repairs = turnlog.recover(store, "s1").plan
        assert [e.type for e in repairs.events] == ["tool_result", "turn_end"]
        assert turnlog.recover(store, "s1").plan.events == ()
        assert store.read("s1")[: len(LOG)] == LOG
        assert not turnlog.recovery.interrupted(store.read("s1"))

    def test_writer_handle_over_the_store(self, store: Store) -> None:
        with turnlog.open(store, "w1", create=True) as log:
            log.user("hello")
            with log.turn(), log.step():
                log.assistant("hi")
        events = store.read("w1")
        assert [e.type for e in events] == [
            "session",
            "user_message",
            "turn_start",
            "step_start",
            "assistant_message",
            "step_end",
            "turn_end",
        ]
        with turnlog.open(store, "w1") as log:
            assert log.next_seq == len(events)
            assert log.state == fold(events)

    def test_prebuilt_events_keep_their_seq_ts_and_origin(self, store: Store) -> None:
        from turnlog.transfer import write_events

        imported = [
            msgspec.structs.replace(event, ts=f"2025-01-0{1 + event.seq % 9}T00:00:00Z")
            for event in LOG
        ]
        imported[3] = msgspec.structs.replace(imported[3], origin="import")
        assert write_events(store, imported) == len(LOG)
        assert store.read("s1") == imported
        with pytest.raises(turnlog.SessionExistsError):
            write_events(store, imported)

    def test_subagent_sessions_live_under_their_parent(self, store: Store) -> None:
        from turnlog.stores.base import child_session_id, parent_session_id

        self.populate(store)
        child = child_session_id("s1", "worker-1")
        grandchild = child_session_id(child, "helper")
        assert (child, parent_session_id(grandchild)) == ("s1.agents/worker-1", child)
        for session_id in (child, grandchild):
            header = Event(seq=0, data=ev.Session(session_id=session_id), ts=_TS)
            with store.create(header) as writer:
                writer.append(
                    [Event(seq=1, data=ev.UserMessage(content=session_id), ts=_TS)],
                    expected_seq=1,
                    sync=True,
                )
        assert store.children("s1") == [child]
        assert store.children(child) == [grandchild]
        assert {"s1", child, grandchild} <= set(store.sessions())
        assert store.read(grandchild)[1].data == ev.UserMessage(content=grandchild)
        assert turnlog.inspect(store, child).status == "idle"

    # -- threads and asyncio ---------------------------------------------------------
    #
    # Agent frameworks run parallel tool calls on threads, asyncio runs appends
    # on a writer thread, and readers watch a session while it is written: a
    # store works from any thread, with the same guarantees.

    def test_a_log_shared_by_eight_threads_answers_parallel_calls(self, store: Store) -> None:
        calls = [ToolCall(id=f"c{t}.{i}", name="work") for t in range(8) for i in range(3)]
        with turnlog.open(store, "par", create=True) as log:
            with log.turn(), log.step():
                log.assistant("fan out", calls)

                def answer(t: int) -> None:
                    for call in calls[t * 3 : t * 3 + 3]:
                        with log.dispatch(call) as running:
                            running.result(f"done {call.id}")

                _in_threads(8, answer)
            assert log.state == fold(store.read("par"))
        events = store.read("par")
        assert sorted(_assert_written_ahead(events)) == sorted(call.id for call in calls)
        assert turnlog.inspect(store, "par").status == "idle"
        assert store.lock_holder("par") is None

    def test_a_writer_made_on_one_thread_is_used_and_closed_on_another(self, store: Store) -> None:
        writer = _on_a_new_thread(lambda: store.create(LOG[0]))

        def write() -> None:
            writer.append(LOG[1:4], expected_seq=1, sync=True)
            writer.append_one(LOG[4], False)
            writer.sync()
            writer.close()

        _on_a_new_thread(write)
        assert store.lock_holder("s1") is None
        assert store.read("s1") == LOG[:5]
        # Reopened on yet another thread, appended to and closed on this one.
        again = _on_a_new_thread(lambda: store.writer("s1", check="tail"))
        assert again.next_seq == 5
        again.append(LOG[5:], expected_seq=5, sync=True)
        again.close()
        assert store.lock_holder("s1") is None
        assert store.read("s1") == LOG
        store.writer("s1").close()

    def test_the_asyncio_handle_runs_a_turn_of_parallel_calls(self, store: Store) -> None:
        from turnlog.aio import aopen, arun_turn
        from turnlog.fold import Message
        from turnlog.loop import Reply, Tool

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
        assert sorted(_assert_written_ahead(events)) == sorted(call.id for call in calls)
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
                    writer.append_one(Event(seq=seq, data=data, ts=_TS), seq % 50 == 0)
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

        _in_threads(3, read)
        writer.close()
        assert all(seen[1:]), seen
        assert len(store.read("s1")) == total
        # A stream may be read on other threads than the one that began it
        # (as `asyncio.to_thread(next, events)` does): it carries on.
        stream = store.iter_events("s1")
        first = _on_a_new_thread(lambda: next(stream))
        second = _on_a_new_thread(lambda: next(stream))
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
        assert f"testing.py:{line}; pid {os.getpid()})" in message, message
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
        self._refused_here(lambda: _on_a_new_thread(lambda: store.writer("s1")), line)
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
        from turnlog.aio import aopen

        self.populate(store, LOG[:2])

        async def main() -> int:
            line = sys._getframe().f_lineno + 1
            async with await aopen(store, "s1"):
                self._refused_here(lambda: store.writer("s1"), line)
            return line

        asyncio.run(main())
        store.writer("s1").close()

    # -- the whole-session write, check modes, fast paths, processes -------------

    def test_a_whole_session_write_is_atomic(self, store: Store) -> None:
        # Long enough to span batches: the damage is found after the first
        # batch went to the store, and nothing of it may stay.
        filler = [
            Event(seq=len(LOG) + i, data=ev.UserMessage(content=f"m{i}"), ts=_TS)
            for i in range(2500)
        ]
        broken = [*LOG, *filler[:2000], *filler[2001:]]
        with pytest.raises(turnlog.UsageError, match="contiguous"):
            store.write_session(broken)
        assert store.sessions() == [] and not store.exists("s1")
        assert store.write_session([*LOG, *filler]) == len(LOG) + len(filler)
        assert store.read("s1") == [*LOG, *filler]
        assert store.lock_holder("s1") is None
        with pytest.raises(turnlog.SessionExistsError):
            store.write_session(LOG)
        with pytest.raises(turnlog.UsageError):
            store.write_session([])

    def test_the_check_mode_is_validated_and_the_tail_handed_back(self, store: Store) -> None:
        self.populate(store)
        with pytest.raises(turnlog.UsageError, match="check"):
            store.writer("s1", check="fast")
        assert store.lock_holder("s1") is None
        with store.writer("s1", check="tail") as writer:
            assert writer.tail is not None
            assert writer.tail.verdict() == turnlog.verdict(LOG)
            assert writer.next_seq == len(LOG)
        with store.writer("s1", check="full") as writer:
            assert writer.next_seq == len(LOG)

    def test_the_single_event_fast_path_writes_what_the_batch_path_writes(
        self, store: Store
    ) -> None:
        # `append_one` is each store's hot path; `append` of one event is the
        # default it must agree with, event for event and refusal for refusal.
        for session_id, one in (("fast", True), ("batch", False)):
            events = [
                msgspec.structs.replace(
                    event,
                    data=ev.Session(session_id=session_id, created_at=_TS)
                    if event.seq == 0
                    else event.data,
                )
                for event in LOG
            ]
            with store.create(events[0]) as writer:
                for event in events[1:]:
                    if one:
                        writer.append_one(event, sync=event.seq % 2 == 0)
                    else:
                        writer.append((event,), expected_seq=event.seq, sync=event.seq % 2 == 0)
                with pytest.raises(turnlog.errors.SeqConflictError):
                    if one:
                        writer.append_one(events[3], sync=False)
                    else:
                        writer.append((events[3],), expected_seq=3, sync=False)
                assert writer.next_seq == len(LOG)
        fast, batch = store.read("fast"), store.read("batch")
        assert (
            [e.data for e in fast[1:]] == [e.data for e in batch[1:]] == [e.data for e in LOG[1:]]
        )
        assert store.sweep_candidates() == ["batch", "fast"]
        verdicts = [
            msgspec.structs.replace(store.read_tail(sid).verdict(), session=None)
            for sid in ("fast", "batch")
        ]
        assert verdicts[0] == verdicts[1]
        assert verdicts[0] == msgspec.structs.replace(turnlog.verdict(LOG), session=None)

    def test_every_read_fast_path_answers_as_its_default(self, store: Store) -> None:
        # Each override of a `Store` default (streaming, backward, header,
        # tail, scan, children, sweep candidates) must answer as the default
        # answers, the default being written on `read` and `sessions` alone.
        self.populate(store)
        closed = [
            msgspec.structs.replace(event, data=ev.Session(session_id="s2", created_at=_TS))
            if event.seq == 0
            else event
            for event in LOG[:8]
        ]
        self.populate(store, closed)
        child_header = Event(
            seq=0,
            data=ev.Session(
                session_id="s1.agents/w",
                created_at=_TS,
                spawned_by=ev.SpawnedBy(session_id="s1"),
            ),
            ts=_TS,
        )
        store.create(child_header).close()
        for session_id in store.sessions():
            events = store.read(session_id)
            assert list(store.iter_events(session_id)) == list(Store.iter_events(store, session_id))
            assert list(store.iter_newest_first(session_id)) == events[::-1]
            assert store.read_header(session_id) == Store.read_header(store, session_id)
            # What a tail decides by; how many bytes it read is the store's own.
            fast_tail, default_tail = (
                store.read_tail(session_id),
                Store.read_tail(store, session_id),
            )
            assert (fast_tail.header, fast_tail.events, fast_tail.revivals_before) == (
                default_tail.header,
                default_tail.events,
                default_tail.revivals_before,
            )
            assert fast_tail.verdict() == default_tail.verdict()
            assert store.scan(session_id) == Store.scan(store, session_id)
            assert store.read(session_id, 5) == events[5:]
            assert store.children(session_id) == Store.children(store, session_id)
        # An index of open turns may leave out closed sessions, never an open one.
        candidates = store.sweep_candidates()
        assert set(candidates) <= set(Store.sweep_candidates(store))
        assert candidates == sorted(candidates)
        assert "s1" in candidates
        assert store.children("s1") == ["s1.agents/w"]

    #: False for a store another process cannot open (the memory store).
    process_safe = True

    def make_foreign(self, tmp_path: Path) -> tuple[Store, Path] | None:
        """A store over another program's file (where session "s1" would be,
        or the whole database), and that file; None for a store with no files."""
        return None

    def test_a_foreign_file_is_refused_and_left_as_it_was(self, tmp_path: Path) -> None:
        made = self.make_foreign(tmp_path)
        if made is None:
            pytest.skip("the store keeps no files")
        store, path = made
        folder = path.parent

        def snapshot() -> dict[str, bytes]:
            return {entry.name: entry.read_bytes() for entry in sorted(folder.iterdir())}

        before = snapshot()
        attempts: list[Callable[[], object]] = [
            lambda: store.read("s1"),
            lambda: store.read_tail("s1"),
            lambda: store.writer("s1"),
            lambda: store.writer("s1", check="tail"),
            lambda: store.create(LOG[0]),
            lambda: store.write_session(LOG),
        ]
        with store:
            for attempt in attempts:
                with pytest.raises(turnlog.NotASessionError):
                    attempt()
                assert snapshot() == before

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
