"""What every durable-engine kill case checks: the log after the run finished, held to the tools' and the model's ledgers (tests/support/engine_agent.py)."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import turnlog
from builders import assert_exports_valid
from turnlog import events as ev
from turnlog.stores import open_store

CALLS = {"c1": "lookup", "c2": "charge", "c3": "email"}
# Every live write of a clean run (turn, prompt, three steps, three calls).
WRITES = 18

# A kill inside each tool, inside the second model request, and after writes
# that end a step, dispatch a call and answer one.
FAST_POINTS = [
    ["tool:charge"],
    ["tool:lookup"],
    ["model:2"],
    ["event:11"],
    ["tool:charge", "event:3"],
]


@dataclass
class Tally:
    kills: int = 0
    recoveries: int = 0
    tool_runs: int = 0
    double_runs: int = 0
    r1: int = 0
    cases: list[str] = field(default_factory=list)


def check_case(target: str, work: Path, tally: Tally, label: str) -> None:
    """The log after the workflow finished, held to the ground truth."""
    runs = Counter(line.split()[1] for line in (work / "tools.log").read_text().splitlines())
    tally.tool_runs += sum(runs.values())
    tally.double_runs += sum(1 for n in runs.values() if n > 1)
    assert all(n == 1 for n in runs.values()), (label, runs)
    store, _ = open_store(target)
    events = list(store.iter_events("s1"))
    types = Counter(type(e.data).__name__ for e in events)
    # One run's log: one turn, one prompt, one request per call.
    assert types["TurnStart"] == types["TurnEnd"] == types["UserMessage"] == 1, (label, types)
    assert events[-1].data == ev.TurnEnd(reason="complete", turn=1, steps=3), label
    results = [e for e in events if isinstance(e.data, ev.ToolResult)]
    assert sorted(r.data.call_id for r in results) == ["c1", "c2", "c3"], label
    requests = [json.loads(line) for line in (work / "model.jsonl").read_text().splitlines()]
    final_request = {m["call_id"]: m["content"] for m in requests[-1] if m["role"] == "tool"}
    for result in results:
        call_id = result.data.call_id
        if result.data.rule == "R1":
            # Killed after the dispatch (before the body, or inside it after
            # its side effect): never run again, and the model reads that
            # its outcome is unknown.
            tally.r1 += 1
            assert runs[call_id] <= 1, label
            assert result.origin == "recovery"
            assert "NOT been retried" in final_request[call_id], label
        else:
            assert runs[call_id] == 1, label
            assert final_request[call_id] == f"{CALLS[call_id]} done", label
    with turnlog.open(store, "s1") as log:
        assert not log.crashed
        assert_exports_valid(log.messages)


def every_point() -> list[list[str]]:
    single = [[f"event:{k}"] for k in range(1, WRITES + 1)]
    single += [[f"tool:{name}"] for name in CALLS.values()]
    single += [[f"model:{n}"] for n in (1, 2, 3)]
    # Killed again during the recovery: at a replayed-then-live point.
    double = [["tool:charge", f"event:{k}"] for k in (1, 2, 4)]
    double += [["event:6", "tool:email"], ["tool:lookup", "tool:charge"]]
    return single + double


def check_payer_case(work: Path, store: str, kill: str) -> None:
    """A Pydantic AI payer run (tests/support/pydantic_engine_agent.py) after its
    kill and its engine's recovery: the tool ran once, the log is one run's,
    and after a kill in the tool the model's next request reads R1."""
    assert (work / "tools.log").read_text().splitlines() == ["send_money bob"]
    events = list(open_store(store)[0].iter_events("s1"))
    types = Counter(type(e.data).__name__ for e in events)
    assert types["TurnStart"] == types["UserMessage"] == types["ToolDispatch"] == 1, types
    assert types["ToolResult"] == 1 and types["TurnEnd"] == 1, types
    (result,) = [e for e in events if isinstance(e.data, ev.ToolResult)]
    last_request = json.loads((work / "model.jsonl").read_text().splitlines()[-1])
    if kill == "tool":
        assert result.data.rule == "R1" and result.origin == "recovery"
        assert "NOT been retried" in last_request[0]
    else:
        assert result.data.content == "sent to bob" and last_request == ["sent to bob"]
    with turnlog.open(store, "s1") as log:
        assert not log.crashed
        assert_exports_valid(log.messages)
