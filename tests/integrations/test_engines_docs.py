"""docs/engines.md's DBOS recipe, run as written: killed inside the charge, recovered by DBOS, charged once."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("dbos")

from paths import ROOT
from turnlog import events as ev
from turnlog.stores import JSONLStore

# What the page leaves to the reader: a model, the tools, the store.
BEFORE = """
import os, signal, sys
from pathlib import Path
WORK = Path(sys.argv[2])
STORE = str(WORK / "sessions")

def ask_the_model(messages):
    if not any(m["role"] == "tool" for m in messages):
        return {"text": "", "calls": [{"id": "c1", "name": "charge", "arguments": {"amount": 5}}]}
    return {"text": "done: " + messages[-1]["content"][:30], "calls": []}

def charge(amount):
    with (WORK / "ledger").open("a") as ledger:
        ledger.write("charged\\n"); ledger.flush(); os.fsync(ledger.fileno())
    if not (WORK / "killed").exists():
        (WORK / "killed").touch(); os.kill(os.getpid(), signal.SIGKILL)
    return "charged"

TOOLS = {"charge": charge}
"""
AFTER = """
from dbos import SetWorkflowID
DBOS(config={"name": "docs", "system_database_url": f"sqlite:///{WORK / 'dbos.db'}",
             "application_version": "1", "log_level": "ERROR"})
DBOS.launch()
if sys.argv[1] == "start":
    with SetWorkflowID("wf-1"):
        print(agent("s1", "charge 5"))
else:
    print(DBOS.retrieve_workflow("wf-1").get_result(polling_interval_sec=0.05))
DBOS.destroy()
"""


def test_the_dbos_recipe_charges_once(tmp_path: Path) -> None:
    page = (ROOT / "docs" / "engines.md").read_text()
    (recipe,) = [b for b in re.findall(r"```python\n(.*?)```", page, re.S) if "def agent(" in b]
    program = tmp_path / "recipe.py"
    program.write_text(BEFORE + recipe + AFTER)
    first = subprocess.run(
        [sys.executable, str(program), "start", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert first.returncode == -signal.SIGKILL, first.stderr
    second = subprocess.run(
        [sys.executable, str(program), "recover", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert second.returncode == 0, second.stderr
    assert second.stdout.startswith("done: [turnlog] The agent process"), second.stdout
    assert (tmp_path / "ledger").read_text() == "charged\n"
    results = [
        e
        for e in JSONLStore(tmp_path / "sessions").iter_events("s1")
        if isinstance(e.data, ev.ToolResult)
    ]
    assert [r.data.rule for r in results] == ["R1"]
