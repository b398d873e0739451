"""The status and action words of the results are `Literal`s: each is exactly
what the code can produce.

mypy checks the other direction (a value the code returns must be one of the
`Literal`'s); here every value is reached by running the path that makes it,
so a word the `Literal` keeps but nothing produces any more fails too, and a
new path must be added here with its value.
"""

from __future__ import annotations

import subprocess
import sys
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any, get_args

import msgspec
import pytest

import turnlog
from builders import (
    assistant,
    crashed_session,
    paused_session,
    put,
    turn_end,
    turn_start,
    write_session,
)
from paths import SUPPORT
from turnlog import events as ev
from turnlog.core.revivable import Refusal, refusal
from turnlog.errors import TurnlogError
from turnlog.ops import sweep as sweeper
from turnlog.ops.inspection import Inspection, InspectionReason, InspectionStatus
from turnlog.ops.revival import RevivalReason
from turnlog.ops.sweep import SweepAction, sweep
from turnlog.ops.tree import TreeDecision, TreeNode, TreeOutcome, revive_tree
from turnlog.stores import JSONLStore

PROGRAM = str(SUPPORT / "agent_program.py")
SIGKILLED = -9


def words(literal: Any) -> set[str]:
    values = get_args(literal)
    assert values and all(isinstance(v, str) for v in values), values
    assert len(values) == len(set(values)), values
    return set(values)


def crashed_again(store: JSONLStore, session_id: str) -> None:
    """Revived once, then ran on and crashed again: one revival spent."""
    with turnlog.open(store, session_id) as log:
        assert turnlog.revive(log).reason == "revived"
        log.append(log.next_turn_start())


def sessions_in_every_state(tmp_path: Path) -> JSONLStore:
    root = tmp_path / "store"
    store = JSONLStore(root)
    put(store, crashed_session("crashed"))
    put(store, crashed_session("told"))
    with turnlog.open(store, "told") as log:
        assert turnlog.revive(log).reason == "revived"
    put(store, crashed_session("capped"))
    crashed_again(store, "capped")
    put(store, paused_session("paused"))
    with turnlog.open(store, "engine", engine_run=ev.EngineRun(engine="dbos", run_id="wf")) as log:
        log.begin_turn()
        log.user("pay")
        log.close()  # the worker dies inside the engine's turn
    write_session(root / "idle.jsonl", [ev.UserMessage(content="hi")])
    write_session(
        root / "finished.jsonl",
        [ev.UserMessage(content="hi"), turn_start(1), assistant(content="hello"), turn_end(1)],
    )
    write_session(
        root / "owing.jsonl",
        [
            ev.UserMessage(content="research in the background"),
            turn_start(1),
            ev.SubagentSpawned(agent_id="bg", background=True),
            assistant(content="started it"),
            ev.TurnEnd(turn=1, reason="complete", reports_owed=["bg"]),
        ],
    )
    write_session(root / "header.jsonl", [])
    (root / "nothing.jsonl").write_bytes(b"")
    (root / "foreign.jsonl").write_bytes(b"hello\nworld\n")
    write_session(root / "damaged.jsonl", [ev.UserMessage(content="hi"), turn_start(1)])
    with open(root / "damaged.jsonl", "ab") as f:
        # A complete record with a valid checksum, of a type this version does not know.
        body = b'{"seq":3,"type":"tool_progress","data":{"pct":50}'
        f.write(body + b',"crc":"%08x"}\n' % zlib.crc32(body))
    return store


def inspections(store: JSONLStore) -> Iterator[Inspection]:
    for session_id in (
        "crashed",
        "told",
        "paused",
        "engine",
        "idle",
        "owing",
        "finished",
        "header",
        "nothing",
        "foreign",
        "damaged",
        "missing",
    ):
        yield turnlog.inspect(store, session_id)
    yield turnlog.inspect(store, "capped", max_revivals=1)
    yield turnlog.inspect(store, "crashed", max_revivals=0)
    with turnlog.open(store, "idle"):
        yield turnlog.inspect(store, "idle")  # its writer is live


