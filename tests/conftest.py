"""Shared fixtures: the stores tests run against, and a PostgreSQL server for them."""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from postgres_server import REQUIRE_ENV, postgres_dsn
from turnlog.selfcheck import ENV as SELF_CHECK_ENV
from turnlog.stores import JSONLStore, MemoryStore, SQLiteStore, Store

# Every recovery in every test, in this process and in the processes tests
# start, asserts that the recovered session exports valid for all four
# providers (turnlog.selfcheck).
os.environ[SELF_CHECK_ENV] = "1"

_schemas = itertools.count()


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A PostgreSQL server for the session's tests. Without one, the tests that
    need it skip with the reason, except under TURNLOG_REQUIRE_POSTGRES=1 (CI),
    where that is a failure."""
    with postgres_dsn() as dsn:
        if dsn is None:
            reason = "no PostgreSQL server binaries (initdb, pg_ctl) on this machine"
            if os.environ.get(REQUIRE_ENV) == "1":
                pytest.fail(f"{REQUIRE_ENV}=1 but {reason}")
            pytest.skip(reason)
        yield dsn


def make_store(kind: str, tmp_path: Path, request: pytest.FixtureRequest | None = None) -> Store:
    if kind == "memory":
        return MemoryStore()
    if kind == "jsonl":
        return JSONLStore(tmp_path / "sessions")
    if kind == "sqlite":
        return SQLiteStore(tmp_path / "sessions.db")
    assert request is not None
    from turnlog.stores.postgres import PostgresStore

    # A schema of its own per test: the same server, no test sees another's rows.
    schema = f"t{os.getpid()}_{next(_schemas)}"
    return PostgresStore(request.getfixturevalue("postgres_url"), schema=schema)
