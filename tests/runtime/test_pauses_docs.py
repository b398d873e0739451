"""docs/pauses.md is a program: its run pauses in one process, a person approves
with the command line in a second, and a third resumes; the tool ran once."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import forkserver
import turnlog
from paths import ROOT
from turnlog import events as ev
from turnlog.providers import PROVIDERS, render, validate

PAUSES = ROOT / "docs" / "pauses.md"


def blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", PAUSES.read_text(), re.S)


def python(code: str, workdir: Path) -> str:
    done = forkserver.run(
        [sys.executable, "-c", code], cwd=workdir, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    done = forkserver.run(
        [sys.executable, "-m", "turnlog", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert "Traceback" not in done.stderr, done.stderr
    return done


def test_every_block_is_run() -> None:
    assert len(blocks("python")) == 2
    assert len(blocks("bash")) == 1


def test_pause_approve_elsewhere_resume_elsewhere(tmp_path: Path) -> None:
    first, resume = blocks("python")
    out = python(first, tmp_path)
    assert out.splitlines() == ["True [('c1', 'pay', 'approval')]", "paused"]
    paused_bytes = (tmp_path / "sessions" / "pay.jsonl").read_bytes()
    # Nothing that repairs crashes touches it.
    for command in (["recover"], ["revive"], ["sweep", "--store", "sessions", "--revive"]):
        target = [] if command[0] == "sweep" else ["sessions/pay.jsonl"]
        done = cli(*command, *target, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        assert "paused: waiting for approval of pay (c1)" in done.stdout + done.stderr
    assert (tmp_path / "sessions" / "pay.jsonl").read_bytes() == paused_bytes
    (line,) = [line for line in blocks("bash")[0].splitlines() if line.strip()]
    argv = shlex.split(line)
    assert argv[0] == "turnlog"
    approved = cli(*argv[1:], cwd=tmp_path)
    assert approved.returncode == 0, approved.stderr
    # The third block runs with the first's model and tools, as it says.
    definitions = first.split("with turnlog.open(")[0]
    out = python(definitions + resume, tmp_path)
    assert out.splitlines() == ["done: paid bob 5", "['paid bob 5\\n']"]
    assert (tmp_path / "ledger.txt").read_text() == "paid bob 5\n"
    events = turnlog.JSONLStore(tmp_path / "sessions").read("pay")
    decisions = [e.data for e in events if isinstance(e.data, ev.ToolDecision)]
    assert [(d.call_id, d.decision, d.by) for d in decisions] == [("c1", "approved", "alice")]
    assert turnlog.inspect(tmp_path / "sessions" / "pay.jsonl").status == "finished"
    with turnlog.open(tmp_path / "sessions" / "pay.jsonl") as log:
        for provider in PROVIDERS:
            assert validate(provider, render(provider, log.messages)) == []
