"""Which file is which session: a file whose header names another session is neither,
for every command and the library alike, and the way out is one a shell user can follow."""

from __future__ import annotations

import json
import os
import re
import shlex
from pathlib import Path

import pytest

import turnlog
from builders import crashed_session, put
from entry_point import cli
from turnlog.ops.transfer import copy_session
from turnlog.stores import JSONLStore, SessionMismatchError, SQLiteStore

MISMATCH = "holds session 'run-1', not 'run-1.bak'"


def store_with_a_backup(tmp_path: Path) -> Path:
    """A store holding the crashed session `run-1` and a byte-for-byte backup of
    it, `run-1.bak.jsonl`, whose header still names `run-1`."""
    directory = tmp_path / "s"
    put(JSONLStore(directory), crashed_session("run-1"))
    (directory / "run-1.bak.jsonl").write_bytes((directory / "run-1.jsonl").read_bytes())
    return directory


def files(directory: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(directory.iterdir())}


def test_ls_lists_the_backup_flagged_with_its_file_and_both_ids(tmp_path: Path) -> None:
    directory = store_with_a_backup(tmp_path)
    code, out, _ = cli("ls", "--store", str(directory), "--json")
    rows = {row["session_id"]: row for row in json.loads(out)["sessions"]}
    assert code == 0 and rows["run-1"]["status"] == "interrupted"
    assert rows["run-1.bak"]["status"] == "unreadable"
    assert MISMATCH in rows["run-1.bak"]["problem"]
    assert str(directory / "run-1.bak.jsonl") in rows["run-1.bak"]["problem"]
    code, out, _ = cli("ls", "--store", str(directory))
    assert code == 0 and f"run-1.bak: {directory / 'run-1.bak.jsonl'} {MISMATCH}" in out


@pytest.mark.parametrize(
    "command",
    [
        ["inspect"],
        ["plan"],
        ["recover"],
        ["recover", "--force"],
        ["revive"],
        ["show"],
        ["export", "--to", "anthropic"],
        ["verify"],
        ["fork", "--at", "1"],
    ],
)
def test_every_command_refuses_the_backup_and_changes_nothing(
    tmp_path: Path, command: list[str]
) -> None:
    directory = store_with_a_backup(tmp_path)
    before = files(directory)
    code, out, err = cli(*command, str(directory / "run-1.bak.jsonl"))
    assert code == 3, (out, err)
    assert MISMATCH in out + err
    assert files(directory) == before


def test_sweep_repairs_the_session_and_reports_its_backup(tmp_path: Path) -> None:
    directory = store_with_a_backup(tmp_path)
    backup = (directory / "run-1.bak.jsonl").read_bytes()
    code, out, _ = cli("sweep", "--store", str(directory), "--json")
    done = {s["session_id"]: s for s in json.loads(out)["sessions"]}
    assert code == 0 and done["run-1"]["action"] == "recovered"
    assert done["run-1.bak"]["action"] == "skipped" and MISMATCH in done["run-1.bak"]["reason"]
    assert (directory / "run-1.bak.jsonl").read_bytes() == backup


def test_the_library_applies_the_same_rule(tmp_path: Path) -> None:
    directory = store_with_a_backup(tmp_path)
    before = files(directory)
    store = JSONLStore(directory)
    readers = {
        "read": lambda: store.read("run-1.bak"),
        "read_tail": lambda: store.read_tail("run-1.bak"),
        "read_header": lambda: store.read_header("run-1.bak"),
        "scan": lambda: store.scan("run-1.bak"),
        "iter_events": lambda: list(store.iter_events("run-1.bak")),
        "writer": lambda: store.writer("run-1.bak"),
        "writer, tail only": lambda: store.writer("run-1.bak", check="tail"),
        "forced writer": lambda: store.writer("run-1.bak", force=True),
        "open": lambda: turnlog.open(directory / "run-1.bak.jsonl"),
        "recover": lambda: turnlog.recover(directory / "run-1.bak.jsonl"),
        "copy_session": lambda: copy_session(store, "run-1.bak", JSONLStore(tmp_path / "d")),
    }
    for name, read in readers.items():
        with pytest.raises(SessionMismatchError) as caught:
            read()
        assert (caught.value.stored_as, caught.value.named) == ("run-1.bak", "run-1"), name
        assert isinstance(caught.value, turnlog.NotASessionError), name
    found = turnlog.inspect(store, "run-1.bak")
    assert found.status == "unreadable" and MISMATCH in found.problems[0].message
    revival = turnlog.revive(directory / "run-1.bak.jsonl")
    assert not revival.revived and revival.reason == "unreadable"
    assert files(directory) == before
    assert not (tmp_path / "d").exists()
    # The session itself is untouched by its backup's refusal.
    assert turnlog.inspect(store, "run-1").status == "interrupted"


