"""The store contract (`turnlog.testing.StoreContract`), run against every backend."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import make_store
from turnlog.stores import Store
from turnlog.testing import StoreContract


class TestMemoryStore(StoreContract):
    process_safe = False

    def make_store(self, tmp_path: Path) -> Store:
        return make_store("memory", tmp_path)


class TestJSONLStore(StoreContract):
    def make_store(self, tmp_path: Path) -> Store:
        return make_store("jsonl", tmp_path)


class TestSQLiteStore(StoreContract):
    def make_store(self, tmp_path: Path) -> Store:
        return make_store("sqlite", tmp_path)


class TestPostgresStore(StoreContract):
    @pytest.fixture(autouse=True)
    def _server(self, request: pytest.FixtureRequest) -> None:
        self._request = request

    def make_store(self, tmp_path: Path) -> Store:
        return make_store("postgres", tmp_path, self._request)
