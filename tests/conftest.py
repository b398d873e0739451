"""Shared fixtures: every store backend the contract runs against."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from turnlog.stores import JSONLStore, MemoryStore, Store

BACKENDS = ["memory", "jsonl"]


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    backend: Store = (
        MemoryStore() if request.param == "memory" else JSONLStore(tmp_path / "sessions")
    )
    with backend:
        yield backend
