"""The PostgreSQL store beyond the contract: a fleet of processes, kills, sweepers, tenants."""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

import turnlog
from builders import crashed_session, put
from entry_point import cli
from store_workers import race_for_one_session, stale_writers_conflict_and_change_nothing, worker
from turnlog import events as ev

psycopg = pytest.importorskip("psycopg")

from turnlog.stores.postgres import PostgresStore  # noqa: E402 - after the skip

_names = itertools.count()


@pytest.fixture
def url(postgres_url: str) -> Iterator[str]:
    """A store URL of a schema of this test's own."""
    yield f"{postgres_url}?schema=p{os.getpid()}_{next(_names)}"


def test_the_cli_works_on_postgres(url: str) -> None:
    store, _ = turnlog.open_store(url)
    put(store, crashed_session("s1"))
    code, out, _ = cli("inspect", "s1", "--store", url, "--json")
    found = json.loads(out)
    assert code == 0 and found["status"] == "interrupted"
    assert [(c["call_id"], c["rule"]) for c in found["owed_calls"]] == [("a", "R1"), ("b", "R2")]
    assert len(json.loads(cli("recover", "s1", "--store", url, "--json")[1])["appended"]) == 4
    assert json.loads(cli("recover", "s1", "--store", url, "--json")[1])["appended"] == []
    assert cli("verify", "--store", url)[0] == 0
    assert cli("export", "s1", "--store", url, "--to", "anthropic", "--validate")[0] == 0


def test_a_stale_writer_conflicts_and_changes_nothing(url: str) -> None:
    store, _ = turnlog.open_store(url)
    stale_writers_conflict_and_change_nothing(store)


def test_a_wrong_server_is_a_clear_error() -> None:
    code, _, err = cli("ls", "--store", "postgresql://nobody@127.0.0.1:1/none")
    assert code == 3 and "hint:" in err and "server running" in err


def test_eight_processes_on_eight_sessions_and_eight_racing_for_one(url: str) -> None:
    store, _ = turnlog.open_store(url)
    store.init()
    workers = [worker(url, f"w{i}", "none", 100) for i in range(8)]
    assert [w.wait(timeout=180) for w in workers] == [0] * 8
    for i in range(8):
        events = store.read(f"w{i}")
        assert [e.seq for e in events] == list(range(101))
    with turnlog.open(store, "one"):
        pass
    race_for_one_session(url, "one", 10)
    events = store.read("one")
    assert [e.seq for e in events] == list(range(12))


@pytest.mark.parametrize("how", ["kill -9", "pg_terminate_backend"])
def test_a_dead_writer_is_interrupted_and_recovered_once(
    url: str, postgres_url: str, how: str
) -> None:
    store, _ = turnlog.open_store(url)
    store.init()
    writer = worker(url, "k", "always", 5, hold=True)
    assert writer.stdout is not None and writer.stdout.readline().strip() == "ready"
    assert turnlog.inspect(store, "k").status == "running"
    if how == "kill -9":
        writer.send_signal(signal.SIGKILL)
        writer.wait(timeout=30)
    else:
        holder = store.lock_holder("k")
        assert holder is not None and holder.detail is not None
        backend = int(holder.detail.rsplit(" ", 1)[1])
        with psycopg.connect(postgres_url, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (backend,))
    deadline = time.monotonic() + 10
    while turnlog.inspect(store, "k").status == "running" and time.monotonic() < deadline:
        time.sleep(0.05)
    found = turnlog.inspect(store, "k")
    assert found.status == "interrupted" and found.events == 7
    assert [(s.session_id, s.action, s.appended) for s in turnlog.sweeper.sweep(store)] == [
        ("k", "recovered", 1)
    ]
    assert turnlog.sweeper.sweep(store) == []
    writer.kill()
    writer.wait(timeout=30)


SWEEPER = """
import sys, json, turnlog
from turnlog.ops.sweep import sweep
store, _ = turnlog.open_store(sys.argv[1])
print(json.dumps([s.session_id for s in sweep(store) if s.action == "recovered"]))
"""


def test_four_sweepers_over_two_hundred_crashed_sessions(url: str) -> None:
    store, _ = turnlog.open_store(url)
    for i in range(200):
        put(store, crashed_session(f"s{i:03d}"))
    for i in range(20):
        events = crashed_session(f"fine{i:02d}")[:2]
        put(store, events)
    assert len(store.sweep_candidates()) == 200
    sweepers = [
        subprocess.Popen([sys.executable, "-c", SWEEPER, url], stdout=subprocess.PIPE, text=True)
        for _ in range(4)
    ]
    recovered: list[str] = []
    for sweeper in sweepers:
        out, _ = sweeper.communicate(timeout=300)
        assert sweeper.returncode == 0
        recovered += json.loads(out)
    assert sorted(recovered) == [f"s{i:03d}" for i in range(200)]
    for i in range(0, 200, 7):
        ends = [e for e in store.read(f"s{i:03d}") if isinstance(e.data, ev.TurnEnd)]
        assert len(ends) == 1
    assert store.sweep_candidates() == []


def test_a_tenant_cannot_see_count_append_to_or_sweep_another(url: str, postgres_url: str) -> None:
    admin_store, _ = turnlog.open_store(url)
    admin_store.init()
    assert isinstance(admin_store, PostgresStore)
    schema = admin_store.schema
    with psycopg.connect(postgres_url, autocommit=True) as admin:
        for role in ("tenant_a", "tenant_b"):
            if not admin.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,)).fetchone():
                admin.execute(f"CREATE ROLE {role} LOGIN")
            admin.execute(f'GRANT USAGE ON SCHEMA "{schema}" TO {role}')
            admin.execute(
                f'GRANT SELECT, INSERT, UPDATE ON ALL TABLES IN SCHEMA "{schema}" TO {role}'
            )
    base, _, query = url.partition("?")
    as_a = base.replace("postgres@", "tenant_a@") + "?" + query
    as_b = base.replace("postgres@", "tenant_b@") + "?" + query
    store_a, _ = turnlog.open_store(as_a)
    store_b, _ = turnlog.open_store(as_b)
    put(store_a, crashed_session("secret"))
    assert store_a.sessions() == ["secret"]
    assert store_b.sessions() == [] and not store_b.exists("secret")
    assert store_b.sweep_candidates() == []
    with pytest.raises(turnlog.SessionNotFoundError):
        store_b.writer("secret")
    with psycopg.connect(as_b.partition("?")[0], autocommit=True) as b:
        b.execute(f'SET search_path = "{schema}"')
        assert b.execute("SELECT count(*) FROM turnlog_events").fetchone() == (0,)
        assert b.execute("SELECT count(*) FROM turnlog_sessions").fetchone() == (0,)
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            b.execute(
                "INSERT INTO turnlog_sessions (tenant, session_id, next_seq) "
                "VALUES ('tenant_a', 'forged', 1)"
            )
    assert json.loads(cli("sweep", as_b, "--json")[1])["sessions"] == []
    assert turnlog.inspect(store_a, "secret").status == "interrupted"


def test_a_newer_schema_is_refused(url: str, postgres_url: str) -> None:
    store, _ = turnlog.open_store(url)
    store.init()
    assert isinstance(store, PostgresStore)
    with psycopg.connect(postgres_url, autocommit=True) as admin:
        admin.execute(f'INSERT INTO "{store.schema}".turnlog_schema_version VALUES (99)')
    fresh, _ = turnlog.open_store(url)
    with pytest.raises(turnlog.UsageError, match="schema version 99"):
        fresh.sessions()
