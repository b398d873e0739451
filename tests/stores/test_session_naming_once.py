"""A session named on the command line is resolved once at the edge: `turnlog
recover PATH` checks the id once per store, and reads the file's head once."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import turnlog.stores.jsonl.backward as backward
import turnlog.stores.jsonl.store as jsonl_store
from builders import crashed_session, put
from turnlog import events as ev
from turnlog.cli import main
from turnlog.stores import JSONLStore, open_store


def counted(monkeypatch: pytest.MonkeyPatch, counts: Counter[str], module: Any, name: str) -> None:
    real = getattr(module, name)

    def counting(*args: Any, **kwargs: Any) -> Any:
        counts[name] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, counting)


def test_recover_by_path_checks_the_id_once_and_reads_the_head_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    put(JSONLStore(tmp_path), crashed_session("s1"))
    # The tests' self-check reads the whole log around every recovery: off,
    # to count what a user's command reads.
    monkeypatch.delenv("TURNLOG_SELF_CHECK", raising=False)
    counts: Counter[str] = Counter()
    counted(monkeypatch, counts, jsonl_store, "validate_session_id")
    counted(monkeypatch, counts, jsonl_store, "read_head")
    counted(monkeypatch, counts, backward, "read_head")
    with pytest.raises(SystemExit) as done:
        main(["recover", str(tmp_path / "s1.jsonl")])
    assert done.value.code == 0
    # Before: 12 checks in the store (every path derived from the id checked
    # it again) and two reads of the head (the writer's proof, then the tail's).
    assert counts == {"validate_session_id": 1, "read_head": 1}
    store, _ = open_store(tmp_path)
    assert isinstance(store.read_tail("s1").events[-1].data, ev.TurnEnd)


def test_a_store_remembers_a_bounded_number_of_layouts(tmp_path: Path) -> None:
    store = JSONLStore(tmp_path)
    for index in range(jsonl_store._MAX_LAYOUTS_CACHED + 10):
        store.path(f"s{index}")
    assert len(store._layouts) <= jsonl_store._MAX_LAYOUTS_CACHED
    assert store.path("p.agents/child") == str(tmp_path / "p.agents" / "child.jsonl")
