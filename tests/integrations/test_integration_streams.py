"""Streamed runs killed with SIGKILL inside the tool, then resumed as the docs say:
Pydantic AI's `agent.run_stream` and `agent.iter`, LangGraph's `graph.stream` and
`graph.astream`. The docs' streaming blocks run as written; the same runs in the
test program are also repaired from a shell (`turnlog sweep`, `turnlog recover`)
first, and LangGraph's are also killed once the tool step's results were saved.
The tool ran once (the ledger it writes), the model was handed the call's
answer (and told, when revived), and the session exports valid for all four
providers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
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
# Each stream, by its framework and by the name of its doc block.
STREAMS = [
    ("pydantic-ai", "run_stream", "stream"),
    ("pydantic-ai", "iter", "iter"),
    ("langgraph", "stream", "stream"),
    ("langgraph", "astream", "astream"),
]
# The doc's sessions are named as its blocks name them.
DOC_SESSION = {"pydantic-ai": "support-42", "langgraph": "thread-7"}


def program(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return forkserver.run(
        [sys.executable, PROGRAM, *args], capture_output=True, text=True, timeout=120,
        env={**os.environ, **env},
    )  # fmt: skip


def ledger(side: Path) -> list[int]:
    return [int(line) for line in side.read_text().split()] if side.exists() else []


def reported(done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert done.returncode == 0, done.stderr
    assert "HistoryMismatchWarning" not in done.stderr
    found: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return found


def resumed_once(
    seen: dict[str, Any], before: list[int], after: list[int], *, told: bool = True
) -> None:
    assert seen["final"] == FINAL
    assert seen["notice"] is told  # the model was told its process died
    assert seen["calls"] == ["call_1_1"] and seen["outputs"] == ["call_1_1"]
    assert seen["unanswered"] == []
    assert after == before == [1]  # the charge ran once


def finished_and_valid(store: str, session: str, *, revivals: int = 1) -> None:
    found = turnlog.inspect(store, session)
    assert found.status == "finished" and found.revivals == revivals
    for provider in PROVIDERS:
        code, out, _ = cli("export", session, "--store", store, "--to", provider, "--validate")
        assert code == 0, (provider, out)


@pytest.mark.parametrize(("framework", "drive", "block"), STREAMS)
def test_the_docs_streamed_run_survives_a_kill_and_revives(
    tmp_path: Path, framework: str, drive: str, block: str
) -> None:
    workdir, side = tmp_path / "app", tmp_path / "side"
    kill = {"KILL_POINT": "in_tool", "KILL_AT": "1"}
    died = program(framework, "doc", block, str(workdir), str(side), **kill)
    assert died.returncode == SIGKILLED, died.stderr
    before = ledger(side)
    found = turnlog.inspect(workdir / "sessions", DOC_SESSION[framework])
    assert found.status == "interrupted"
    assert [(c.call_id, c.risk) for c in found.owed_calls] == [("call_1_1", "tool_outcome_unknown")]

    seen = reported(program(framework, "doc", f"{block}-revive", str(workdir), str(side)))
    resumed_once(seen, before, ledger(side))
    finished_and_valid(str(workdir / "sessions"), DOC_SESSION[framework])


# Each framework's streams, repaired by each of the two shell commands.
SHELL = [("pydantic-ai", "run_stream", "sweep"), ("pydantic-ai", "iter", "recover")]
SHELL += [("langgraph", "stream", "recover"), ("langgraph", "astream", "sweep")]


@pytest.mark.parametrize(("framework", "drive", "shell"), SHELL)
def test_a_streamed_run_repaired_from_a_shell_resumes_the_documented_way(
    tmp_path: Path, framework: str, drive: str, shell: str
) -> None:
    """Killed inside the charge, repaired by `turnlog sweep` (or `recover`) from
    a shell, then resumed with the same stream: the shell answered the call,
    and the model is handed that answer, and told its process died: Pydantic
    AI's `revive=True` revives a session recovered and not told, as `turnlog
    revive` does; LangGraph's `recover_thread(..., revive=True)` finds the
    thread stopped mid-run and tells it."""
    store, side = tmp_path / "store", tmp_path / "side"
    died = program(framework, drive, "run", str(store), str(side), KILL_POINT="in_tool")
    assert died.returncode == SIGKILLED, died.stderr
    before = ledger(side)
    args = (
        ("sweep", "--store", str(store))
        if shell == "sweep"
        else ("recover", str(store / "run-1.jsonl"))
    )
    code, out, err = cli(*args)
    assert code == 0, (out, err)
    assert turnlog.inspect(store, "run-1").status == "idle"

    seen = reported(program(framework, drive, "resume", str(store), str(side)))
    resumed_once(seen, before, ledger(side), told=True)
    finished_and_valid(str(store), "run-1", revivals=1)


@pytest.mark.parametrize("drive", ["stream", "astream"])
def test_a_langgraph_stream_killed_after_the_tool_steps_results_were_saved_resumes(
    tmp_path: Path, drive: str
) -> None:
    """LangGraph saved the tool node's writes, not the checkpoint after them
    (on the sync and the async SQLite checkpointer): the model runs next, told."""
    store, side = tmp_path / "store", tmp_path / "side"
    died = program(
        "langgraph", drive, "run", str(store), str(side), KILL_POINT="after_tools_writes"
    )
    assert died.returncode == SIGKILLED, died.stderr
    before = ledger(side)
    seen = reported(program("langgraph", drive, "resume", str(store), str(side)))
    resumed_once(seen, before, ledger(side))
    assert seen["model_calls"] == 1
    finished_and_valid(str(store), "run-1")
