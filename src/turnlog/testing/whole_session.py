"""The store contract for whole-session writes, check modes, fast paths and foreign files."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import msgspec
import pytest

import turnlog
from turnlog import events as ev
from turnlog.events import Event
from turnlog.stores.base import Store
from turnlog.testing.support import (
    LOG,
    TS,
    ContractBase,
)


class WholeSessionContract(ContractBase):
    """Writes that appear whole or not at all, and every fast path equal to its default."""

    # -- the whole-session write, check modes, fast paths, processes -------------

    def test_a_whole_session_write_is_atomic(self, store: Store) -> None:
        # Long enough to span batches: the damage is found after the first
        # batch went to the store, and nothing of it may stay.
        filler = [
            Event(seq=len(LOG) + i, data=ev.UserMessage(content=f"m{i}"), ts=TS)
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
                    data=ev.Session(session_id=session_id, created_at=TS)
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
            msgspec.structs.replace(event, data=ev.Session(session_id="s2", created_at=TS))
            if event.seq == 0
            else event
            for event in LOG[:8]
        ]
        self.populate(store, closed)
        child_header = Event(
            seq=0,
            data=ev.Session(
                session_id="s1.agents/w",
                created_at=TS,
                spawned_by=ev.SpawnedBy(session_id="s1"),
            ),
            ts=TS,
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

    def test_a_skim_hands_over_what_a_read_holds(self, store: Store) -> None:
        # A skim is optional (None: read the careful way); one that answers
        # hands over exactly the records of the asked-for types, in order,
        # each decoding to the event a read gives, and counts them all. The
        # same through an index, made on the first skim and read on the next.
        self.populate(store)
        events = store.read("s1")
        asked = ("user_message", "tool_result", "turn_end")
        for index in (None, "contract", "contract"):
            handed: dict[str, list[tuple[int, bytes | memoryview]]] = {name: [] for name in asked}
            count = store.skim("s1", {name: handed[name].append for name in asked}, index=index)
            if count is None:
                continue
            assert count == len(events)
            got = sorted((seq, bytes(record)) for kept in handed.values() for seq, record in kept)
            want = [event for event in events if event.type in asked]
            assert [seq for seq, _ in got] == [event.seq for event in want]
            assert [ev.decode_event(record) for _, record in got] == want

    def test_reading_records_always_answers_what_a_read_holds(self, store: Store) -> None:
        # `read_records` is what readers call: a skim where the store can,
        # else the careful read; either way the records of the asked-for
        # types in seq order (a list shared by two types gets both), each
        # decoding to the event a read gives, and the session's next seq.
        self.populate(store)
        events = store.read("s1")
        shared: list[tuple[int, bytes | memoryview]] = []
        ended: list[tuple[int, bytes | memoryview]] = []
        into = {"user_message": shared, "tool_result": shared, "turn_end": ended}
        for index in (None, "contract"):
            shared.clear()
            ended.clear()
            assert store.read_records("s1", into, index=index) == len(events)
            for kept, types in ((shared, ("user_message", "tool_result")), (ended, ("turn_end",))):
                want = [event for event in events if event.type in types]
                assert [seq for seq, _ in kept] == [event.seq for event in want]
                assert [ev.decode_event(bytes(record)) for _, record in kept] == want

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
