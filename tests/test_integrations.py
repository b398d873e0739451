"""The integrations under the real frameworks, offline, with their own scripted
models: SIGKILL inside a tool, then inspect, recover and resume in fresh
processes; the tool ran once. And the same crash without turnlog, for contrast."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from entry_point import cli
from turnlog.providers import PROVIDERS

PROGRAM = str(Path(__file__).with_name("framework_program.py"))
FRAMEWORKS = ["openai-agents", "pydantic-ai", "langgraph"]
SIGKILLED = -9
FINAL = "all charges settled"


def program(*args: str, kill_at: int | None = None) -> subprocess.CompletedProcess[str]:
    env = {"KILL_AT": str(kill_at)} if kill_at is not None else {}
    import os

    return subprocess.run(
        [sys.executable, PROGRAM, *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **env, "OPENAI_AGENTS_DISABLE_TRACING": "1"},
    )


def ran(side: Path) -> list[int]:
    return [int(line) for line in side.read_text().split()] if side.exists() else []


@pytest.mark.parametrize("parallel", [False, True], ids=["one call", "parallel calls"])
@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_killed_mid_tool_then_recovered_and_resumed(
    tmp_path: Path, framework: str, parallel: bool
) -> None:
    store, side = tmp_path / "store", tmp_path / "side"
    flags = ["--parallel"] if parallel else []
    killed_in = 2 if parallel else 1
    died = program(framework, "run", str(store), str(side), *flags, kill_at=killed_in)
    assert died.returncode == SIGKILLED, died.stderr
    session = str(store / "run-1.jsonl")

    code, out, _ = cli("inspect", session, "--json")
    found = json.loads(out)
    assert code == 0 and found["status"] == "interrupted"
    owed = {c["call_id"]: c["risk"] for c in found["owed_calls"]}
    killed_call = f"call_1_{killed_in}"
    assert owed[killed_call] == "tool_outcome_unknown"  # dispatched: it may have run
    assert set(owed) <= {"call_1_1", "call_1_2"}

    code, out, _ = cli("recover", session, "--json")
    appended = json.loads(out)["appended"]
    results = [e for e in appended if e["type"] == "tool_result"]
    assert code == 0 and [r["data"]["call_id"] for r in results] == list(owed)
    code, out, _ = cli("recover", session, "--json")
    assert json.loads(out)["appended"] == []  # a second recover appends nothing

    resumed = program(framework, "resume", str(store), str(side), *flags)
    assert resumed.returncode == 0, resumed.stderr
    seen = json.loads(resumed.stdout.strip().splitlines()[-1])
    assert seen["final"] == FINAL
    # The model's input on resume holds each call and its result, same ids.
    expected = [f"call_1_{a}" for a in ([1, 2] if parallel else [1])]
    assert seen["calls"] == expected and sorted(seen["outputs"]) == expected
    assert sorted(ran(side)) == ([1, 2] if parallel else [1])  # every charge ran once

    for provider in PROVIDERS:
        code, out, _ = cli("export", session, "--to", provider, "--validate")
        assert code == 0, (provider, out)
    code, out, _ = cli("inspect", session, "--json")
    assert json.loads(out)["status"] == "finished"


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_without_turnlog_the_same_crash_charges_twice(tmp_path: Path, framework: str) -> None:
    """The failure the integration exists for: the framework's own persistence
    resumes without the call, or re-runs the tool."""
    store, side = tmp_path / "store", tmp_path / "side"
    died = program(framework, "plain-run", str(store), str(side), kill_at=1)
    assert died.returncode == SIGKILLED, died.stderr
    resumed = program(framework, "plain-resume", str(store), str(side))
    assert resumed.returncode == 0, resumed.stderr
    assert ran(side) == [1, 1]
