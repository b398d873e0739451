"""The store contract, written once and run against every backend."""

from __future__ import annotations

import pytest

import turnlog
from builders import assistant, call, dispatch, number, result, step_start, turn_end, turn_start
from turnlog import events as ev
from turnlog.events import Event
from turnlog.stores import Store

LOG = number(
    [
        ev.UserMessage(content="hi"),
        turn_start(1),
        step_start(1, 1),
        assistant(call("a", "pay")),
        dispatch("a", "pay"),
        result("a", "pay"),
        turn_end(1),
        ev.UserMessage(content="again"),
        turn_start(2),
        assistant(call("b", "rm")),
        dispatch("b", "rm"),
    ]
)


def populate(store: Store, events: list[Event] = LOG) -> None:
    with store.create(events[0]) as writer:
        writer.append(events[1:], expected_seq=1, sync=True)


def test_create_read_round_trip(store: Store) -> None:
    populate(store)
    assert store.read("s1") == LOG
    assert store.read("s1", from_seq=5) == LOG[5:]
    assert store.read("s1", from_seq=len(LOG)) == []
    assert store.sessions() == ["s1"]
    assert store.exists("s1") and not store.exists("s2")
    assert store.read_header("s1") == LOG[0]


def test_append_with_wrong_expected_seq_conflicts(store: Store) -> None:
    populate(store, LOG[:3])
    with store.writer("s1") as writer:
        with pytest.raises(turnlog.SeqConflictError) as info:
            writer.append(LOG[4:5], expected_seq=4, sync=False)
        assert (info.value.expected, info.value.actual) == (4, 3)
        writer.append(LOG[3:5], expected_seq=3, sync=False)
    assert store.read("s1") == LOG[:5]


def test_append_must_be_contiguous(store: Store) -> None:
    populate(store, LOG[:3])
    with store.writer("s1") as writer, pytest.raises(turnlog.UsageError):
        writer.append([LOG[3], LOG[5]], expected_seq=3, sync=False)
    assert store.read("s1") == LOG[:3]


def test_second_writer_is_refused_until_the_first_closes(store: Store) -> None:
    populate(store, LOG[:2])
    first = store.writer("s1")
    assert store.lock_holder("s1") is not None
    with pytest.raises(turnlog.SessionLockedError):
        store.writer("s1")
    first.close()
    assert store.lock_holder("s1") is None
    store.writer("s1").close()


def test_create_twice_is_refused(store: Store) -> None:
    populate(store, LOG[:1])
    with pytest.raises(turnlog.SessionExistsError):
        store.create(LOG[0])


def test_missing_session(store: Store) -> None:
    with pytest.raises(turnlog.SessionNotFoundError):
        store.read("nope")
    with pytest.raises(turnlog.SessionNotFoundError):
        store.writer("nope")


@pytest.mark.parametrize("bad", ["", "../x", "/abs", "a/b", "a\x00b", ".hidden", "x" * 129, ".."])
def test_bad_session_ids_are_refused(store: Store, bad: str) -> None:
    with pytest.raises(turnlog.InvalidSessionIdError):
        store.read(bad)
    header = Event(seq=0, data=ev.Session(session_id=bad))
    with pytest.raises(turnlog.InvalidSessionIdError):
        store.create(header)


def test_tail_decides_like_a_full_fold(store: Store) -> None:
    populate(store)
    tail = store.read_tail("s1").verdict()
    assert tail == turnlog.verdict(LOG)
    assert tail.session is not None and tail.session.session_id == "s1"


def test_recover_through_the_contract(store: Store) -> None:
    populate(store)
    repairs = turnlog.recover(store, "s1").plan
    assert [e.type for e in repairs.events] == ["tool_result", "turn_end"]
    assert turnlog.recover(store, "s1").plan.events == ()
    assert store.read("s1")[: len(LOG)] == LOG
    assert not turnlog.interrupted(store.read("s1"))


def test_writer_handle_over_the_store(store: Store) -> None:
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
        assert log.state == turnlog.fold(events)
