"""The store contract's basics: create, read, append, one writer, ids, the tail, children."""

from __future__ import annotations

import msgspec
import pytest

import turnlog
from turnlog import events as ev
from turnlog.core.fold import fold
from turnlog.events import Event
from turnlog.stores.base import Store
from turnlog.testing.support import (
    LOG,
    TS,
    ContractBase,
)


class BasicContract(ContractBase):
    """Sessions written and read back, one writer at a time, as every store must."""

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
        from turnlog.ops.transfer import write_events

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
            header = Event(seq=0, data=ev.Session(session_id=session_id), ts=TS)
            with store.create(header) as writer:
                writer.append(
                    [Event(seq=1, data=ev.UserMessage(content=session_id), ts=TS)],
                    expected_seq=1,
                    sync=True,
                )
        assert store.children("s1") == [child]
        assert store.children(child) == [grandchild]
        assert {"s1", child, grandchild} <= set(store.sessions())
        assert store.read(grandchild)[1].data == ev.UserMessage(content=grandchild)
        assert turnlog.inspect(store, child).status == "idle"
