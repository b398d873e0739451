"""turnlog copy and turnlog sweep, through the entry point, on JSONL and SQLite stores."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest

import turnlog
from builders import assistant, crashed_session, number, put, turn_start
from conftest import make_store
from entry_point import cli
from turnlog import events as ev
from turnlog.events import Event
from turnlog.stores import JSONLStore, SQLiteStore, Store


def finished(session_id: str) -> list[Event]:
    events = number(
        [
            ev.UserMessage(content="hi"),
            turn_start(1),
            assistant(content="hello"),
            ev.TurnEnd(turn=1),
        ]
    )
    header = msgspec.structs.replace(events[0], data=ev.Session(session_id=session_id))
    return [header, *events[1:]]


def url(store: Store) -> str:
    return store.url if isinstance(store, SQLiteStore) else f"jsonl:{store.url}"


# -- copy ---------------------------------------------------------------------------------------


def test_copy_round_trips_byte_for_byte_through_sqlite(tmp_path: Path) -> None:
    files = JSONLStore(tmp_path / "files")
    for i in range(3):
        put(files, crashed_session(f"c{i}"))
    turnlog.recover(files, "c1")
    database = SQLiteStore(tmp_path / "s.db")
    code, out, err = cli("copy", url(files), url(database), "--json")
    assert code == 0, err
    assert [c["session_id"] for c in json.loads(out)["copied"]] == ["c0", "c1", "c2"]
    back = JSONLStore(tmp_path / "back")
    assert cli("copy", url(database), url(back), "--session", "c1")[0] == 0
    original = (tmp_path / "files" / "c1.jsonl").read_bytes()
    assert (tmp_path / "back" / "c1.jsonl").read_bytes() == original
    # Never overwrite: the second copy is refused and changes nothing.
    code, _, err = cli("copy", url(files), url(database), "--session", "c0")
    assert code == 3 and "already exists" in err
    assert len(database.read("c0")) == len(files.read("c0"))


def test_copy_refuses_whole_or_skips_what_exists(tmp_path: Path) -> None:
    files = JSONLStore(tmp_path / "files")
    for i in range(4):
        put(files, crashed_session(f"c{i}"))
    database = SQLiteStore(tmp_path / "s.db")
    assert cli("copy", url(files), url(database), "--session", "c1")[0] == 0
    # Without the flag: refused before anything is copied, with the way out.
    code, _, err = cli("copy", url(files), url(database))
    assert code == 3 and "'c1'" in err and "--skip-existing" in err
    assert database.sessions() == ["c1"]
    code, out, _ = cli("copy", url(files), url(database), "--skip-existing", "--json")
    document = json.loads(out)
    assert code == 0 and document["skipped"] == ["c1"]
    assert [c["session_id"] for c in document["copied"]] == ["c0", "c2", "c3"]
    # Run again: everything is there, nothing is copied, nothing changes.
    code, out, _ = cli("copy", url(files), url(database), "--skip-existing", "--json")
    assert code == 0 and json.loads(out)["copied"] == [] and len(json.loads(out)["skipped"]) == 4


def test_copy_refuses_a_damaged_source(tmp_path: Path) -> None:
    files = JSONLStore(tmp_path / "files")
    put(files, crashed_session("c0"))
    path = tmp_path / "files" / "c0.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    lines[2] = lines[2].replace(b"turn", b"TURN")
    path.write_bytes(b"".join(lines))
    code, _, err = cli("copy", url(files), f"sqlite:///{tmp_path}/s.db")
    assert code == 3 and "damaged" in err
    assert SQLiteStore(tmp_path / "s.db").sessions() == []


def test_a_store_copy_is_checked_whole_before_anything_is_written(tmp_path: Path) -> None:
    files = JSONLStore(tmp_path / "files")
    for i in range(3):
        put(files, crashed_session(f"c{i}"))
    damaged = tmp_path / "files" / "c1.jsonl"
    lines = damaged.read_bytes().splitlines(keepends=True)
    lines[2] = lines[2].replace(b"turn", b"TURN")
    damaged.write_bytes(b"".join(lines))
    # A backup of c0 under a name of its own: its header still names c0.
    (tmp_path / "files" / "c3.jsonl").write_bytes((tmp_path / "files" / "c0.jsonl").read_bytes())
    code, _, err = cli("copy", url(files), f"sqlite:///{tmp_path}/s.db")
    assert code == 3 and "2 of 4 sessions cannot be copied, so nothing was copied" in err
    assert "c1: " in err and "damaged" in err
    assert "c3: " in err and "holds session 'c0', not 'c3'" in err
    assert err.count("hint:") == 3
    assert not (tmp_path / "s.db").exists()
    code, out, _ = cli("copy", url(files), f"sqlite:///{tmp_path}/s.db", "--json")
    document = json.loads(out)
    assert code == 3 and [r["session_id"] for r in document["refused"]] == ["c1", "c3"]
    assert document["copied"] == [] and not (tmp_path / "s.db").exists()


def test_a_copy_that_fails_part_way_says_exactly_what_it_copied(tmp_path: Path) -> None:
    files = JSONLStore(tmp_path / "files")
    for session_id in ("c0", turnlog.stores.child_session_id("c0", "k"), "c1"):
        put(files, crashed_session(session_id))
    # A file where the destination's folder for c0's subagents belongs: the
    # checks pass, the subagent's write fails, after c0 was copied.
    (tmp_path / "dest").mkdir()
    (tmp_path / "dest" / "c0.agents").write_bytes(b"")
    code, out, err = cli("copy", url(files), str(tmp_path / "dest"), "--json")
    document = json.loads(out)
    assert code == 3
    assert [c["session_id"] for c in document["copied"]] == ["c0"]
    assert document["failed"] == "c0.agents/k" and document["written"] is False
    assert document["not_copied"] == ["c0.agents/k", "c1"]
    assert "copying session 'c0.agents/k' failed, and nothing of it was written" in err
    assert "before it, each whole and read back: c0; not copied: c0.agents/k, c1" in err
    assert "--skip-existing" in err
    assert sorted(p.name for p in (tmp_path / "dest").iterdir()) == ["c0.agents", "c0.jsonl"]
    # Done as the hint says, the rest is copied, the subagent's file included.
    (tmp_path / "dest" / "c0.agents").unlink()
    code, out, err = cli("copy", url(files), str(tmp_path / "dest"), "--skip-existing", "--json")
    assert code == 0, err
    assert [c["session_id"] for c in json.loads(out)["copied"]] == ["c0.agents/k", "c1"]
    dest = JSONLStore(tmp_path / "dest")
    assert dest.sessions() == files.sessions()
    assert dest.read("c0.agents/k") == files.read("c0.agents/k")


def test_a_session_file_as_source_copies_that_session_only(tmp_path: Path) -> None:
    files = JSONLStore(tmp_path / "files")
    for session_id in ("a", "b"):
        put(files, crashed_session(session_id))
    code, out, err = cli("copy", str(tmp_path / "files" / "a.jsonl"), str(tmp_path / "d"), "--json")
    assert code == 0, err
    assert [c["session_id"] for c in json.loads(out)["copied"]] == ["a"]
    assert JSONLStore(tmp_path / "d").sessions() == ["a"]
    code, _, err = cli("copy", str(tmp_path / "files" / "a.jsonl"), "x", "--session", "b")
    assert code == 2 and "'a'" in err


# -- sweep --------------------------------------------------------------------------------------

HOLDER = """
import sys, turnlog
from turnlog.stores import open_store
store, _ = open_store(sys.argv[1])
# Holding the writer is what makes the session live; a handle on a crashed
# session writes nothing before it is recovered.
with turnlog.open(store, sys.argv[2]) as log:
    print("ready", flush=True)
    sys.stdin.readline()
