"""The store contract (`turnlog.testing.StoreContract`), run against every backend."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from conftest import make_store
from turnlog.stores import JSONLStore, SQLiteStore, Store
from turnlog.testing import StoreContract


class TestMemoryStore(StoreContract):
    process_safe = False

    def make_store(self, tmp_path: Path) -> Store:
        return make_store("memory", tmp_path)


class TestJSONLStore(StoreContract):
    def make_store(self, tmp_path: Path) -> Store:
        return make_store("jsonl", tmp_path)

    def make_foreign(self, tmp_path: Path) -> tuple[Store, Path]:
        # A Claude Code transcript where session s1 would be.
        folder = tmp_path / "foreign"
        folder.mkdir()
        path = folder / "s1.jsonl"
        path.write_text('{"type":"user","sessionId":"abc","parentUuid":null}\n')
        return JSONLStore(folder), path


class TestSQLiteStore(StoreContract):
    def make_store(self, tmp_path: Path) -> Store:
        return make_store("sqlite", tmp_path)

    def make_foreign(self, tmp_path: Path) -> tuple[Store, Path]:
        # Another application's database, in WAL mode as many are.
        folder = tmp_path / "foreign"
        folder.mkdir()
        path = folder / "app.db"
        connection = sqlite3.connect(path)
        connection.execute("PRAGMA journal_mode=WAL")
        connection.execute("CREATE TABLE events (id INTEGER PRIMARY KEY, what TEXT)")
        connection.commit()
        connection.close()
        return SQLiteStore(path), path


class TestPostgresStore(StoreContract):
    @pytest.fixture(autouse=True)
    def _server(self, request: pytest.FixtureRequest) -> None:
        self._request = request

    def make_store(self, tmp_path: Path) -> Store:
        return make_store("postgres", tmp_path, self._request)
