"""Reviving twice tells the model once: a session already revived and not run on is left alone."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import forkserver
import turnlog
from builders import crashed_session, put
from conftest import make_store
from entry_point import cli
from paths import ROOT, SUPPORT
from turnlog import events as ev
from turnlog.core.fold import fold
from turnlog.providers import PROVIDERS, render, validate
from turnlog.stores import Store
from turnlog.stores.jsonl import JSONLStore

KINDS = ["jsonl", "sqlite", "postgres"]


def store_url(store: Store) -> str:
    return f"jsonl:{store.url}" if isinstance(store, JSONLStore) else store.url


def marks(store: Store, session_id: str) -> tuple[int, int]:
    """(run_revived events, revival notices) in the whole log."""
    events = store.read(session_id)
    return (
        sum(1 for e in events if isinstance(e.data, ev.RunRevived)),
        sum(1 for e in events if isinstance(e.data, ev.UserMessage) and e.data.injected),
    )


def assert_exports_valid(store: Store, session_id: str) -> None:
    messages = fold(store.read(session_id)).messages
    for provider in PROVIDERS:
        assert validate(provider, render(provider, messages)) == [], (session_id, provider)


@pytest.mark.parametrize("kind", KINDS)
def test_revive_twice_tells_once_and_spends_one_revival(
    tmp_path: Path, request: pytest.FixtureRequest, kind: str
) -> None:
    store = make_store(kind, tmp_path, request)
    put(store, crashed_session("s1"))
    with turnlog.open(store, "s1") as log:
        first = turnlog.revive(log)
        assert (first.revived, first.reason, first.revival) == (True, "revived", 1)
        # Recovery's four events, then the marker and the notice.
        assert [e.type for e in first.appended] == [
            "tool_result",
            "tool_result",
            "step_end",
            "turn_end",
            "run_revived",
            "user_message",
        ]
        before = log.next_seq
        second = turnlog.revive(log)
        assert (second.revived, second.reason, second.revival) == (True, "already_revived", 1)
        assert second.appended == () and log.next_seq == before
        # Still what a loop needs to carry on.
        assert second.messages[-1].injected == "revival"
    assert marks(store, "s1") == (1, 1)
    # Another process, the same answer; `inspect` agrees.
    found = turnlog.inspect(store, "s1")
    assert (found.status, found.revivable, found.reason, found.revivals) == (
        "idle",
        True,
        "already_revived",
        1,
    )
    for _ in range(2):
        code, out, err = cli("revive", "s1", "--store", store_url(store), "--json")
        assert code == 0, err
        done = json.loads(out)
        assert (done["revived"], done["reason"], done["revival"]) == (True, "already_revived", 1)
        assert done["appended"] == []
    code, out, _ = cli("revive", "s1", "--store", store_url(store))
    assert code == 0 and "already revived" in out
    assert marks(store, "s1") == (1, 1)
    assert_exports_valid(store, "s1")


@pytest.mark.parametrize("kind", KINDS)
def test_a_run_on_after_the_notice_is_revived_anew(
    tmp_path: Path, request: pytest.FixtureRequest, kind: str
) -> None:
    store = make_store(kind, tmp_path, request)
    put(store, crashed_session("s1"))
    with turnlog.open(store, "s1") as log:
        assert turnlog.revive(log).reason == "revived"
        log.append(log.next_turn_start())  # the loop started its turn, then crashed
        again = turnlog.revive(log)
        assert (again.reason, again.revival) == ("revived", 2)
        assert turnlog.revive(log).reason == "already_revived"
    assert marks(store, "s1") == (2, 2)
    assert_exports_valid(store, "s1")


def test_already_revived_is_not_held_to_the_cap_but_revival_off_is_off(tmp_path: Path) -> None:
    put(JSONLStore(tmp_path), crashed_session("s1"))
    with turnlog.open(tmp_path, "s1") as log:
        assert turnlog.revive(log, max_revivals=1).revival == 1
        # The one revival allowed was granted and never run: carry it on.
        told = turnlog.revive(log, max_revivals=1)
        assert (told.revived, told.reason) == (True, "already_revived")
        off = turnlog.revive(log, max_revivals=0)
        assert (off.revived, off.reason) == (False, "revival_disabled")
    assert marks(JSONLStore(tmp_path), "s1") == (1, 1)


PROGRAM = str(SUPPORT / "agent_program.py")


def program(*args: str) -> subprocess.CompletedProcess[str]:
    return forkserver.run(
        [sys.executable, PROGRAM, *args], capture_output=True, text=True, timeout=120
    )


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_tree_revived_by_a_supervisor_that_died_before_running_it_runs_once_told(
    tmp_path: Path, mode: str
) -> None:
    store, side = tmp_path / "s", str(tmp_path / "side")
    assert program("run", str(store), side, "nested", "-", mode).returncode == -9
    manager = "root.agents/manager-call_1_0"
    worker = f"{manager}.agents/worker-call_1_0"
    # A supervisor revives the tree, then dies before running it; so does the next.
    for _ in range(2):
        code, out, err = cli("revive", "root", "--store", str(store), "--tree", "--json")
        assert code == 0, err
    assert [n["reason"] for n in json.loads(out)["sessions"]] == ["already_revived"] * 3
    # The third runs it: each session carries on from its one notice.
    done = program("revive", str(store), side, "nested", mode)
    assert done.returncode == 0, done.stderr
    out_tree = json.loads(done.stdout)
    assert set(out_tree["_outcomes"].values()) == {"already revived, not yet run on"}
    assert out_tree[manager].startswith("manager done [worker did deep")
    jsonl = JSONLStore(store)
    for session_id in ("root", manager, worker):
        assert turnlog.inspect(store, session_id).status == "finished"
        assert marks(jsonl, session_id) == (1, 1)
        assert_exports_valid(jsonl, session_id)


def test_the_documented_supervisor_carries_on_what_a_dead_one_revived(tmp_path: Path) -> None:
    """docs/revival.md's supervisor, after another one revived a run and died."""
    import re

    from turnlog.runtime.loop import AgentSpec, Reply

    revival_doc = ROOT / "docs" / "revival.md"
    blocks = re.findall(r"```python\n(.*?)```", revival_doc.read_text(), re.S)
    namespace: dict[str, object] = {}
    exec(next(b for b in blocks if "def revive_crashed" in b), namespace)
    with turnlog.open(tmp_path, "crashed", agent=turnlog.events.Agent(type="helper")) as log:
        log.user("help")
        log.append(turnlog.events.TurnStart(turn=1))
    with turnlog.tree.revive_tree(tmp_path, "crashed"):
        pass  # the first supervisor dies here, before running it
    agents = {"helper": AgentSpec(model=lambda messages: Reply(content="carried on"), tools={})}
    done = namespace["revive_crashed"](str(tmp_path), agents)  # type: ignore[operator]
    assert list(done) == ["crashed"]
    assert turnlog.inspect(tmp_path, "crashed").status == "finished"
    assert marks(JSONLStore(tmp_path), "crashed") == (1, 1)
    assert_exports_valid(JSONLStore(tmp_path), "crashed")
