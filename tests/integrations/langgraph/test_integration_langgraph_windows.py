"""LangGraph killed at each point between turnlog's record of a tool result, the
checkpoint LangGraph saves after the tool node, and the next model call, then
resumed as docs/integrations.md says (`recover_thread(..., revive=True)`, then
`graph.invoke(None, config)`): the model runs and is told, no call is left
unanswered in the thread, and no tool runs twice (the ledger the tool writes).
A run that died after the model's final answer was saved is finished: its
answer is recorded and nothing runs. A small random campaign (slow) repeats it.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import forkserver
import turnlog
from entry_point import cli
from paths import SUPPORT
from turnlog.providers import PROVIDERS

PROGRAM = str(SUPPORT / "resume_program.py")
SIGKILLED = -9
FINAL = "all charges settled"
# Each a window of its own: what the thread and the log hold when the process dies.
MODEL_NEXT = [
    # The log holds the result; the thread's checkpoint still asks for the tool step.
    "after_result",
    # LangGraph saved the tool node's writes, not yet the checkpoint after them:
    # the thread's `next` is empty, and `invoke(None)` would apply those writes.
    "after_tools_writes",
    # The checkpoint after the tool node holds the results; the model is next.
    "after_tools_checkpoint",
    # The model was called with the results and died before it answered.
    "in_model",
]


def program(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return forkserver.run(
        [sys.executable, PROGRAM, *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **env},
    )


def ledger(side: Path) -> list[int]:
    return [int(line) for line in side.read_text().split()] if side.exists() else []


def killed_then_resumed(
    tmp_path: Path, point: str, *, parallel: bool = False, drive: str = "invoke", shell: str = ""
) -> tuple[dict[str, Any], list[int], list[int]]:
    """Run until KILL_POINT, optionally repair from a shell, resume the documented
    way; the resumed run's report and the ledger before and after."""
    store, side = tmp_path / "store", tmp_path / "side"
    flags = ["--parallel"] if parallel else []
    died = program("langgraph", drive, "run", str(store), str(side), *flags, KILL_POINT=point)
    assert died.returncode == SIGKILLED, died.stderr
    before = ledger(side)
    if shell:
        code, out, err = cli(shell, str(store / "run-1.jsonl"))
        assert code == 0, (out, err)
    resumed = program("langgraph", drive, "resume", str(store), str(side), *flags)
    assert resumed.returncode == 0, resumed.stderr
    assert "HistoryMismatchWarning" not in resumed.stderr
    seen: dict[str, Any] = json.loads(resumed.stdout.strip().splitlines()[-1])
    return seen, before, ledger(side)


def finished_and_valid(store: Path) -> list[Any]:
    assert turnlog.inspect(store, "run-1").status == "finished"
    for provider in PROVIDERS:
        code, out, _ = cli("export", "run-1", "--store", str(store), "--to", provider, "--validate")
        assert code == 0, (provider, out)
    return turnlog.JSONLStore(store).read("run-1")


def notices(events: list[Any]) -> int:
    return sum(
        1
        for e in events
        if isinstance(e.data, turnlog.events.UserMessage) and e.data.injected == "revival"
    )


@pytest.mark.parametrize("point", MODEL_NEXT)
def test_killed_between_the_result_and_the_model_resumes_with_the_model_told(
    tmp_path: Path, point: str
) -> None:
    seen, before, after = killed_then_resumed(tmp_path, point)
    assert before == [1]
    assert seen["final"] == FINAL
    assert seen["model_calls"] == 1 and seen["notice"] is True  # the model ran, and was told
    assert seen["calls"] == ["call_1_1"] and seen["outputs"] == ["call_1_1"]
    assert seen["unanswered"] == []
    assert after == before  # the charge ran once
    events = finished_and_valid(tmp_path / "store")
    assert notices(events) == 1
    assert turnlog.inspect(tmp_path / "store", "run-1").revivals == 1


@pytest.mark.parametrize("point", ["after_tools_writes", "after_tools_checkpoint"])
def test_parallel_calls_killed_after_their_results_resume_with_the_model_told(
    tmp_path: Path, point: str
) -> None:
    seen, before, after = killed_then_resumed(tmp_path, point, parallel=True)
    assert sorted(before) == [1, 2]
    assert seen["final"] == FINAL and seen["notice"] is True and seen["model_calls"] == 1
    assert sorted(seen["outputs"]) == ["call_1_1", "call_1_2"] and seen["unanswered"] == []
    assert after == before
    assert notices(finished_and_valid(tmp_path / "store")) == 1


@pytest.mark.parametrize("point", ["after_tools_writes", "after_tools_checkpoint"])
def test_revived_from_the_shell_then_the_documented_resume_tells_the_model_once(
    tmp_path: Path, point: str
) -> None:
    """`turnlog revive` ran first (a sweep, an operator): the notice it wrote
    reaches the thread after the step's results, the model runs next, and the
    documented resume does not tell it twice."""
    seen, before, after = killed_then_resumed(tmp_path, point, shell="revive")
    assert seen["final"] == FINAL and seen["notice"] is True and seen["model_calls"] == 1
    assert seen["outputs"] == ["call_1_1"] and seen["unanswered"] == []
    assert after == before == [1]
    assert notices(finished_and_valid(tmp_path / "store")) == 1


def test_killed_after_the_final_answer_was_saved_is_finished(tmp_path: Path) -> None:
    """The model answered and LangGraph saved the answer; the process died
    before `finish`. Nothing is left to run: the resume records the answer the
    thread holds, once, and neither the model nor the tool runs again."""
    seen, before, after = killed_then_resumed(tmp_path, "after_final_checkpoint")
    assert seen["final"] == FINAL and seen["model_calls"] == 0 and seen["unanswered"] == []
    assert after == before == [1]
    events = finished_and_valid(tmp_path / "store")
    answers = [
        e.data
        for e in events
        if isinstance(e.data, turnlog.events.AssistantMessage) and not e.data.tool_calls
    ]
    assert [turnlog.events.content_text(a.content) for a in answers] == [FINAL]
    assert notices(events) == 0


# Every point a run can die at, mid-tool or between the tool and the model.
POINTS = ["in_tool", *MODEL_NEXT, "after_final_checkpoint"]


@pytest.mark.slow
def test_random_kills_always_resume(tmp_path: Path) -> None:
    """KILL_TRIALS rounds (default 20), each killed at a random point, one call
    or two in parallel, resumed the documented way: counted, then asserted."""
    chance = random.Random("langgraph-windows")
    trials = int(os.environ.get("KILL_TRIALS", "20"))
    outcome: Counter[str] = Counter()
    for trial in range(trials):
        point, parallel = chance.choice(POINTS), chance.random() < 0.5
        here = tmp_path / str(trial)
        seen, before, after = killed_then_resumed(here, point, parallel=parallel)
        ran_once = after == before and len(set(after)) == len(after)
        resumed = seen["final"] == FINAL and not seen["unanswered"]
        told = seen["notice"] or point == "after_final_checkpoint"
        finished_and_valid(here / "store")
        outcome["resumed" if ran_once and resumed and told else f"failed at {point}"] += 1
    print(f"LangGraph windows: {dict(outcome)} of {trials} kills")
    assert outcome["resumed"] == trials, outcome
