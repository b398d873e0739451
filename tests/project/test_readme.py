"""The README's Python example runs as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import turnlog
from paths import ROOT

README = ROOT / "README.md"


def test_readme_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    block = next(b for b in blocks if "log.dispatch" in b)
    monkeypatch.chdir(tmp_path)
    exec(block, {})  # alone, as a reader runs it: the block defines its tool
    events = turnlog.JSONLStore(tmp_path / "sessions").read("run-1")
    assert [e.type for e in events][-3:] == ["assistant_message", "step_end", "turn_end"]
    assert not turnlog.recovery.interrupted(events)
    # The model read the tool's result and answered: nothing waits on it.
    assert turnlog.inspect(tmp_path / "sessions", "run-1").status == "finished"


REVIVAL = ROOT / "docs" / "revival.md"


def test_revival_supervisor_example_revives_a_crashed_tree(tmp_path: Path) -> None:
    """The supervisor in docs/revival.md, run on a store with a crashed run."""
    from turnlog.runtime.loop import AgentSpec, Reply

    blocks = re.findall(r"```python\n(.*?)```", REVIVAL.read_text(), re.S)
    supervisor = next(b for b in blocks if "def revive_crashed" in b)
    namespace: dict[str, object] = {}
    exec(supervisor, namespace)
    with turnlog.open(tmp_path, "crashed", agent=turnlog.events.Agent(type="helper")) as log:
        log.user("help")
        log.append(turnlog.events.TurnStart(turn=1))
    with turnlog.open(tmp_path, "done") as log:
        log.user("hi")
        with log.turn(), log.step():
            log.assistant("hello")
    agents = {"helper": AgentSpec(model=lambda messages: Reply(content="carried on"), tools={})}
    done = namespace["revive_crashed"](str(tmp_path), agents)  # type: ignore[operator]
    assert list(done) == ["crashed"]
    assert turnlog.inspect(tmp_path, "crashed").status == "finished"
    assert turnlog.inspect(tmp_path, "crashed").revivals == 1


def test_readme_framework_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The OpenAI Agents SDK wiring in the README, with the SDK's scripted model."""
    import asyncio

    from agents import Agent, Runner, set_tracing_disabled
    from agents.testing import ScriptedModel, assistant_message

    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    block = next(b for b in blocks if "TurnlogSession" in b)
    set_tracing_disabled(True)
    agent = Agent(name="payer", model=ScriptedModel([[assistant_message("Paid.")]]))
    monkeypatch.chdir(tmp_path)

    async def main() -> None:
        namespace = {"agent": agent, "Runner": Runner}
        body = "async def example():\n" + "".join(f"    {line}\n" for line in block.splitlines())
        body += "    await session.close()\n    return result\n"
        exec(body, namespace)
        result = await namespace["example"]()  # type: ignore[operator]
        assert result.final_output == "Paid."

    asyncio.run(main())
    assert turnlog.inspect(tmp_path / "sessions", "run-1").status == "finished"


def test_readme_asyncio_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`async with turnlog.aopen(...)` as the README writes it."""

    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    block = next(b for b in blocks if "turnlog.aopen" in b)
    monkeypatch.chdir(tmp_path)
    exec(block, {"__name__": "__main__"})  # alone, as a reader runs it
    events = turnlog.JSONLStore(tmp_path / "sessions").read("run-2")
    assert [e.type for e in events][-3:] == ["assistant_message", "step_end", "turn_end"]
    paid = [e.data.content for e in events if isinstance(e.data, turnlog.events.ToolResult)]
    assert paid == ["paid invoice 7"]
    assert turnlog.inspect(tmp_path / "sessions", "run-2").status == "finished"
    # Closed at the end of the block: the next writer gets the session.
    with turnlog.open(tmp_path / "sessions" / "run-2.jsonl") as log:
        assert log.verdict().open_turn is None


API = ROOT / "docs" / "api.md"


def test_reading_a_stored_session_runs_alone_as_written(tmp_path: Path) -> None:
    """docs/api.md's block on reading a session's events, in a fresh folder
    and a fresh interpreter, as a reader copies it."""
    import subprocess
    import sys

    text = API.read_text()
    block = re.search(r"<!-- reads: a stored session -->\n```python\n(.*?)```", text, re.S)
    assert block is not None
    (tmp_path / "read.py").write_text(block.group(1))
    done = subprocess.run(
        [sys.executable, "read.py"], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[1:] == ["()", "[]"]