@pytest.mark.parametrize("kind", ["jsonl", "sqlite"])
def test_copy_of_a_store_holding_a_backup_writes_nothing(tmp_path: Path, kind: str) -> None:
    directory = store_with_a_backup(tmp_path)
    dest = f"jsonl:{tmp_path / 'd'}" if kind == "jsonl" else f"sqlite:///{tmp_path / 'd.db'}"
    code, _, err = cli("copy", str(directory), dest)
    assert code == 3 and "nothing was copied" in err
    assert str(directory / "run-1.bak.jsonl") in err and MISMATCH in err
    assert "create=True" not in err and "without create" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s"]
    # The session alone copies; its backup is never copied as either session.
    code, _, err = cli("copy", str(directory), dest, "--session", "run-1")
    assert code == 0, err
    copied = JSONLStore(tmp_path / "d") if kind == "jsonl" else SQLiteStore(tmp_path / "d.db")
    assert copied.sessions() == ["run-1"]
    assert len(copied.read("run-1")) == len(crashed_session("run-1"))


def test_a_renamed_session_is_told_how_to_take_its_name_back(tmp_path: Path) -> None:
    directory = tmp_path / "s"
    put(JSONLStore(directory), crashed_session("run-1"))
    os.rename(directory / "run-1.jsonl", directory / "renamed.jsonl")
    code, _, err = cli("recover", str(directory / "renamed.jsonl"))
    assert code == 3 and "holds session 'run-1', not 'renamed'" in err
    (hint,) = [line for line in err.splitlines() if line.startswith("hint: ")]
    move = re.search(r"`?(mv \S+ \S+)", hint)
    assert move is not None, hint
    # The hint is a command line: run as written, it gives the session its name back.
    _, source, target = shlex.split(move.group(1))
    os.rename(source, target)
    assert cli("recover", str(directory / "run-1.jsonl"))[0] == 0
    assert turnlog.inspect(JSONLStore(directory), "run-1").status == "idle"


def test_a_backup_is_told_how_to_be_a_session_again(tmp_path: Path) -> None:
    directory = store_with_a_backup(tmp_path)
    code, _, err = cli("inspect", str(directory / "run-1.bak.jsonl"))
    assert (
        code == 3
        and "move it out of the store" in err + cli("revive", str(directory / "run-1.bak.jsonl"))[2]
    )
    # Followed: in a directory of its own, under its header's name, it is run-1.
    (tmp_path / "backup").mkdir()
    os.rename(directory / "run-1.bak.jsonl", tmp_path / "backup" / "run-1.jsonl")
    code, out, _ = cli("inspect", str(tmp_path / "backup" / "run-1.jsonl"), "--json")
    assert code == 0 and json.loads(out)["status"] == "interrupted"
    code, out, _ = cli("ls", "--store", str(directory), "--json")
    assert [row["status"] for row in json.loads(out)["sessions"]] == ["interrupted"]


@pytest.mark.parametrize("case", ["no such session", "no such file", "a backup listed first"])
def test_no_copy_error_names_a_python_keyword(tmp_path: Path, case: str) -> None:
    directory = store_with_a_backup(tmp_path)
    dest = f"sqlite:///{tmp_path / 'd.db'}"
    if case == "no such session":
        args = [str(directory), dest, "--session", "nope"]
    elif case == "no such file":
        args = [str(directory / "nope.jsonl"), dest]
    else:
        # Listed before `run-1`, the backup was once copied as `run-1`, and
        # reading it back under its own name failed with a keyword in the hint.
        os.rename(directory / "run-1.bak.jsonl", directory / "a-backup.jsonl")
        args = [str(directory), dest]
    code, out, err = cli("copy", *args)
    assert code == 3 and "hint:" in err, (out, err)
    assert re.search(r"\b\w+=(True|False|None)\b", err) is None, err
    assert "without create" not in err
    assert not (tmp_path / "d.db").exists()
