"""A store never touches what is not its own: foreign databases, mistyped paths, file modes."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

import turnlog
from builders import assistant, call, dispatch, number, step_start, turn_start
from entry_point import cli
from turnlog import events as ev
from turnlog.stores import NotAStoreError, SQLiteStore, StoreNotFoundError, open_store
from turnlog.stores.record import encode_line

CRASHED = number(
    [
        ev.UserMessage(content="pay"),
        turn_start(1),
        step_start(1, 1),
        assistant(call("a", "pay")),
        dispatch("a", "pay"),
    ]
)


@pytest.fixture
def small_tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A 256 KiB file system of its own, so a test can fill it."""
    where = tmp_path / "small"
    where.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(where)],
        capture_output=True,
        check=False,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs: {mounted.stderr.decode().strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def fill(folder: Path) -> None:
    """Take every free byte of the file system `folder` is on."""
    fd = os.open(folder / "filler", os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        while os.write(fd, b"\0" * 512):
            pass
    except OSError:
        pass
    finally:
        os.close(fd)


def foreign_database(path: Path, journal_mode: str) -> None:
    connection = sqlite3.connect(path)
    connection.execute(f"PRAGMA journal_mode={journal_mode}")
    connection.execute("CREATE TABLE invoices (id INTEGER PRIMARY KEY, amount INTEGER)")
    connection.execute("INSERT INTO invoices (amount) VALUES (7)")
    connection.commit()
    connection.close()


def snapshot(folder: Path) -> dict[str, str]:
    """Every entry of the folder and the hash of each file's bytes."""
    return {
        entry.name: hashlib.sha256(entry.read_bytes()).hexdigest() if entry.is_file() else "dir"
        for entry in sorted(folder.iterdir())
    }


@pytest.mark.parametrize("journal_mode", ["delete", "wal"])
def test_a_foreign_sqlite_database_is_refused_by_every_command_and_left_byte_identical(
    tmp_path: Path, journal_mode: str
) -> None:
    app = tmp_path / "app"
    app.mkdir()
    foreign_database(app / "app.db", journal_mode)
    url = f"sqlite:///{app / 'app.db'}"
    before = snapshot(app)
    assert set(before) == {"app.db"}
    (tmp_path / "files").mkdir()
    with turnlog.open(tmp_path / "files", "s1") as log:
        log.user("hi")
    for command in (
        ["ls", "--store", url],
        ["ls", "--store", url, "--json"],
        ["sweep", url],
        ["verify", "--store", url],
        ["inspect", "s1", "--store", url],
        ["store", "init", url],
        ["copy", url, str(tmp_path / "elsewhere")],
        ["copy", str(tmp_path / "files"), url],
    ):
        code, out, err = cli(*command)
        assert code == 3, (command, code, out, err)
        assert "another application" in err and "hint:" in err, (command, err)
        assert snapshot(app) == before, command
    with pytest.raises(NotAStoreError):
        SQLiteStore(app / "app.db").sessions()
    assert snapshot(app) == before


def test_read_only_commands_never_create_a_database_for_a_mistyped_path(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'typo.db'}"
    for command in (["ls", "--store", url], ["sweep", url], ["verify", "--store", url]):
        code, _, err = cli(*command)
        assert code == 2 and "no turnlog store" in err and "store init" in err, (command, err)
    code, _, _ = cli("inspect", "s1", "--store", url)
    assert code != 0
    assert list(tmp_path.iterdir()) == []
    store = SQLiteStore(tmp_path / "typo.db")
    assert store.sessions() == [] and not store.exists("s1") and store.lock_holder("s1") is None
    assert not store.present()
    with pytest.raises(StoreNotFoundError):
        store.require()
    assert list(tmp_path.iterdir()) == []


def test_store_init_creates_the_schema_in_a_new_or_empty_database_only(tmp_path: Path) -> None:
    (tmp_path / "empty.db").touch()
    for name in ("new.db", "empty.db"):
        url = f"sqlite:///{tmp_path / name}"
        code, out, err = cli("store", "init", url, "--json")
        assert code == 0, err
        assert json.loads(out)["sessions"] == 0
        code, out, _ = cli("ls", "--store", url, "--json")
        assert code == 0 and json.loads(out)["sessions"] == []
    # Idempotent on a turnlog store.
    assert cli("store", "init", f"sqlite:///{tmp_path / 'new.db'}")[0] == 0


@pytest.mark.parametrize("target", ["missing", "devnull"])
def test_a_missing_jsonl_store_is_an_error_not_an_empty_store(tmp_path: Path, target: str) -> None:
    where = str(tmp_path / "nowhere") if target == "missing" else os.devnull
    for command in (
        ["ls", "--store", where],
        ["ls", "--store", where, "--json"],
        ["sweep", where],
        ["verify", "--store", where],
        ["copy", where, str(tmp_path / "dest")],
    ):
        code, out, err = cli(*command)
        assert code == 2, (command, code, out, err)
        assert "no turnlog store" in err and "hint:" in err
    assert not (tmp_path / "nowhere").exists() and not (tmp_path / "dest").exists()


def page_filling_crash(page_bytes: int = 4096, slack: int = 16) -> list[ev.Event]:
    """A crashed session whose file ends `slack` bytes short of a page: on a
    full file system, not even a short record fits after it."""

    def build(pad: str) -> list[ev.Event]:
        return number([ev.UserMessage(content=pad), *(event.data for event in CRASHED[1:])])

    pad = 0
    while sum(len(encode_line(event)) for event in build("x" * (pad + 1))) <= page_bytes - slack:
        pad += 1
    return build("x" * pad)


def test_a_sweep_whose_repair_failed_exits_non_zero(small_tmpfs: Path) -> None:
    store, _ = open_store(small_tmpfs)
    events = page_filling_crash()
    with store.create(events[0]) as writer:
        writer.append(events[1:], expected_seq=1, sync=True)
    assert 4096 - 32 < (small_tmpfs / "s1.jsonl").stat().st_size <= 4096 - 16
    fill(small_tmpfs)
    # The disk is full: the sweep finds the crash and cannot append its repair.
    code, out, err = cli("sweep", str(small_tmpfs), "--json")
    document = json.loads(out)
    assert code == 1, err
    assert [item["action"] for item in document["sessions"]] == ["failed"]
    assert "short write" in document["sessions"][0]["reason"]
    os.unlink(small_tmpfs / "filler")
    code, out, _ = cli("sweep", str(small_tmpfs), "--json")
    assert code == 0 and json.loads(out)["sessions"][0]["action"] == "recovered"


def test_every_file_a_store_creates_is_private(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        for url in (f"sqlite:///{tmp_path / 'sessions.db'}", str(tmp_path / "files")):
            with turnlog.open(url, "s1") as log:
                log.user("hi")
        made = [path for path in tmp_path.rglob("*") if path.is_file() or path.is_dir()]
    finally:
        os.umask(old)
    assert made
    for path in made:
        mode = stat.S_IMODE(path.stat().st_mode)
        assert mode & 0o077 == 0, (path.name, oct(mode))


@pytest.mark.parametrize("kind", ["jsonl", "sqlite"])
def test_a_copy_onto_a_full_disk_leaves_nothing_that_passes_for_a_session(
    tmp_path: Path, small_tmpfs: Path, kind: str
) -> None:
    source, _ = open_store(tmp_path / "source")
    events = number(
        [
            *(event.data for event in CRASHED[1:]),
            ev.ToolResult(call_id="a", content="paid " + "x" * 2000),
            *(ev.UserMessage(content="y" * 3000) for _ in range(100)),
        ]
    )
    with source.create(events[0]) as writer:
        writer.append(events[1:], expected_seq=1, sync=True)
    dest = str(small_tmpfs) if kind == "jsonl" else f"sqlite:///{small_tmpfs / 's.db'}"
    if kind == "sqlite":
        assert cli("store", "init", dest)[0] == 0
    code, _, err = cli("copy", str(tmp_path / "source"), dest)
    assert code == 3, err
    assert "no space left" in err or "disk is full" in err, err
    # Nothing there passes for a session: no listing, no interrupted session.
    code, out, err = cli("ls", "--store", dest, "--json")
    assert code == 0 and json.loads(out)["sessions"] == [], err
    assert [p.name for p in small_tmpfs.iterdir() if "partial" in p.name] == []
    # Room again: the retry succeeds and is the whole session.
    for entry in small_tmpfs.iterdir():
        if entry.suffix not in (".db", ".locks") and "s.db" not in entry.name:
            entry.unlink()
    subprocess.run(["mount", "-o", "remount,size=4m", str(small_tmpfs)], check=True)
    code, out, err = cli("copy", str(tmp_path / "source"), dest, "--json")
    assert code == 0, err
    copied, _ = open_store(dest)
    assert [event.seq for event in copied.read("s1")] == list(range(len(events)))
    assert cli("inspect", "s1", "--store", dest, "--json")[0] == 0


def test_a_copy_of_a_session_a_live_writer_holds_is_refused(tmp_path: Path) -> None:
    with turnlog.open(tmp_path / "source", "s1") as log:
        log.user("hi")
        code, _, err = cli("copy", str(tmp_path / "source"), str(tmp_path / "dest"))
        assert code == 4 and "being written" in err, err
    assert not (tmp_path / "dest" / "s1.jsonl").exists()
    assert cli("copy", str(tmp_path / "source"), str(tmp_path / "dest"))[0] == 0