def test_inspection_status_and_reason(tmp_path: Path) -> None:
    found = list(inspections(sessions_in_every_state(tmp_path)))
    assert {f.status for f in found} == words(InspectionStatus)
    assert {f.reason for f in found} == words(InspectionReason)
    # The typed fields still go through JSON and back as their words.
    for inspection in found:
        assert msgspec.json.decode(msgspec.json.encode(inspection), type=Inspection) == inspection


def test_refusal(tmp_path: Path) -> None:
    store = sessions_in_every_state(tmp_path)
    seen = set()
    for session_id, cap in [
        ("header", 3),
        ("finished", 3),
        ("crashed", 0),
        ("capped", 1),
        ("crashed", 3),
        ("paused", 3),
        ("engine", 3),
    ]:
        with turnlog.open(store, session_id) as log:
            seen.add(refusal(log.verdict(), cap))
    assert seen == words(Refusal) | {None}


def test_revival_reason(tmp_path: Path) -> None:
    store = sessions_in_every_state(tmp_path)
    seen = {
        turnlog.revive(store, session_id, max_revivals=cap).reason
        for session_id, cap in [
            ("crashed", 3),
            ("told", 3),
            ("header", 3),
            ("finished", 3),
            ("idle", 0),
            ("capped", 1),
            ("missing", 3),
            ("damaged", 3),
            ("paused", 3),
            ("engine", 3),
        ]
    }
    with turnlog.open(store, "idle"):
        # Its writer is live here; another process would say "running" too.
        seen.add(_revive_elsewhere(store, "idle"))
    assert seen == words(RevivalReason)


def _revive_elsewhere(store: JSONLStore, session_id: str) -> str:
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, turnlog\n"
            "print(turnlog.revive(turnlog.stores.JSONLStore(sys.argv[1]), sys.argv[2]).reason)",
            store.directory,
            session_id,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_sweep_action(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def swept(*session_ids: str, **options: Any) -> set[str]:
        store = JSONLStore(tmp_path / "sweep")
        for session_id in session_ids:
            put(store, crashed_session(session_id))
        return {s.action for s in sweep(store, **options)}

    actions = swept("a") | swept("b", revive=True)
    expiring = JSONLStore(tmp_path / "expiring")
    put(expiring, paused_session("p", until="2020-01-01T00:00:00Z"))
    actions |= {s.action for s in sweep(expiring)}
    with turnlog.open(JSONLStore(tmp_path / "sweep"), "a"):
        actions |= swept()  # its writer is live
    # Found crashed, then the repair under its lock fails: reported, not raised.
    broken = TurnlogError("the store refused the write")
    monkeypatch.setattr(sweeper, "open_log", lambda *a, **k: (_ for _ in ()).throw(broken))
    actions |= swept("c")
    assert actions == words(SweepAction)


def test_tree_decision_and_outcome(tmp_path: Path) -> None:
    """A root waiting on two children, one finished and one killed mid-tool,
    revived twice, then trees whose root may not be revived."""
    where = tmp_path / "tree"
    died = subprocess.run(
        [
            sys.executable,
            PROGRAM,
            "run",
            str(where),
            str(tmp_path / "side"),
            "finished",
            "-",
            "async",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert died.returncode == SIGKILLED, died.stderr
    nodes: list[TreeNode] = []
    for _ in range(2):
        with revive_tree(where, "root") as tree:
            nodes += tree.nodes
    store = sessions_in_every_state(tmp_path)
    for session_id, cap in [
        ("header", 3),
        ("finished", 3),
        ("crashed", 0),
        ("capped", 1),
        ("paused", 3),
        ("engine", 3),
    ]:
        with revive_tree(store, session_id, max_revivals=cap) as tree:
            nodes += tree.nodes
    assert {node.decision for node in nodes} == words(TreeDecision)
    assert {node.outcome for node in nodes} == words(TreeOutcome)
