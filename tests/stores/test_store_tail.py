"""A late result (after a later message than its asker) is read from the tail as from the whole log."""

from __future__ import annotations

from pathlib import Path

import pytest

import turnlog
from builders import assistant, call, dispatch, number, put, result, turn_end, turn_start
from turnlog import events as ev
from turnlog.stores import JSONLStore, SQLiteStore, Store

# The model asked for a call, then answered without waiting for it; the
# result came after that answer, and the turn ended. A whole-log fold places
# the result beside its asker, so the session is finished; a tail that stops
# at the answer would place it last and call the session unfinished.
LATE = number(
    [
        ev.UserMessage(content="go"),
        turn_start(1),
        assistant(call("ghost", "probe")),
        dispatch("ghost", "probe"),
        assistant(content="done"),
        result("ghost", "probe"),
        turn_end(1),
    ]
)


@pytest.mark.parametrize("kind", ["jsonl", "sqlite"])
def test_a_late_result_reads_the_same_from_the_tail(tmp_path: Path, kind: str) -> None:
    store: Store = JSONLStore(tmp_path) if kind == "jsonl" else SQLiteStore(tmp_path / "s.db")
    put(store, LATE)
    whole = turnlog.verdict(LATE)
    assert whole.finished
    assert store.read_tail("s1").verdict() == whole
    assert turnlog.inspect(store, "s1").status == "finished"
