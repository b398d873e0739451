"""Shared fixtures: every store backend the contract runs against."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from turnlog.stores import JSONLStore, MemoryStore, SQLiteStore, Store

BACKENDS = ["memory", "jsonl", "sqlite"]


def make_store(kind: str, tmp_path: Path) -> Store:
    if kind == "memory":
        return MemoryStore()
    if kind == "jsonl":
        return JSONLStore(tmp_path / "sessions")
    return SQLiteStore(tmp_path / "sessions.db")


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    with make_store(request.param, tmp_path) as backend:
        yield backend
