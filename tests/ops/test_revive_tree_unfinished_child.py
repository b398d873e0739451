"""A tree whose child a crash cut short while being created is revived, not refused."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import msgspec
import pytest

import forkserver
import turnlog
from builders import assistant, call, number, put, step_start, turn_start
from conftest import make_store
from entry_point import cli
from paths import SUPPORT
from turnlog import events as ev
from turnlog.core.fold import fold
from turnlog.providers import PROVIDERS, render, validate
from turnlog.stores import JSONLStore

PROGRAM = str(SUPPORT / "agent_program.py")
SIGKILLED = -9
FINISHED = "root.agents/worker-call_1_0"
CUT = "root.agents/worker-call_1_1"


def crash_while_creating_a_child(tmp_path: Path, shape: str) -> Path:
    """A root that waits on two workers, killed while the second one's session was
    being created: its file is empty, or holds a torn part of its header line."""
    store = tmp_path / "s"
    done = forkserver.run(
        [sys.executable, PROGRAM, "run", str(store), str(tmp_path / "side"), "two", "-", "sync"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == SIGKILLED, done.stderr
    child = store / f"{CUT}.jsonl"
    header_line = child.read_bytes().split(b"\n")[0]
    # What the disk holds when the crash came before the header's write landed
    # whole: nothing, or the first bytes of the line without its newline.
    child.write_bytes(b"" if shape == "empty" else header_line[: len(header_line) // 2])
    return store


def assert_exports_valid(store: Path, session_id: str) -> None:
    messages = fold(JSONLStore(store).read(session_id)).messages
    for provider in PROVIDERS:
        assert validate(provider, render(provider, messages)) == [], (session_id, provider)


@pytest.mark.parametrize("shape", ["empty", "torn_header"])
def test_the_cut_childs_wait_is_answered_outcome_unknown_and_the_rest_revived(
    tmp_path: Path, shape: str
) -> None:
    store = crash_while_creating_a_child(tmp_path, shape)
    child = store / f"{CUT}.jsonl"
    cut_bytes = child.read_bytes()
    assert turnlog.inspect(store, CUT).status == "empty"
    assert [c.call_id for c in turnlog.inspect(store, "root").owed_calls] == ["call_1_1"]

    code, out, err = cli("revive", "root", "--store", str(store), "--tree", "--json")
    assert code == 0, err
    done = {node["session_id"]: node for node in json.loads(out)["sessions"]}
    assert done["root"]["outcome"] == "revived" and done["root"]["pending"] == []
    assert (done[CUT]["revived"], done[CUT]["outcome"]) == (False, "empty")
    # The root's wait on the cut child is answered as recovery answers a
    # dispatched call no one will finish: R1, outcome unknown.
    wait = next(
        e
        for e in JSONLStore(store).read("root")
        if isinstance(e.data, ev.ToolResult) and e.data.call_id == "call_1_1"
    )
    assert (wait.origin, wait.data.risk, wait.data.rule) == (
        "recovery",
        "tool_outcome_unknown",
        "R1",
    )
    appended = [(e["type"], e["data"].get("call_id")) for e in done["root"]["appended"]]
    assert appended[0] == ("tool_result", "call_1_1") and appended[-2:] == [
        ("run_revived", None),
        ("user_message", None),
    ]
    # The cut child is left as the crash left it.
    assert child.read_bytes() == cut_bytes
    assert turnlog.inspect(store, "root").status == "idle"
    assert_exports_valid(store, "root")
    assert_exports_valid(store, FINISHED)

    # Again: the root is already revived and not run on; nothing is written.
    before = {p: p.read_bytes() for p in store.rglob("*.jsonl")}
    code, out, err = cli("revive", "root", "--store", str(store), "--tree", "--json")
    assert code == 0, err
    again = {node["session_id"]: node for node in json.loads(out)["sessions"]}
    assert (again["root"]["reason"], again["root"]["revival"]) == ("already_revived", 1)
    assert {p: p.read_bytes() for p in store.rglob("*.jsonl")} == before
    assert_exports_valid(store, "root")


def test_a_cut_child_someone_is_writing_still_refuses_the_tree(tmp_path: Path) -> None:
    store = crash_while_creating_a_child(tmp_path, "empty")
    before = {p: p.read_bytes() for p in store.rglob("*.jsonl")}
    with turnlog.open(store, CUT):  # created again, and live
        code, _, err = cli("revive", "root", "--store", str(store), "--tree")
        assert code == 4 and "hint:" in err
    # Nothing of the tree was written (the child was created again by its opener).
    cut = store / f"{CUT}.jsonl"
    assert {p: p.read_bytes() for p in store.rglob("*.jsonl") if p != cut} == {
        p: b for p, b in before.items() if p != cut
    }


@pytest.mark.parametrize("kind", ["jsonl", "sqlite", "postgres"])
def test_a_child_never_created_leaves_its_wait_to_recovery_on_every_store(
    tmp_path: Path, request: pytest.FixtureRequest, kind: str
) -> None:
    """In a database a header is committed whole or not at all: a crash while
    creating the child leaves no child session, which revives the same way."""
    store = make_store(kind, tmp_path, request)
    events = number(
        [
            ev.UserMessage(content="delegate"),
            turn_start(1),
            step_start(1, 1),
            assistant(call("w1", "research", task="x")),
            ev.ToolDispatch(call_id="w1", name="research", join="worker-w1"),
        ]
    )
    header = ev.Session(session_id="root", agent=ev.Agent(id="boss", type="boss"))
    put(store, [msgspec.structs.replace(events[0], data=header), *events[1:]])
    url = f"jsonl:{store.url}" if isinstance(store, JSONLStore) else store.url
    code, out, err = cli("revive", "root", "--store", url, "--tree", "--json")
    assert code == 0, err
    (root,) = json.loads(out)["sessions"]
    assert (root["outcome"], root["pending"]) == ("revived", [])
    first = root["appended"][0]
    assert (first["type"], first["data"]["risk"], first["data"]["rule"]) == (
        "tool_result",
        "tool_outcome_unknown",
        "R1",
    )
    code, out, err = cli("revive", "root", "--store", url, "--tree", "--json")
    assert code == 0 and json.loads(out)["sessions"][0]["reason"] == "already_revived", err
    messages = fold(store.read("root")).messages
    for provider in PROVIDERS:
        assert validate(provider, render(provider, messages)) == [], provider
