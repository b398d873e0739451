"""The carry-on `turnlog revive --tree` prints, done as written in a new process, on every
store: run the child to its answer, write it to the root's pending wait, resume the root."""

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
from turnlog import events as ev
from turnlog.core.fold import fold
from turnlog.ops.sweep import sweep
from turnlog.ops.tree import revive_tree
from turnlog.providers import PROVIDERS, render, validate
from turnlog.stores import JSONLStore, Store, child_session_id

CHILD_AGENT = "worker-w1"

# The carry-on, in a process of its own, as the `next:` line words it.
CARRY_ON = """
import sys, turnlog
from turnlog.runtime.loop import AgentSpec, Reply, continue_run
from turnlog.ops.tree import settled_events, wait_child
store, _ = turnlog.open_store(sys.argv[1])
child = sys.argv[2]
with turnlog.open(store, child) as log:
    reply = continue_run(log, AgentSpec(model=lambda m: Reply(content="found it"), tools={}))
with turnlog.open(store, "root") as log:
    (wait,) = log.verdict().waits
    log.append_many(settled_events(wait, wait_child("root", wait), reply.content), sync=True)
    final = continue_run(log, AgentSpec(model=lambda m: Reply(content="all done"), tools={}))
print(turnlog.events.content_text(final.content))
"""


def _root_waiting_on(store: Store, child: str) -> None:
    """A root crashed while its call w1 waits on the subagent session `child`."""
    events = number(
        [
            ev.UserMessage(content="delegate"),
            turn_start(1),
            step_start(1, 1),
            assistant(call("w1", "research", task="x")),
            ev.ToolDispatch(call_id="w1", name="research", join=CHILD_AGENT),
            ev.SubagentSpawned(
                agent_id=CHILD_AGENT, agent_type="worker", call_id="w1", child=child
            ),
        ]
    )
    header = ev.Session(session_id="root", agent=ev.Agent(id="boss", type="boss"))
    put(store, [msgspec.structs.replace(events[0], data=header), *events[1:]])


def crashed_tree(store: Store) -> str:
    """A root waiting on one child, and the child killed inside a charge."""
    child = child_session_id("root", CHILD_AGENT)
    _root_waiting_on(store, child)
    child_events = number(
        [
            ev.UserMessage(content="x"),
            turn_start(1),
            step_start(1, 1),
            assistant(call("k1", "charge")),
            ev.ToolDispatch(call_id="k1", name="charge", idempotency="destructive"),
        ]
    )
    child_header = ev.Session(
        session_id=child,
        agent=ev.Agent(id=CHILD_AGENT, type="worker"),
        spawned_by=ev.SpawnedBy(session_id="root", call_id="w1", agent_id=CHILD_AGENT),
    )
    put(store, [msgspec.structs.replace(child_events[0], data=child_header), *child_events[1:]])
    return child


