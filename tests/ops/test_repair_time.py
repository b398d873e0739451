"""A repair is stamped with when it was written, as every appended event is;
a plan made without writing stays pure (the last event's time)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

import turnlog
from builders import TS, crashed_session, put
from turnlog.stores import JSONLStore


def _repaired_at(store: JSONLStore, before: int) -> list[dt.datetime]:
    return [
        dt.datetime.fromisoformat(str(event.ts).replace("Z", "+00:00"))
        for event in store.read("s1")[before:]
    ]


@pytest.mark.parametrize("how", ["recover", "open-recover", "revive", "sweep"])
def test_a_repair_carries_the_time_it_was_written(tmp_path: Path, how: str) -> None:
    store = JSONLStore(tmp_path)
    events = crashed_session("s1")
    assert {event.ts for event in events} == {TS}  # the crash, long ago
    put(store, events)
    planned = turnlog.plan(store.read("s1")).events
    assert planned and {event.ts for event in planned} == {TS}
    started = dt.datetime.now(dt.UTC).replace(microsecond=0)
    if how == "recover":
        turnlog.recover(store, "s1")
    elif how == "open-recover":
        turnlog.open(store, "s1", recover=True).close()
    elif how == "revive":
        with turnlog.open(store, "s1") as log:
            turnlog.revive(log)
    else:
        turnlog.sweep(store)
    written = _repaired_at(store, len(events))
    assert len(written) >= len(planned)
    assert all(stamp >= started for stamp in written), written
