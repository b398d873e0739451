"""The SQLite store beyond the contract: processes, kills, conflicts, damage, schema, the CLI."""

from __future__ import annotations

import json
import signal
import sqlite3
from pathlib import Path

import pytest

import turnlog
from builders import assistant, call, crashed_session, dispatch, number, put, step_start, turn_start
from entry_point import cli
from store_workers import race_for_one_session, stale_writers_conflict_and_change_nothing, worker
from turnlog import events as ev
from turnlog.stores import SQLiteStore, open_store

CRASHED = number(
    [
        ev.UserMessage(content="pay"),
        turn_start(1),
        step_start(1, 1),
        assistant(call("a", "pay"), call("b", "ls")),
        dispatch("a", "pay"),
    ]
)


def test_urls_name_the_database_as_sqlalchemy_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    relative, _ = open_store("sqlite:///rel.db")
    absolute, _ = open_store(f"sqlite:///{tmp_path}/abs.db")
    assert isinstance(relative, SQLiteStore) and relative.path == "rel.db"
    assert isinstance(absolute, SQLiteStore) and absolute.path == f"{tmp_path}/abs.db"
    with pytest.raises(turnlog.UsageError):
        open_store("sqlite:rel.db")


def test_the_cli_works_on_a_database(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/s.db"
    store = SQLiteStore(tmp_path / "s.db")
    with store.create(CRASHED[0]) as writer:
        writer.append(CRASHED[1:], expected_seq=1, sync=True)
    code, out, _ = cli("inspect", "s1", "--store", url, "--json")
    found = json.loads(out)
    assert code == 0 and found["status"] == "interrupted"
    assert [(c["call_id"], c["rule"]) for c in found["owed_calls"]] == [("a", "R1"), ("b", "R2")]
    code, out, _ = cli("recover", "s1", "--store", url, "--json")
    assert code == 0 and len(json.loads(out)["appended"]) == 4
    assert cli("recover", "s1", "--store", url)[0] == 0
    assert json.loads(cli("recover", "s1", "--store", url, "--json")[1])["appended"] == []
    assert cli("verify", "--store", url)[0] == 0
    for provider in ("anthropic", "openai-chat", "openai-responses", "gemini"):
        assert cli("export", "s1", "--store", url, "--to", provider, "--validate")[0] == 0
    code, out, _ = cli("ls", "--store", url, "--json")
    assert [r["status"] for r in json.loads(out)["sessions"]] == ["idle"]


def test_a_stale_writer_conflicts_and_changes_nothing(tmp_path: Path) -> None:
    stale_writers_conflict_and_change_nothing(SQLiteStore(tmp_path / "s.db"))


def test_a_damaged_row_refuses_the_session(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "s.db")
    with store.create(CRASHED[0]) as writer:
        writer.append(CRASHED[1:], expected_seq=1, sync=True)
    connection = sqlite3.connect(tmp_path / "s.db")
    connection.execute(
        "UPDATE events SET line = replace(line, 'pay', 'PAY') WHERE session_id = 's1' AND seq = 1"
    )
    connection.commit()
    connection.close()
    with pytest.raises(turnlog.CorruptLogError):
        store.read("s1")
    with pytest.raises(turnlog.CorruptLogError):
        turnlog.recover(store, "s1")
    assert turnlog.inspect(store, "s1").status == "corrupt"
    assert not turnlog.verify.verify_session(store, "s1").ok


def test_a_newer_schema_is_refused(tmp_path: Path) -> None:
    SQLiteStore(tmp_path / "s.db").init()
    connection = sqlite3.connect(tmp_path / "s.db")
    connection.execute("INSERT INTO schema_version VALUES (99)")
    connection.commit()
    connection.close()
    with pytest.raises(turnlog.UsageError, match="schema version 99"):
        SQLiteStore(tmp_path / "s.db").sessions()


def test_a_file_that_is_not_a_database_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "notes.db").write_text("hello, not a database\n" * 100)
    code, _, err = cli("ls", "--store", f"sqlite:///{tmp_path}/notes.db")
    assert code == 3 and "not an SQLite database" in err
    assert (tmp_path / "notes.db").read_text() == "hello, not a database\n" * 100


def test_eight_processes_on_eight_sessions_lose_nothing(tmp_path: Path) -> None:
    db = str(tmp_path / "s.db")
    SQLiteStore(db).sessions()
    workers = [worker(f"sqlite:///{db}", f"w{i}", "none", 150) for i in range(8)]
    assert [w.wait(timeout=120) for w in workers] == [0] * 8
    store = SQLiteStore(db)
    for i in range(8):
        events = store.read(f"w{i}")
        assert [e.seq for e in events] == list(range(151))
        assert [e.data.content for e in events[1:]] == [f"w{i} {n}" for n in range(150)]  # type: ignore[union-attr]


def test_eight_processes_racing_for_one_session_one_writes(tmp_path: Path) -> None:
    db = str(tmp_path / "s.db")
    with turnlog.open(SQLiteStore(db), "one"):
        pass
    race_for_one_session(f"sqlite:///{db}", "one", 50)
    events = SQLiteStore(db).read("one")
    assert [e.seq for e in events] == list(range(len(events))) and len(events) == 52