@pytest.mark.parametrize("kind", ["jsonl", "sqlite", "postgres"])
def test_the_printed_carry_on_works_in_a_new_process(
    tmp_path: Path, request: pytest.FixtureRequest, kind: str
) -> None:
    store = make_store(kind, tmp_path, request)
    child = crashed_tree(store)
    url = f"jsonl:{store.url}" if isinstance(store, JSONLStore) else store.url
    code, out, err = cli("revive", "root", "--store", url, "--tree")
    assert code == 0, err
    assert "next:" in out and "pending wait" in out, out
    # A sweeper that comes by before the carry-on leaves the waiting root alone.
    before = len(store.read("root"))
    swept = {s.session_id: s for s in sweep(store)}
    assert swept["root"].action == "skipped" and "subagents" in swept["root"].reason
    assert len(store.read("root")) == before

    done = forkserver.run(
        [sys.executable, "-c", CARRY_ON, url, child],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "all done"

    root = store.read("root")
    answers = [e.data for e in root if isinstance(e.data, ev.ToolResult) and e.data.call_id == "w1"]
    # The child's answer reached the wait once, as itself, not as recovery's.
    assert [(a.content, a.risk) for a in answers] == [("found it", None)]
    assert turnlog.inspect(store, "root").status == "finished"
    assert turnlog.inspect(store, child).status == "finished"
    charges = [e for e in store.read(child) if isinstance(e.data, ev.ToolDispatch)]
    assert len(charges) == 1  # never replayed
    for session_id in ("root", child):
        messages = fold(store.read(session_id)).messages
        for provider in PROVIDERS:
            assert validate(provider, render(provider, messages)) == [], (session_id, provider)
    code, out, _ = cli("inspect", "root", "--store", url, "--json")
    assert json.loads(out)["status"] == "finished"


def _waiting_child(
    store: Store, child: str, spawned_by: ev.SpawnedBy | None, waits_on: str
) -> None:
    """A crashed child that itself waits on the session `waits_on`."""
    events = number(
        [
            ev.UserMessage(content="x"),
            turn_start(1),
            step_start(1, 1),
            assistant(call("v1", "research", task="y")),
            ev.ToolDispatch(call_id="v1", name="research", join="loop"),
            ev.SubagentSpawned(agent_id="loop", call_id="v1", child=waits_on),
        ]
    )
    header = ev.Session(session_id=child, spawned_by=spawned_by)
    put(store, [msgspec.structs.replace(events[0], data=header), *events[1:]])


@pytest.mark.parametrize("shape", ["cycle", "other_parent", "no_spawner", "other_agent"])
def test_a_spawn_cycle_or_a_child_of_another_parent_is_refused_cleanly(
    tmp_path: Path, shape: str
) -> None:
    store = JSONLStore(tmp_path)
    child = child_session_id("root", CHILD_AGENT)
    _root_waiting_on(store, child)
    if shape == "cycle":
        by = ev.SpawnedBy(session_id="root", call_id="w1", agent_id=CHILD_AGENT)
        _waiting_child(store, child, by, waits_on="root")
    else:
        crashed_tree(JSONLStore(tmp_path / "elsewhere"))
        spawners = {
            "other_parent": ev.SpawnedBy(session_id="another-root", call_id="w9"),
            "no_spawner": None,
            "other_agent": ev.SpawnedBy(session_id="root", call_id="w1", agent_id="intruder"),
        }
        _waiting_child(store, child, spawners[shape], waits_on=child_session_id(child, "loop"))
    before = {p: p.read_bytes() for p in tmp_path.rglob("*.jsonl")}
    code, out, err = cli("revive", "root", "--store", str(tmp_path), "--tree")
    assert code == 3, (code, out, err)
    expected = {
        "cycle": "spawn cycle",
        "other_parent": "spawned by session",
        "no_spawner": "names no session that spawned it",
        "other_agent": "agent 'intruder'",
    }
    assert expected[shape] in err, err
    # Refused whole: not a byte written anywhere in the tree.
    assert {p: p.read_bytes() for p in tmp_path.rglob("*.jsonl")} == before
    with pytest.raises(turnlog.FormatError):
        revive_tree(store, "root")


def test_a_tree_whose_carry_on_died_is_swept_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once no awaited child runs or has written for the grace period, the
    carry-on is taken for dead: the waiting root is recovered like any crash,
    not left open forever."""
    from turnlog.ops import sweep as sweeper

    store = JSONLStore(tmp_path)
    crashed_tree(store)
    code, _, err = cli("revive", "root", "--store", str(tmp_path), "--tree")
    assert code == 0, err
    assert {s.session_id: s.action for s in sweep(store)}.get("root") == "skipped"
    monkeypatch.setattr(sweeper, "CARRY_ON_GRACE_S", -1.0)
    swept = {s.session_id: s for s in sweep(store)}
    assert swept["root"].action == "recovered", swept
    assert turnlog.inspect(store, "root").open_turn is None
