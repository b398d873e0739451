"""docs/integrations.md's human approval with the Agents SDK, run as written.

Its three blocks run in three processes (the run pauses, a person decides on
the saved `RunState`, the run resumes), with `turnlog sweep --revive` over
the store between them. `agent` is the reader's own; the harness supplies
one whose `charge` needs approval and writes a ledger.
"""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import turnlog
from paths import ROOT
from turnlog.core.fold import Fold
from turnlog.providers import PROVIDERS, render, validate
from turnlog.stores import JSONLStore

pytest.importorskip("agents")

DOC = ROOT / "docs" / "integrations.md"

HARNESS = '''
import asyncio
import os

from agents import Agent, function_tool, set_tracing_disabled
from agents.testing import ScriptedModel, assistant_message, function_call

set_tracing_disabled(True)


def charge(order: int) -> str:
    """Charge the refund of an order."""
    with open("ledger.txt", "a") as ledger:
        ledger.write(f"{{order}}\\n")
        ledger.flush()
        os.fsync(ledger.fileno())
    return f"refunded order {{order}}"


script = {script}
agent = Agent(
    name="support",
    model=ScriptedModel(script),
    tools=[function_tool(charge, needs_approval=True)],
)


async def main() -> None:
{body}


asyncio.run(main())
'''
SCRIPTS = {
    "pause": '[[function_call("charge", {"order": 7}, call_id="call_1")]]',
    "decide": "[]",
    "resume": '[[assistant_message("order 7 refunded")]]',
}


def blocks() -> dict[str, str]:
    found = re.findall(
        r"<!-- approval: openai-agents (\S+) -->\n```python\n(.*?)```", DOC.read_text(), re.S
    )
    return dict(found)


def run(step: str, code: str, workdir: Path) -> str:
    program = HARNESS.format(script=SCRIPTS[step], body=textwrap.indent(code, "    "))
    done = subprocess.run(
        [sys.executable, "-c", program], cwd=workdir, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def sweep(workdir: Path) -> None:
    """A sweep over the store leaves the paused session byte for byte."""
    path = workdir / "sessions" / "support-42.jsonl"
    before = path.read_bytes()
    done = subprocess.run(
        [sys.executable, "-m", "turnlog", "sweep", "--store", "sessions", "--revive"],
        cwd=workdir,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "paused: waiting for approval of charge (call_1)" in done.stdout + done.stderr
    assert path.read_bytes() == before


def test_the_three_blocks_are_the_section() -> None:
    assert list(blocks()) == ["pause", "decide", "resume"]


@pytest.mark.parametrize("decision", ["approve", "reject"])
def test_pause_decide_elsewhere_resume_elsewhere(decision: str, tmp_path: Path) -> None:
    code = blocks()
    run("pause", code["pause"], tmp_path)
    assert turnlog.inspect(tmp_path / "sessions" / "support-42.jsonl").status == "paused"
    sweep(tmp_path)
    decide = code["decide"]
    if decision == "reject":
        decide = decide.replace("state.approve(interruption)", "state.reject(interruption)")
    run("decide", decide, tmp_path)
    sweep(tmp_path)
    assert run("resume", code["resume"], tmp_path) == "order 7 refunded\n"
    ledger = tmp_path / "ledger.txt"
    charged = ledger.read_text().split() if ledger.exists() else []
    assert charged == (["7"] if decision == "approve" else [])
    state = Fold(JSONLStore(tmp_path / "sessions").iter_events("support-42")).state
    assert state.open_turn is None
    for provider in PROVIDERS:
        assert validate(provider, render(provider, state.messages)) == [], provider
