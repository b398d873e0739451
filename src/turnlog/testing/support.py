"""What every part of the store contract shares: the session it writes, the store
fixture, and running work on threads of their own."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

import pytest

from turnlog import events as ev
from turnlog.events import Event, ToolCall
from turnlog.stores.base import Store

TS = "2026-11-29T12:00:00.000000Z"
_T = TypeVar("_T")


def on_a_new_thread(fn: Callable[[], _T]) -> _T:
    """Run `fn` on a thread of its own and hand back its result or its error."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(fn).result(timeout=60)


def in_threads(count: int, work: Callable[[int], None]) -> None:
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


def assert_written_ahead(events: Sequence[Event]) -> dict[str, int]:
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


def contract_log() -> list[Event]:
    call_a = ToolCall(id="a", name="pay")
    call_b = ToolCall(id="b", name="rm")
    payloads: list[ev.EventData] = [
        ev.Session(session_id="s1", created_at=TS),
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
    return [Event(seq=i, data=data, ts=TS) for i, data in enumerate(payloads)]


#: The session every contract test writes: a closed turn, then one that
#: crashed with a dispatched call.
CONTRACT_LOG = contract_log()
LOG = CONTRACT_LOG


class ContractBase:
    """The store under test, made by `make_store`, and a way to fill it."""

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

    #: False for a store another process cannot open (the memory store).
    process_safe = True

    def make_foreign(self, tmp_path: Path) -> tuple[Store, Path] | None:
        """A store over another program's file (where session "s1" would be,
        or the whole database), and that file; None for a store with no files."""
        return None
