"""Calls whose code the framework runs itself, with no tool hook of their own:
Pydantic AI's output functions, the OpenAI Agents SDK's handoffs and its
apply_patch editor, ADK's task-mode sub-agents. Each is dispatched ahead of
the framework (in a hook that fires before it, or with the model's reply), so
a process killed inside that code leaves the call "may have run" (R1), never
"did not run" (R2): the turn dispatched other calls, and without its own
dispatch the call would read as one that never started, which is how a
second charge happens. Real processes, killed with SIGKILL inside the code.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

import forkserver
import turnlog
from entry_point import cli
from paths import SUPPORT
from turnlog import events as ev
from turnlog.providers import PROVIDERS

PROGRAM = str(SUPPORT / "framework_program.py")
SIGKILLED = -9
FINAL = "all charges settled"
SESSION = "run-1"

# What each recorded amount is the work of: `charge` records 1; the call the
# framework runs itself records 2 (its code) or 3 (ADK's sub-agent starting).
CHARGE = "call_1_1"
FRAMEWORK_CALL = "call_1_2"
WORK_OF = {1: {CHARGE}, 2: {FRAMEWORK_CALL, "call_2_ship"}, 3: {FRAMEWORK_CALL}}


def program(framework: str, mode: str, store: Path, side: Path, **env: str) -> Any:
    return forkserver.run(
        [sys.executable, PROGRAM, framework, f"framework-{mode}", str(store), str(side)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **env, "OPENAI_AGENTS_DISABLE_TRACING": "1"},
    )


def ran(side: Path) -> list[int]:
    return [int(line) for line in side.read_text().split()] if side.exists() else []


def events_of(store: Path) -> list[ev.Event]:
    return turnlog.open_store(store)[0].read(SESSION)


# (framework, mode, killed inside, environment): each kill lands inside code
# the framework runs for FRAMEWORK_CALL, or (the exhaustive case) after it ran.
KILLS = [
    # Pydantic AI's default end strategy: `charge` runs, then the output
    # function, and the process dies inside the output function.
    pytest.param("pydantic-ai", "output-run", 2, {}, id="pydantic-ai output function"),
    pytest.param(
        "pydantic-ai",
        "output-run",
        2,
        {"END_STRATEGY": "exhaustive"},
        id="pydantic-ai output function, exhaustive",
    ),
    # Every tool runs under `exhaustive`: the output function has run, and
    # the process dies inside `charge`.
    pytest.param(
        "pydantic-ai",
        "output-run",
        1,
        {"END_STRATEGY": "exhaustive", "CHARGE_AFTER_OUTPUT": "1"},
        id="pydantic-ai killed in a tool after the output function ran",
    ),
    # The handoff's `on_handoff` callback, which the SDK runs with no hook
    # before it but `on_llm_end`.
    pytest.param("openai-agents", "handoff", 2, {}, id="openai-agents handoff callback"),
    # A function call the SDK's ApplyPatchTool answers: the editor runs, and
    # its `on_tool_start` carries no call id.
    pytest.param("openai-agents", "apply-patch", 2, {}, id="openai-agents apply_patch editor"),
    # ADK's task-mode sub-agent, which ADK runs for the delegating call with
    # no tool callback: killed as it starts, and inside its own tool.
    pytest.param("adk", "task-delegation", 3, {}, id="adk task sub-agent starting"),
    pytest.param("adk", "task-delegation", 2, {}, id="adk task sub-agent's tool"),
]


@pytest.mark.parametrize(("framework", "mode", "kill_at", "env"), KILLS)
def test_killed_inside_code_the_framework_runs_reads_may_have_run(
    tmp_path: Path, framework: str, mode: str, kill_at: int, env: dict[str, str]
) -> None:
    store, side = tmp_path / "store", tmp_path / "side"
    died = program(framework, mode, store, side, KILL_AT=str(kill_at), **env)
    assert died.returncode == SIGKILLED, died.stderr[-3000:]
    done = ran(side)
    assert kill_at in done
    assert 2 in done or 3 in done  # the framework's code for the call ran

    session = str(store / f"{SESSION}.jsonl")
    code, out, _ = cli("inspect", session, "--json")
    found = json.loads(out)
    assert code == 0 and found["status"] == "interrupted"
    owed = {c["call_id"]: (c["risk"], c["rule"]) for c in found["owed_calls"]}
    assert owed[FRAMEWORK_CALL] == ("tool_outcome_unknown", "R1")
    # The honest verdict in full: any owed call said not to have started
    # really did not run (its work is not in the side file).
    for amount in done:
        for call_id in WORK_OF[amount]:
            assert owed.get(call_id, ("", ""))[0] != "tool_not_started", (call_id, owed)

    code, out, _ = cli("recover", session, "--json")
    appended = json.loads(out)["appended"]
    answers = {e["data"]["call_id"]: e["data"] for e in appended if e["type"] == "tool_result"}
    assert code == 0 and answers[FRAMEWORK_CALL]["risk"] == "tool_outcome_unknown"
    for provider in PROVIDERS:
        code, out, _ = cli("export", session, "--to", provider, "--validate")
        assert code == 0, (provider, out)


RUNS = [
    pytest.param("pydantic-ai", "output-run", {}, [1, 2], id="pydantic-ai output function"),
    pytest.param(
        "pydantic-ai",
        "output-run",
        {"END_STRATEGY": "exhaustive"},
        [1, 2],
        id="pydantic-ai output function, exhaustive",
    ),
    pytest.param("openai-agents", "handoff", {}, [1, 2], id="openai-agents handoff"),
    pytest.param("openai-agents", "apply-patch", {}, [1, 2], id="openai-agents apply_patch"),
    pytest.param("adk", "task-delegation", {}, [1, 2, 3], id="adk task sub-agent"),
]


@pytest.mark.parametrize(("framework", "mode", "env", "work"), RUNS)
def test_a_run_that_is_not_killed_records_the_call_as_any_dispatched_call(
    tmp_path: Path, framework: str, mode: str, env: dict[str, str], work: list[int]
) -> None:
    """Without a crash the run goes on as it does without turnlog: the
    framework's answer for the call is recorded as its result, after its
    dispatch, and the turn ends complete."""
    store, side = tmp_path / "store", tmp_path / "side"
    done = program(framework, mode, store, side, **env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.strip().splitlines()[-1])["final"] == FINAL
    assert sorted(ran(side)) == work  # each piece of work ran once

    events = events_of(store)
    seqs = {
        type(e.data).__name__: e.seq
        for e in events
        if isinstance(e.data, (ev.ToolDispatch, ev.ToolResult)) and e.data.call_id == FRAMEWORK_CALL
    }
    assert seqs["ToolDispatch"] < seqs["ToolResult"]
    ends = [e.data.reason for e in events if isinstance(e.data, ev.TurnEnd)]
    assert ends == ["complete"]
    session = str(store / f"{SESSION}.jsonl")
    code, out, _ = cli("inspect", session, "--json")
    # A Pydantic AI run that ends on an output tool ends on that call's
    # answer, not on a reply without calls: idle, not finished.
    assert json.loads(out)["status"] == ("idle" if framework == "pydantic-ai" else "finished")
    for provider in PROVIDERS:
        code, out, _ = cli("export", session, "--to", provider, "--validate")
        assert code == 0, (provider, out)


def test_pydantic_ai_an_answered_output_call_does_not_run_again_from_a_saved_history(
    tmp_path: Path,
) -> None:
    """Killed inside the output function, recovered from a shell, then run on
    the history the app saved before the call's answer: Pydantic AI processes
    that output call again, and the log has answered it. The output function
    does not run again under that id; the model is told the recorded answer
    and answers."""
    store, side = tmp_path / "store", tmp_path / "side"
    died = program("pydantic-ai", "output-run", store, side, KILL_AT="2")
    assert died.returncode == SIGKILLED, died.stderr[-3000:]
    before = ran(side)
    assert before == [1, 2]
    code, _, _ = cli("recover", str(store / f"{SESSION}.jsonl"))
    assert code == 0

    resumed = program("pydantic-ai", "output-resume-own-history", store, side)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert json.loads(resumed.stdout.strip().splitlines()[-1])["final"] == FINAL
    assert ran(side) == before


def test_openai_agents_only_the_handoff_the_sdk_runs_is_dispatched(tmp_path: Path) -> None:
    """The SDK runs the first handoff of a reply and answers the others
    "Multiple handoffs detected, ignoring this one." without running them:
    those never start, so they are not dispatched, and a crash would leave
    them "did not run", which for them is true."""
    from agents import Agent, Runner, handoff
    from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call

    from turnlog.integrations.openai_agents import TurnlogSession

    called: list[str] = []
    done = ModelStep.respond(lambda call: [assistant_message(FINAL)])
    shipper = Agent(name="shipper", model=ScriptedModel([done]))
    packer = Agent(name="packer", model=ScriptedModel([done]))
    both = ModelStep.respond(
        lambda call: [
            function_call("transfer_to_shipper", {}, call_id="h1"),
            function_call("transfer_to_packer", {}, call_id="h2"),
        ]
    )
    payer = Agent(
        name="payer",
        model=ScriptedModel([both]),
        handoffs=[
            handoff(shipper, on_handoff=lambda ctx: called.append("shipper")),
            handoff(packer, on_handoff=lambda ctx: called.append("packer")),
        ],
    )

    async def main() -> None:
        async with TurnlogSession(tmp_path, "s") as session:
            result = await Runner.run(payer, "go", session=session, hooks=session.hooks)
            assert result.final_output == FINAL

    asyncio.run(main())
    assert called == ["shipper"]
    events = turnlog.open_store(tmp_path)[0].read("s")
    dispatched = [e.data.call_id for e in events if isinstance(e.data, ev.ToolDispatch)]
    answered = {e.data.call_id: e.data for e in events if isinstance(e.data, ev.ToolResult)}
    assert dispatched == ["h1"]
    assert set(answered) == {"h1", "h2"} and answered["h2"].name == "transfer_to_packer"
    assert [e.data.reason for e in events if isinstance(e.data, ev.TurnEnd)] == ["complete"]
