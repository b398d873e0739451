"""Revival for real agents: the kill matrix, subagent trees, asyncio and the cap."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import forkserver
import turnlog
from entry_point import cli
from paths import SUPPORT
from turnlog import events as ev
from turnlog.core.fold import fold
from turnlog.events import Risk, ToolCall
from turnlog.providers import PROVIDERS, render, validate
from turnlog.runtime.async_loop import aopen, arun_turn
from turnlog.runtime.loop import AgentSpec, Reply, Tool
from turnlog.stores import JSONLStore
from turnlog.stores.fileio import FileIO

PROGRAM = str(SUPPORT / "agent_program.py")
SIGKILLED = -9
RUNS_PER_CELL = 2


def program(*args: str) -> subprocess.CompletedProcess[str]:
    return forkserver.run(
        [sys.executable, PROGRAM, *args], capture_output=True, text=True, timeout=120
    )


def side_calls(side: Path) -> list[tuple[str, str, str]]:
    if not side.exists():
        return []
    return [tuple(json.loads(line)) for line in side.read_text().splitlines()]  # type: ignore[misc]


def assert_exports_valid(store: Path) -> None:
    jsonl = JSONLStore(store)
    for session_id in jsonl.sessions():
        messages = fold(jsonl.read(session_id)).messages
        for provider in PROVIDERS:
            assert validate(provider, render(provider, messages)) == [], (session_id, provider)


# -- the kill matrix -----------------------------------------------------------------

# What the decision table predicts for the two calls of the step (call _0 and
# call _1), by kill point. In the async loop both calls run at once, so a
# second call may or may not have been dispatched, or answered, when the
# first one is killed: the table then predicts by what the log shows.
PREDICTED: dict[str, dict[str, set[str | None]]] = {
    "model": {"_0": {None}, "_1": {None}},
    "reply": {"_0": {"R4"}, "_1": {"R4"}},
    "dispatch": {"_0": {"R1"}, "_1": {"R2"}},
    "body": {"_0": {"R1"}, "_1": {"R2"}},
    "after_body": {"_0": {"R1"}, "_1": {"R2"}},
    "result": {"_0": {None}, "_1": {"R2"}},
    "turn_end": {"_0": {None}, "_1": {None}},
}
ASYNC_EITHER = {"body", "after_body", "result"}
MATRIX: Counter[tuple[str, str, str]] = Counter()


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("kill", list(PREDICTED))
def test_kill_matrix(tmp_path: Path, kill: str, mode: str) -> None:
    for run in range(RUNS_PER_CELL):
        store, side = tmp_path / f"s{run}", tmp_path / f"side{run}"
        died = program("run", str(store), str(side), "matrix", kill, mode)
        assert died.returncode == SIGKILLED, died.stderr

        found = turnlog.inspect(store, "root")
        assert found.status == "interrupted"
        rules = {call.call_id[-2:]: call.rule for call in found.owed_calls}
        for suffix, allowed in PREDICTED[kill].items():
            if mode == "async" and kill in ASYNC_EITHER and suffix == "_1":
                allowed = {None, "R1", "R2"}
            assert rules.get(suffix) in allowed, (kill, mode, rules)
            risk = next(
                (c.risk for c in found.owed_calls if c.call_id.endswith(suffix)), "answered"
            )
            MATRIX[(kill, risk, mode)] += 1
        not_started = {c.call_id for c in found.owed_calls if c.risk == Risk.NOT_STARTED}
        ran = side_calls(side)
        # The one claim that must never be wrong: a call said not to have run did not.
        assert not_started.isdisjoint({call_id for _, call_id, _ in ran})

        revived = program("revive", str(store), str(side), "matrix", mode)
        assert revived.returncode == 0, revived.stderr
        if kill == "turn_end":
            # It gave its answer and died before its turn's end: finished,
            # the turn closed, nothing revived and nothing run again.
            assert (found.revivable, found.reason) == (False, "finished")
            assert json.loads(revived.stdout).get("root") in (None, "not revived: finished")
        else:
            assert json.loads(revived.stdout)["root"].startswith("done")
        # Never replayed: every recorded execution is of a distinct call.
        again = side_calls(side)
        assert len(again) == len(set(again)), again
        assert again[: len(ran)] == ran
        assert turnlog.inspect(store, "root").status == "finished"
        assert_exports_valid(store)


def test_kill_matrix_report() -> None:
    """Prints the matrix (kill point x risk class x loop) the closing note reports."""
    if not MATRIX:
        pytest.skip("the matrix did not run in this process")
    for (kill, risk, mode), runs in sorted(MATRIX.items()):
        print(f"{kill:11} {risk:22} {mode:5} {runs}")
    assert sum(MATRIX.values()) == len(PREDICTED) * 2 * 2 * RUNS_PER_CELL


# -- subagent trees ------------------------------------------------------------------


def results_of(store: Path, session_id: str) -> dict[str, ev.Event]:
    return {
        e.data.call_id: e
        for e in JSONLStore(store).read(session_id)
        if isinstance(e.data, ev.ToolResult)
    }


def test_parent_killed_waiting_on_a_finished_child_and_one_mid_tool(tmp_path: Path) -> None:
    store, side = tmp_path / "s", tmp_path / "side"
    assert program("run", str(store), str(side), "finished", "-", "async").returncode == SIGKILLED
    a, b = "root.agents/worker-call_1_0", "root.agents/worker-call_1_1"
    assert turnlog.inspect(store, a).status == "finished"
    assert turnlog.inspect(store, b).status == "interrupted"
    root = turnlog.inspect(store, "root")
    assert [c.call_id for c in root.owed_calls] == ["call_1_0", "call_1_1"]
    before = side_calls(side)

    done = program("revive", str(store), str(side), "two", "async")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["_outcomes"] == {
        a: "answered its wait from its log",
        b: "revived",
        "root": "revived",
    }
    # B kept its id: no new child session appeared.
    assert JSONLStore(store).children("root") == [a, b]
    results = results_of(store, "root")
    assert ev.content_text(results["call_1_0"].data.content) == "worker did a [charged a]"
    assert ev.content_text(results["call_1_1"].data.content).startswith("worker did b")
    assert results["call_1_1"].origin is None and results["call_1_1"].data.risk is None
    assert side_calls(side) == before  # no tool ran twice, A did not run again
    assert out["root"].startswith("root done")
    assert turnlog.inspect(store, "root").status == "finished"
    assert_exports_valid(store)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_grandchild_killed_mid_tool(tmp_path: Path, mode: str) -> None:
    store, side = tmp_path / "s", tmp_path / "side"
    assert program("run", str(store), str(side), "nested", "-", mode).returncode == SIGKILLED
    manager = "root.agents/manager-call_1_0"
    worker = f"{manager}.agents/worker-call_1_0"
    assert [turnlog.inspect(store, s).status for s in ("root", manager, worker)] == [
        "interrupted"
    ] * 3
    before = side_calls(side)
    done = program("revive", str(store), str(side), "nested", mode)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert set(out["_outcomes"].values()) == {"revived"}
    assert out[manager].startswith("manager done [worker did deep")
    assert ev.content_text(results_of(store, manager)["call_1_0"].data.content) == out[worker]
    assert ev.content_text(results_of(store, "root")["call_1_0"].data.content) == out[manager]
    assert side_calls(side) == before
    for session_id in ("root", manager, worker):
        assert turnlog.inspect(store, session_id).status == "finished"
        header = JSONLStore(store).read_header(session_id)
        assert header is not None
    child_header = JSONLStore(store).read_header(worker)
    assert child_header is not None and isinstance(child_header.data, ev.Session)
    assert child_header.data.agent is not None
    assert child_header.data.agent.id == "worker-call_1_0"
    assert child_header.data.spawned_by == ev.SpawnedBy(
        session_id=manager, call_id="call_1_0", agent_id="worker-call_1_0"
    )
    assert_exports_valid(store)


def test_tree_with_a_live_part_is_refused_whole(tmp_path: Path) -> None:
    store, side = tmp_path / "s", tmp_path / "side"
    program("run", str(store), str(side), "two", "-", "sync")
    child = "root.agents/worker-call_1_1"
    before = {p: p.read_bytes() for p in store.rglob("*.jsonl")}
    with turnlog.open(store, child), pytest.raises(turnlog.SessionLockedError):
        turnlog.tree.revive_tree(store, "root")
    assert {p: p.read_bytes() for p in store.rglob("*.jsonl")} == before


def test_child_past_its_cap_leaves_the_wait_to_recovery(tmp_path: Path) -> None:
    store, side = tmp_path / "s", tmp_path / "side"
    program("run", str(store), str(side), "two", "-", "sync")
    child = "root.agents/worker-call_1_1"
    with turnlog.open(store, child) as log:  # revived once on its own already
        assert turnlog.revive(log).revived
        log.append(ev.TurnStart(turn=5))  # and crashed again
    with turnlog.tree.revive_tree(store, "root", max_revivals=1) as tree:
        assert tree.node("root").outcome == "revived"
        assert tree.node(child).outcome == "revival_cap"
        assert tree.node("root").revival.pending == ()  # type: ignore[union-attr]
    wait = results_of(store, "root")["call_1_1"]
    assert (wait.origin, wait.data.risk) == ("recovery", "tool_outcome_unknown")
    # Revived again with nothing run between: told once is enough, even at the
    # cap; nothing is written and no revival is spent.
    before = {p: p.read_bytes() for p in store.rglob("*.jsonl")}
    with turnlog.tree.revive_tree(store, "root", max_revivals=1) as tree:
        assert tree.node("root").outcome == "already revived, not yet run on"
        assert tree.node(child).outcome == "left alone"  # its parent no longer waits on it
        assert [node.session_id for node in tree.revived] == ["root"]
    assert {p: p.read_bytes() for p in store.rglob("*.jsonl")} == before
    with turnlog.open(store, "root") as log:  # the root ran on and crashed again
        log.append(log.next_turn_start())
    with turnlog.tree.revive_tree(store, "root", max_revivals=1) as tree:
        assert tree.node("root").outcome == "revival_cap"
        assert tree.revived == []


# -- asyncio ---------------------------------------------------------------------------


def test_fifty_concurrent_tools_keep_seqs_contiguous(tmp_path: Path) -> None:
    calls = tuple(ToolCall(id=f"c{k}", name="sleep", arguments={"k": k}) for k in range(50))

    started = 0
    all_started = asyncio.Event()

    async def nap(k: int) -> str:
        # Every tool waits for all 50 to have started: run one by one, they
        # would time out here.
        nonlocal started
        started += 1
        if started == len(calls):
            all_started.set()
        await asyncio.wait_for(all_started.wait(), timeout=30)
        return f"slept {k}"

    def model(messages: Any) -> Reply:
        return Reply(tool_calls=calls) if len(messages) == 1 else Reply(content="done")

    async def main() -> None:
        log = await aopen(tmp_path, "many", durability="always")
        async with log:
            reply = await arun_turn(log, model, {"sleep": Tool(run=nap)}, "go")
            assert reply.content == "done"

    asyncio.run(main())
    events = JSONLStore(tmp_path).read("many")
    assert [e.seq for e in events] == list(range(len(events)))
    dispatched: dict[str, int] = {}
    answered = 0
    for event in events:
        if isinstance(event.data, ev.ToolDispatch):
            dispatched[event.data.call_id] = event.seq
        elif isinstance(event.data, ev.ToolResult):
            assert dispatched[event.data.call_id] < event.seq
            answered += 1
    assert answered == 50
    # Every dispatch was durable before any tool could finish.
    first_result = min(e.seq for e in events if isinstance(e.data, ev.ToolResult))
    assert max(dispatched.values()) < first_result
    assert turnlog.verify.verify_session(tmp_path, "many").ok


class SlowSync(FileIO):
    """A disk whose every sync takes 200 ms, and a record of which thread waited."""

    def __init__(self) -> None:
        self.threads: set[str] = set()

    def fsync(self, fd: int) -> None:
        self.threads.add(threading.current_thread().name)
        time.sleep(0.2)
        super().fsync(fd)


def test_event_loop_keeps_serving_while_an_append_waits_on_fsync(tmp_path: Path) -> None:
    io = SlowSync()
    store = JSONLStore(tmp_path, io=io)

    async def main() -> tuple[int, float]:
        log = await aopen(store, "slow", durability="always")
        ticks = 0
        stop = asyncio.Event()

        async def ticker() -> None:
            nonlocal ticks
            while not stop.is_set():
                ticks += 1
                await asyncio.sleep(0.01)

        task = asyncio.create_task(ticker())
        started = time.monotonic()
        await log.user("hello")  # one durable append: 200 ms in fsync
        elapsed = time.monotonic() - started
        stop.set()
        await task
        await log.close()
        return ticks, elapsed

    ticks, elapsed = asyncio.run(main())
    assert elapsed >= 0.2
    # The loop ran the ticker meanwhile (about 20 times; blocked, it would run once).
    assert ticks >= 5, ticks
    assert "MainThread" not in io.threads  # no sync ever ran on the event loop's thread
    assert any(name.startswith("turnlog-") for name in io.threads)


def test_cancelled_async_tool_is_answered_outcome_unknown(tmp_path: Path) -> None:
    async def forever() -> str:
        await asyncio.sleep(3600)
        return "never"

    def model(messages: Any) -> Reply:
        return Reply(tool_calls=(ToolCall(id="c1", name="wait"),))

    async def main() -> None:
        log = await aopen(tmp_path, "cancel")
        async with log:
            task = asyncio.create_task(arun_turn(log, model, {"wait": Tool(run=forever)}, "go"))
            await asyncio.sleep(0.2)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task

    asyncio.run(main())
    events = JSONLStore(tmp_path).read("cancel")
    result = next(e for e in events if isinstance(e.data, ev.ToolResult))
    assert (result.data.risk, result.data.rule) == ("tool_outcome_unknown", "U1")
    assert events[-1].data == ev.TurnEnd(reason="cancelled", turn=1, steps=1)


# -- the cap ---------------------------------------------------------------------------


def test_cap_counts_across_processes_and_past_it_nothing_is_written(tmp_path: Path) -> None:
    store, side = tmp_path / "s", tmp_path / "side"
    program("run", str(store), str(side), "matrix", "body", "sync")
    path = store / "root.jsonl"
    for revival in (1, 2):
        code = forkserver.run(
            [sys.executable, "-m", "turnlog", "revive", str(path), "--max-revivals", "2"],
            capture_output=True,
            text=True,
        )
        assert code.returncode == 0, code.stderr
        with turnlog.open(path) as log:  # crash again: a new turn left open
            log.user("more")
            log.append(ev.TurnStart(turn=10 + revival))
        assert turnlog.inspect(path, max_revivals=2).revivals == revival
    before = path.read_bytes()
    past = forkserver.run(
        [sys.executable, "-m", "turnlog", "revive", str(path), "--max-revivals", "2"],
        capture_output=True,
        text=True,
    )
    assert past.returncode == 1
    assert "revival_cap" in past.stdout + past.stderr
    assert "turnlog recover" in past.stdout + past.stderr
    assert path.read_bytes() == before
    with turnlog.open(path) as log:
        outcome = turnlog.revive(log, max_revivals=0)
        assert (outcome.revived, outcome.reason) == (False, "revival_disabled")
        assert outcome.hint is not None and "turnlog recover" in outcome.hint
    assert path.read_bytes() == before


def test_tool_sees_its_call_id_as_an_idempotency_key(tmp_path: Path) -> None:
    seen: list[tuple[str, str]] = []

    def pay(context: turnlog.loop.ToolContext, amount: int) -> str:
        seen.append((context.session_id, context.call_id))
        return f"paid {amount} with key {context.call_id}"

    def model(messages: Any) -> Reply:
        if len(messages) == 1:
            return Reply(tool_calls=(ToolCall(id="k1", name="pay", arguments={"amount": 3}),))
        return Reply(content="ok")

    with turnlog.open(tmp_path, "ctx") as log:
        turnlog.run_turn(log, model, {"pay": Tool(run=pay, context=True)}, "pay 3")
    assert seen == [("ctx", "k1")]


def test_is_finished_and_the_loop_names_are_exported(tmp_path: Path) -> None:
    with turnlog.open(tmp_path, "f") as log:
        turnlog.run_turn(log, lambda messages: Reply(content="hi"), {}, "hello")
    events = JSONLStore(tmp_path).read("f")
    assert turnlog.is_finished(events)
    # Its answer given, the turn still open: it finished and died before its
    # turn end (recovery closes the turn; nothing is left to run).
    assert turnlog.is_finished(events[:-1])
    answer = next(i for i, e in enumerate(events) if isinstance(e.data, ev.AssistantMessage))
    assert turnlog.is_finished(events[: answer + 1])
    assert not turnlog.is_finished(events[:answer])  # the model's answer not yet written
    assert turnlog.AgentSpec is AgentSpec and "is_finished" in turnlog.__all__


# -- the command ---------------------------------------------------------------------


def test_revive_command_tree_prints_what_to_run_next(tmp_path: Path) -> None:
    store, side = tmp_path / "s", tmp_path / "side"
    program("run", str(store), str(side), "nested", "-", "sync")
    code, out, _ = cli("revive", "root", "--store", str(store), "--tree", "--json")
    assert code == 0
    done = json.loads(out)
    order = [node["session_id"] for node in done["sessions"]]
    manager = "root.agents/manager-call_1_0"
    assert order == [f"{manager}.agents/worker-call_1_0", manager, "root"]
    assert [node["outcome"] for node in done["sessions"]] == ["revived"] * 3
    assert done["sessions"][1]["pending"] == [
        {
            "call_id": "call_1_0",
            "name": "research",
            "agent_id": "worker-call_1_0",
            "child": f"{manager}.agents/worker-call_1_0",
        }
    ]
    assert done["sessions"][1]["agent_id"] == "manager-call_1_0"
    # A live part refuses the tree whole.
    with turnlog.open(store, manager):
        code, _, err = cli("revive", "root", "--store", str(store), "--tree")
    assert code == 4 and "hint:" in err
    # Revived alone now, the manager is not told again and spends no revival;
    # its wait, no longer kept pending for a tree, is answered by recovery.
    code, out, _ = cli("revive", str(store / "root.agents" / "manager-call_1_0.jsonl"), "--json")
    alone = json.loads(out)
    assert code == 0 and (alone["reason"], alone["revival"]) == ("already_revived", 1)
    assert [(e["type"], e["data"].get("risk")) for e in alone["appended"]] == [
        ("tool_result", "tool_outcome_unknown"),
        ("step_end", None),
        ("turn_end", None),
    ]
    # Its export is valid (the root's is not yet: its wait on the manager is pending).
    messages = fold(JSONLStore(store).read(manager)).messages
    for provider in PROVIDERS:
        assert validate(provider, render(provider, messages)) == [], provider


def test_revive_command_on_a_finished_session_writes_nothing(tmp_path: Path) -> None:
    with turnlog.open(tmp_path, "done") as log:
        log.user("hi")
        with log.turn(), log.step():
            log.assistant("hello")
    before = (tmp_path / "done.jsonl").read_bytes()
    code, out, _ = cli("revive", str(tmp_path / "done.jsonl"), "--json")
    assert code == 1 and json.loads(out)["reason"] == "finished"
    assert (tmp_path / "done.jsonl").read_bytes() == before


def test_sweep_revive_recovers_a_subagent_but_revives_only_roots(tmp_path: Path) -> None:
    store, side = tmp_path / "s", tmp_path / "side"
    program("run", str(store), str(side), "two", "-", "sync")
    code, out, _ = cli("sweep", str(store), "--revive", "--json")
    assert code == 0
    done = {item["session_id"]: item for item in json.loads(out)["sessions"]}
    assert done["root"]["action"] == "revived"
    child = done["root.agents/worker-call_1_1"]
    assert child["action"] == "recovered" and "subagent" in child["reason"]
    assert turnlog.inspect(store, "root.agents/worker-call_1_1").revivals == 0
