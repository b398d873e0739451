"""docs/integrations.md is a program: each framework's section, run as written in a
real process, killed with SIGKILL inside the tool, revived by the section's own
"after a crash" block and resumed. The tool ran once, the model saw the call
answered under its id with the resume notice, and the session exports valid for
all four providers; on JSONL and SQLite stores."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import forkserver
import turnlog
from entry_point import cli
from paths import SUPPORT
from turnlog.events import content_text
from turnlog.providers import PROVIDERS

PROGRAM = str(SUPPORT / "framework_program.py")
SESSIONS = {
    "openai-agents": "support-42",
    "pydantic-ai": "support-42",
    "langgraph": "thread-7",
    "adk": "support-42",
}
FINAL = "all charges settled"


def doc(
    framework: str,
    step: str,
    workdir: Path,
    side: Path,
    store: str | None,
    parallel: bool,
    **env: str,
) -> subprocess.CompletedProcess[str]:
    extra = {"DOC_STORE": store} if store else {}
    return forkserver.run(
        [
            sys.executable,
            PROGRAM,
            framework,
            f"doc-{step}",
            str(workdir),
            str(side),
            *(["--parallel"] if parallel else []),
        ],
        capture_output=True,
        text=True,
        timeout=180,
        env={**os.environ, **extra, **env, "OPENAI_AGENTS_DISABLE_TRACING": "1"},
    )


@pytest.mark.parametrize("store", ["jsonl", "sqlite"])
@pytest.mark.parametrize("parallel", [False, True], ids=["one call", "parallel calls"])
@pytest.mark.parametrize("framework", list(SESSIONS))
def test_the_docs_section_survives_a_kill_and_revives(
    tmp_path: Path, framework: str, parallel: bool, store: str
) -> None:
    workdir, side = tmp_path / "app", tmp_path / "side"
    url = f"sqlite:///{tmp_path / 'sessions.db'}" if store == "sqlite" else None
    target = url or str(workdir / "sessions")
    session = SESSIONS[framework]
    killed_in = 2 if parallel else 1

    died = doc(framework, "run", workdir, side, url, parallel, KILL_AT=str(killed_in))
    assert died.returncode == -9, died.stderr
    # Killed inside its charge. With parallel calls the other charge may or
    # may not have run by then: the calls race, and either is honest.
    before = [int(line) for line in side.read_text().split()]
    assert killed_in in before and len(set(before)) == len(before)
    found = turnlog.inspect(target, session)
    assert found.status == "interrupted"
    owed = {call.call_id: call for call in found.owed_calls}
    assert owed[f"call_1_{killed_in}"].risk == "tool_outcome_unknown"
    # The doc declares `charge` destructive: the dispatch says so.
    dispatches = [
        e.data
        for e in turnlog.open_store(target)[0].read(session)
        if isinstance(e.data, turnlog.events.ToolDispatch)
    ]
    assert dispatches and {d.idempotency for d in dispatches} == {"destructive"}

    revived = doc(framework, "revive", workdir, side, url, parallel)
    assert revived.returncode == 0, revived.stderr
    seen = json.loads(revived.stdout.strip().splitlines()[-1])
    assert seen["final"] == FINAL
    expected = [f"call_1_{a}" for a in ([1, 2] if parallel else [1])]
    assert seen["calls"] == expected and sorted(seen["outputs"]) == expected
    assert seen["notice"] is True  # revived, not only recovered: the model was told
    # Reviving runs no charge again: each call the kill left owed was answered.
    assert [int(line) for line in side.read_text().split()] == before

    events = turnlog.open_store(target)[0].read(session)
    repair = next(
        e.data
        for e in events
        if isinstance(e.data, turnlog.ToolResult) and e.data.call_id == f"call_1_{killed_in}"
    )
    assert repair.risk == "tool_outcome_unknown"
    # One honest text for every in-flight call; the declared idempotency is
    # kept on the dispatch, for audits and for tools that want it.
    assert "NOT been retried" in content_text(repair.content)
    dispatch = next(
        e.data
        for e in events
        if isinstance(e.data, turnlog.events.ToolDispatch)
        and e.data.call_id == f"call_1_{killed_in}"
    )
    assert dispatch.idempotency == "destructive"
    after = turnlog.inspect(target, session)
    assert after.status == "finished" and after.revivals == 1
    for provider in PROVIDERS:
        code, out, _ = cli("export", session, "--store", target, "--to", provider, "--validate")
        assert code == 0, (provider, out)