"""


@pytest.mark.parametrize("kind", ["jsonl", "sqlite"])
def test_sweep_recovers_the_crashed_and_tells_why_it_skipped_the_rest(
    tmp_path: Path, kind: str
) -> None:
    store = make_store(kind, tmp_path)
    for i in range(5):
        put(store, crashed_session(f"crash{i}"))
    for i in range(3):
        put(store, finished(f"done{i}"))
    put(store, crashed_session("live"))
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, url(store), "live"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        code, out, err = cli("sweep", url(store), "--json")
        assert code == 0, err
        done = {s["session_id"]: s for s in json.loads(out)["sessions"]}
        assert {sid for sid, s in done.items() if s["action"] == "recovered"} == {
            f"crash{i}" for i in range(5)
        }
        assert done["live"]["action"] == "skipped" and done["live"]["reason"] == "running"
        assert all(done[f"crash{i}"]["appended"] == 4 for i in range(5))
        # A second sweep finds nothing to do.
        code, out, _ = cli("sweep", url(store), "--json")
        assert [s for s in json.loads(out)["sessions"] if s["action"] != "skipped"] == []
    finally:
        assert holder.stdin is not None
        holder.stdin.write("\n")
        holder.stdin.close()
        holder.wait(timeout=30)


def test_sweep_skips_recent_sessions_and_revives_within_the_cap(tmp_path: Path) -> None:
    store = JSONLStore(tmp_path)
    put(store, crashed_session("old"))
    with turnlog.open(store, "recent") as log:
        log.user("now")
        log.append(ev.TurnStart(turn=1, revivals=0))
    code, out, _ = cli("sweep", str(tmp_path), "--older-than", "3600", "--revive", "--json")
    assert code == 0
    done = {s["session_id"]: s for s in json.loads(out)["sessions"]}
    assert done["old"]["action"] == "revived" and done["old"]["appended"] == 6
    assert done["recent"]["action"] == "skipped" and "younger" in done["recent"]["reason"]
    assert turnlog.inspect(store, "old").revivals == 1
    assert turnlog.inspect(store, "recent").status == "interrupted"


SWEEPER = """
import sys, json, turnlog
from turnlog.stores import open_store
from turnlog.ops.sweep import sweep
store, _ = open_store(sys.argv[1])
done = sweep(store)
print(json.dumps([s.session_id for s in done if s.action == "recovered"]))
"""


@pytest.mark.parametrize("kind", ["jsonl", "sqlite"])
def test_four_sweepers_at_once_repair_each_session_once(tmp_path: Path, kind: str) -> None:
    store = make_store(kind, tmp_path)
    for i in range(60):
        put(store, crashed_session(f"s{i:02d}"))
    sweepers = [
        subprocess.Popen(
            [sys.executable, "-c", SWEEPER, url(store)], stdout=subprocess.PIPE, text=True
        )
        for _ in range(4)
    ]
    recovered: list[str] = []
    for sweeper in sweepers:
        out, _ = sweeper.communicate(timeout=180)
        assert sweeper.returncode == 0
        recovered += json.loads(out)
    assert sorted(recovered) == [f"s{i:02d}" for i in range(60)]
    for i in range(60):
        events = store.read(f"s{i:02d}")
        ends = [e for e in events if isinstance(e.data, ev.TurnEnd)]
        assert len(ends) == 1 and ends[0].origin == "recovery"