def test_a_killed_writer_goes_from_running_to_interrupted_and_recovers_once(
    tmp_path: Path,
) -> None:
    db = str(tmp_path / "s.db")
    SQLiteStore(db).sessions()
    writer = worker(f"sqlite:///{db}", "k", "always", 20, hold=True)
    assert writer.stdout is not None and writer.stdout.readline().strip() == "ready"
    store = SQLiteStore(db)
    assert turnlog.inspect(store, "k").status == "running"
    holder = store.lock_holder("k")
    assert holder is not None and holder.pid == writer.pid
    writer.send_signal(signal.SIGKILL)
    writer.wait(timeout=30)
    found = turnlog.inspect(store, "k")
    # Every acknowledged event is there: the header, 20 messages, the turn start.
    assert found.status == "interrupted" and found.events == 22
    assert [(s.session_id, s.action, s.appended) for s in turnlog.sweeper.sweep(store)] == [
        ("k", "recovered", 1)
    ]
    assert [s.action for s in turnlog.sweeper.sweep(store)] == []
    assert store.sweep_candidates() == []


def test_a_database_of_an_earlier_version_reads_and_its_old_columns_are_left_alone(
    tmp_path: Path,
) -> None:
    # Earlier versions kept sessions.next_seq, revivals and last_ts up to date
    # at every turn boundary; nothing ever read them. The schema (version 1)
    # is unchanged, so such a database reads and writes as it is, and the
    # values it holds are never written again.
    database = tmp_path / "old.db"
    store = SQLiteStore(database)
    put(store, crashed_session("s1"))
    store.close()
    connection = sqlite3.connect(database)
    connection.execute(
        "UPDATE sessions SET next_seq = 5, revivals = 2, last_ts = '2025-01-01T00:00:00Z'"
    )
    connection.commit()
    connection.close()
    store = SQLiteStore(database)
    assert turnlog.inspect(store, "s1").status == "interrupted"
    turnlog.recover(store, "s1")
    assert turnlog.inspect(store, "s1").status != "interrupted"
    store.close()
    connection = sqlite3.connect(database)
    row = connection.execute(
        "SELECT next_seq, revivals, last_ts, open_turn_seq FROM sessions"
    ).fetchone()
    version = connection.execute("SELECT version FROM schema_version").fetchall()
    connection.close()
    assert row == (5, 2, "2025-01-01T00:00:00Z", None)
    assert version == [(1,)]


def test_a_second_store_object_here_hides_and_deletes_nothing_another_process_wrote(
    tmp_path: Path,
) -> None:
    """The supervisor's shape that lost committed writes: this process reads
    the store through one object, then a second object on the same file is
    made and read; another process appends and exits. This process must see
    the new events at once, and so must a fresh process after this one drops
    both objects (proving the second file ours once opened it outside SQLite,
    which dropped the first object's locks)."""
    db = tmp_path / "s.db"
    url = f"sqlite:///{db}"
    with turnlog.open(url, "run-1") as log:
        log.user("hi")
    first = SQLiteStore(db)
    assert len(first.read("run-1")) == 2
    second = SQLiteStore(db)
    assert len(second.read("run-1")) == 2
    assert worker(url, "run-1", "barrier", 16).wait(timeout=120) == 0
    assert len(first.read("run-1")) == len(second.read("run-1")) == 18
    first.close()
    second.close()
    del first, second
    assert len(SQLiteStore(db).read("run-1")) == 18


def test_a_writer_through_a_symlink_is_seen_running_by_the_real_path(tmp_path: Path) -> None:
    """The lock files sit beside the file SQLite opens: a sweeper that names the
    database by its real path must not take a live writer's turn for a crash."""
    real = tmp_path / "real.db"
    link = tmp_path / "link.db"
    SQLiteStore(real).init()
    link.symlink_to(real)
    with turnlog.open(f"sqlite:///{link}", "s1") as log:
        log.user("pay")
        log.append(ev.TurnStart(turn=1, revivals=0))
        found = turnlog.inspect(f"sqlite:///{real}", "s1")
        assert found.status == "running", found
        assert SQLiteStore(real).lock_holder("s1") is not None


def test_a_dotdot_after_a_symlinked_folder_proves_the_file_sqlite_opens(tmp_path: Path) -> None:
    """`lnk/../x.db` is the `x.db` beside where the link points, as the kernel
    and SQLite resolve it, not the one its text names: that is the file proved."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b" / "deep").mkdir(parents=True)
    SQLiteStore(tmp_path / "a" / "x.db").init()
    other = tmp_path / "b" / "x.db"
    connection = sqlite3.connect(other)
    connection.execute("CREATE TABLE customers (id INTEGER)")
    connection.commit()
    connection.close()
    before = other.read_bytes()
    (tmp_path / "a" / "lnk").symlink_to(tmp_path / "b" / "deep")
    with pytest.raises(turnlog.NotASessionError, match="another application"):
        turnlog.open(f"sqlite:///{tmp_path}/a/lnk/../x.db", "s1")
    assert other.read_bytes() == before
