"""The hot append (one event, inlined for speed) and the batch append
(`append_many`, through `write`) keep one set of rules: over the same events
in every durability mode, each syncs the same events, folds to the same
state, and refuses the same out-of-order write with the same words."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pytest

import turnlog
from turnlog import events as ev
from turnlog.core.durability import DURABILITY_MODES
from turnlog.events import Event
from turnlog.stores import MemoryStore

CALL = turnlog.ToolCall(id="c1", name="pay", arguments={"usd": 5})

# A turn that touches every rule: a durable dispatch, a result, a turn end
# (barriers), the rest not, and one custom event.
SESSION: list[ev.EventData] = [
    ev.TurnStart(turn=1),
    ev.UserMessage(content="pay"),
    ev.StepStart(turn=1, step=1),
    ev.AssistantMessage(content="paying", tool_calls=[CALL]),
    ev.ToolDispatch(call_id="c1", name="pay", idempotency="destructive"),
    ev.ToolResult(call_id="c1", name="pay", content="paid"),
    ev.StepEnd(turn=1, step=1, outcome="ok"),
    ev.Custom(type="x_note", fields={"n": 1}),
    ev.TurnEnd(reason="complete", turn=1, steps=1),
]

# Writes each rule refuses, after the session's first `n` events.
REFUSED: list[tuple[int, ev.EventData]] = [
    (3, ev.ToolResult(call_id="c1", name="pay", content="paid")),  # asked, not dispatched
    (2, ev.ToolDispatch(call_id="c9", name="pay")),  # never asked for
    (5, ev.TurnEnd(reason="complete", turn=1, steps=1)),  # a call owed, a step open
]


def _log(durability: str) -> tuple[turnlog.Log, list[tuple[int, bool]]]:
    log = turnlog.open(MemoryStore(), "s", create=True, durability=durability)  # type: ignore[arg-type]
    synced: list[tuple[int, bool]] = []

    def seen(events: Sequence[Event], sync: bool) -> None:
        synced.extend((event.seq, sync) for event in events)

    log.subscribe(seen)
    return log, synced


def _one(log: turnlog.Log, data: ev.EventData) -> None:
    log.append(data)


def _batch(log: turnlog.Log, data: ev.EventData) -> None:
    log.append_many([data])


PATHS: dict[str, Callable[[turnlog.Log, ev.EventData], None]] = {"one": _one, "batch": _batch}


@pytest.mark.parametrize("durability", DURABILITY_MODES)
def test_both_appends_sync_and_fold_alike(durability: str) -> None:
    outcome = {}
    for name, write in PATHS.items():
        log, synced = _log(durability)
        for data in SESSION:
            write(log, data)
        outcome[name] = (synced, log.store.read("s")[1:], log.open_turn, log.next_seq)
        log.close()
    assert outcome["one"][0] == outcome["batch"][0]
    assert [e.data for e in outcome["one"][1]] == [e.data for e in outcome["batch"][1]]
    assert outcome["one"][2:] == outcome["batch"][2:]
    barriers = {
        e.seq for e in outcome["one"][1] if isinstance(e.data, ev.ToolDispatch | ev.TurnEnd)
    }
    synced = {seq for seq, sync in outcome["one"][0] if sync}
    want = {
        "always": {seq for seq, _ in outcome["one"][0]},
        "barrier": barriers,
        "none": set(),
    }[durability]
    assert synced == want


@pytest.mark.parametrize(("after", "refused"), REFUSED)
def test_both_appends_refuse_alike_and_write_nothing(after: int, refused: ev.EventData) -> None:
    words = {}
    for name, write in PATHS.items():
        log, _ = _log("barrier")
        for data in SESSION[:after]:
            write(log, data)
        before = log.store.read("s")
        with pytest.raises(turnlog.TurnlogError) as error:
            write(log, refused)
        assert log.store.read("s") == before
        assert log.next_seq == len(before)
        words[name] = (type(error.value), str(error.value))
        log.close()
    assert words["one"] == words["batch"]
