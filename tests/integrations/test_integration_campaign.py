"""A kill campaign under the four frameworks (slow; `pytest -m slow`): many rounds,
each a real process killed with SIGKILL at a chosen point (inside the first or
the second charge, one call or parallel calls, and for LangGraph right after the
checkpoint that holds the model's calls), then revived through the doc's own
block, or repaired from a shell (`turnlog recover` or `turnlog sweep`) and
resumed by the program's documented resume or by the framework's own (LangGraph's
`invoke(None)`, Pydantic AI on the history the app saved), on JSONL or SQLite.
No charge ever runs twice, and every session ends finished with exports valid
for all four providers. CAMPAIGN_ROUNDS sets the rounds per framework (default 8)."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

import forkserver
import turnlog
from entry_point import cli
from paths import SUPPORT
from turnlog.providers import PROVIDERS

PROGRAM = str(SUPPORT / "framework_program.py")
DOC_SESSIONS = {
    "openai-agents": "support-42",
    "pydantic-ai": "support-42",
    "langgraph": "thread-7",
    "adk": "support-42",
}
# Each framework's own way to carry on, without turnlog's repair in the program.
OWN_RESUME = {
    "openai-agents": "resume",
    "pydantic-ai": "resume-own-history",
    "langgraph": "resume-unrecovered",
    "adk": "resume",
}


def run(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return forkserver.run(
        [sys.executable, PROGRAM, *args],
        capture_output=True,
        text=True,
        timeout=180,
        env={**os.environ, **env, "OPENAI_AGENTS_DISABLE_TRACING": "1"},
    )


@pytest.mark.slow
@pytest.mark.parametrize("framework", list(DOC_SESSIONS))
def test_kill_campaign_never_runs_a_tool_twice(tmp_path: Path, framework: str) -> None:
    rounds = int(os.environ.get("CAMPAIGN_ROUNDS", "8"))
    chance = random.Random(f"campaign-{framework}")
    kills, twice = 0, 0
    for round_ in range(rounds):
        here = tmp_path / str(round_)
        parallel = chance.random() < 0.5
        kill_at = chance.choice([1, 2]) if parallel else 1
        flags = ["--parallel"] if parallel else []
        side = here / "side"
        window = framework == "langgraph" and chance.random() < 0.25
        if chance.random() < 0.5 and not window:
            # The doc's section, revived by its own block, on either store.
            url = f"sqlite:///{here / 's.db'}" if chance.random() < 0.5 else ""
            target, session = url or str(here / "app" / "sessions"), DOC_SESSIONS[framework]
            store_env = {"DOC_STORE": url} if url else {}
            died = run(framework, "doc-run", str(here / "app"), str(side), *flags,
                       KILL_AT=str(kill_at), **store_env)  # fmt: skip
            assert died.returncode == -9, died.stderr
            resumed = run(
                framework, "doc-revive", str(here / "app"), str(side), *flags, **store_env
            )
        else:
            # The test program, repaired from a shell, then resumed.
            target, session = str(here / "store"), "run-1"
            kill = {"KILL_AFTER_CHECKPOINT": "1"} if window else {"KILL_AT": str(kill_at)}
            died = run(framework, "run", target, str(side), *flags, **kill)
            assert died.returncode == -9, died.stderr
            if chance.random() < 0.5:
                code, _, err = cli("recover", str(Path(target) / "run-1.jsonl"))
            else:
                code, _, err = cli("sweep", "--store", target)
            assert code == 0, err
            mode = OWN_RESUME[framework] if chance.random() < 0.5 else "resume"
            resumed = run(framework, mode, target, str(side), *flags)
        kills += 1
        assert resumed.returncode == 0, resumed.stderr
        assert json.loads(resumed.stdout.strip().splitlines()[-1])["final"]
        counts = Counter(int(line) for line in side.read_text().split()) if side.exists() else {}
        twice += sum(1 for n in counts.values() if n > 1)
        assert turnlog.inspect(target, session).status == "finished"
        for provider in PROVIDERS:
            code, out, _ = cli("export", session, "--store", target, "--to", provider, "--validate")
            assert code == 0, (provider, out)
    print(f"{framework}: {kills} kills, {twice} tools run twice")
    assert twice == 0
