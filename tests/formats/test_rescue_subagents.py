"""A Claude Code subagent killed mid-call: its own file is repaired like any
other (named directly, or under `doctor --all`), with its parent in one run,
by the parent's rules: results appended, claims only what the file proves, and
a session still being written left alone, whichever of its files shows it."""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from entry_point import cli
from foreign_fixtures import SID, ClaudeCode, progress, text, tool_use, write
from paths import TESTS
from turnlog.core.fold import fold
from turnlog.formats.rescue import diagnose, read_transcript
from turnlog.providers import render, validate

REAL_20 = TESTS / "fixtures" / "foreign" / "claude-code-2.0.29-task-in-flight.jsonl"
# Words a repair must never use of a foreign call: no file proves a call did not run.
NEVER = ("did not run", "not started", "no side effects")


class Layout:
    """One crashed Claude Code session on disk: its own file, stopped in a
    `Task` call, and its subagents' files, where that version puts them."""

    def __init__(self, parent: Path, agents: dict[str, Path]) -> None:
        self.parent = parent
        self.agents = agents

    @property
    def files(self) -> list[Path]:
        return [self.parent, *self.agents.values()]


def killed_agent(version: str, session_id: str, agent_id: str, prompt: str) -> ClaudeCode:
    """An agent's lines, cut while two parallel calls ran: a hook progress line
    shows the first started; nothing shows anything of the second."""
    agent = ClaudeCode(version, session_id=session_id)
    agent.count = 500
    agent.user(prompt)
    agent.assistant("msg_a1", tool_use("toolu_read", "Read", file_path="tests/test_api.py"))
    agent.result("toolu_read", "def test_api(): ...")
    _, first, _ = agent.assistant(
        "msg_a2",
        text("Running them."),
        tool_use("toolu_pytest", command="pytest -x"),
        tool_use("toolu_migrate", command="make migrate"),
    )
    progress(agent, "toolu_pytest", "PreToolUse", first["uuid"])
    return side_chain(agent, agent_id)


def side_chain(agent: ClaudeCode, agent_id: str) -> ClaudeCode:
    for line in agent.lines:
        line["isSidechain"] = True
        line["agentId"] = agent_id
    return agent


def finished_agent(version: str, session_id: str, agent_id: str) -> ClaudeCode:
    agent = ClaudeCode(version, session_id=session_id)
    agent.count = 800
    agent.user("read the changelog")
    agent.assistant("msg_f1", text("The changelog is up to date."))
    return side_chain(agent, agent_id)


def warm_up(version: str, session_id: str, agent_id: str) -> ClaudeCode:
    """An agent file that stops after its first user line (a warm-up never answered)."""
    agent = ClaudeCode(version, session_id=session_id)
    agent.count = 900
    agent.user("Warmup")
    return side_chain(agent, agent_id)


def session_21(folder: Path) -> Layout:
    """2.1: agents in `<session>/subagents/`, `progress` lines in the main file."""
    cc = ClaudeCode("2.1.39")
    cc.user("audit the repo")
    cc.assistant("msg_01", tool_use("toolu_task", "Task", prompt="check the tests"))
    progress_line = cc.envelope(
        "progress",
        cc.last,
        data={"type": "agent_progress", "agentId": "a1b2c3d4"},
        parentToolUseID="toolu_task",
        toolUseID="toolu_task",
    )
    cc.add(progress_line, chain=False)
    parent = write(folder, f"{SID}.jsonl", cc.data())
    agents = folder / SID / "subagents"
    return Layout(
        parent,
        {
            "killed": write(
                agents,
                "agent-a1b2c3d4.jsonl",
                killed_agent("2.1.39", SID, "a1b2c3d4", "check the tests").data(),
            ),
            "finished": write(
                agents, "agent-b0b0b0b0.jsonl", finished_agent("2.1.39", SID, "b0b0b0b0").data()
            ),
            "warm-up": write(
                agents, "agent-c0c0c0c0.jsonl", warm_up("2.1.39", SID, "c0c0c0c0").data()
            ),
        },
    )


def session_20(folder: Path) -> Layout:
    """2.0: a real session file stopped in a `Task` call, its agents'
    `agent-<id>.jsonl` files beside it, naming the session in every line."""
    records = [json.loads(line) for line in REAL_20.read_bytes().splitlines()]
    session_id = next(r["sessionId"] for r in records if "sessionId" in r)
    task = next(
        block
        for r in records
        if r.get("type") == "assistant"
        for block in r["message"]["content"]
        if block.get("type") == "tool_use"
    )
    parent = folder / f"{session_id}.jsonl"
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(REAL_20, parent)
    return Layout(
        parent,
        {
            "killed": write(
                folder,
                "agent-5e1f0c2a.jsonl",
                killed_agent("2.0.29", session_id, "5e1f0c2a", task["input"]["prompt"]).data(),
            ),
            "finished": write(
                folder,
                "agent-6d2a1b3c.jsonl",
                finished_agent("2.0.29", session_id, "6d2a1b3c").data(),
            ),
            "warm-up": write(
                folder, "agent-7c3b2a4d.jsonl", warm_up("2.0.29", session_id, "7c3b2a4d").data()
            ),
        },
    )


LAYOUTS: dict[str, Callable[[Path], Layout]] = {
    "2.1 subagents folder": session_21,
    "2.0 agent file beside, real parent": session_20,
}


def age(*paths: Path, seconds: float = 3600) -> None:
    """Make the files look as a crash left them: untouched for an hour."""
    past = time.time() - seconds
    for path in paths:
        os.utime(path, (past, past))


def snapshot(paths: list[Path]) -> dict[Path, bytes]:
    return {path: path.read_bytes() for path in paths}


def records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_bytes().splitlines() if line.strip()]


def doctor_json(*args: str) -> tuple[int, dict[str, Any]]:
    code, out, err = cli("doctor", "claude-code", *args, "--yes", "--json")
    return code, json.loads(out) if out.strip() else {"stderr": err}


def repaired_paths(report: dict[str, Any]) -> set[Path]:
    return {
        Path(r["diagnosis"]["path"]).resolve()
        for r in report["repairs"]
        if r["action"] == "repaired"
    }


def assert_child_repaired_honestly(layout: Layout, before: bytes) -> None:
    child = layout.agents["killed"]
    after = child.read_bytes()
    assert after.startswith(before)  # appended, never truncated
    asked = {
        block["id"]: line
        for line in records_of(before)
        if line["type"] == "assistant"
        for block in line["message"]["content"]
        if block["type"] == "tool_use"
    }
    appended = records_of(after[len(before) :])
    # One line per tool_use line, hung off it, as the tool writes parallel results.
    assert [
        (line["parentUuid"], [b["tool_use_id"] for b in line["message"]["content"]])
        for line in appended
    ] == [
        (asked["toolu_pytest"]["uuid"], ["toolu_pytest"]),
        (asked["toolu_migrate"]["uuid"], ["toolu_migrate"]),
    ]
    texts = {}
    for line in appended:
        (block,) = line["message"]["content"]
        source = asked[block["tool_use_id"]]
        # Shaped like the agent's own lines: on its side chain, its agent id,
        # its parent's session id (as the tool writes), its version.
        assert line["type"] == "user" and line["isSidechain"] is True
        assert line["sourceToolAssistantUUID"] == source["uuid"]
        for key in ("agentId", "sessionId", "version", "cwd", "gitBranch"):
            assert line[key] == source[key], key
        assert block["is_error"] is True
        texts[block["tool_use_id"]] = block["content"]
    # The hook line proves pytest started; nothing proves anything of migrate.
    assert "recorded that it started" in texts["toolu_pytest"]
    assert "whether it ran is unknown" in texts["toolu_migrate"]
    for words in texts.values():
        assert not any(phrase in words for phrase in NEVER), words
        assert "do not retry it blindly" in words
    found = diagnose(str(child), "claude-code")
    assert not found.needs_repair and found.subagent_of is not None
    transcript = read_transcript(str(child), "claude-code")
    messages = fold(transcript.events).messages
    assert validate("anthropic", render("anthropic", messages)) == []


def records_of(data: bytes) -> list[dict[str, Any]]:
    return [json.loads(line) for line in data.splitlines() if line.strip()]


@pytest.mark.parametrize("mode", ["FILE", "--all"])
@pytest.mark.parametrize("layout_name", list(LAYOUTS))
def test_a_parent_and_its_killed_subagent_are_repaired_in_one_run(
    tmp_path: Path, layout_name: str, mode: str
) -> None:
    layout = LAYOUTS[layout_name](tmp_path / "projects" / "-home-dev-shop")
    age(*layout.files)
    before = snapshot(layout.files)
    target = [str(layout.parent)] if mode == "FILE" else ["--all", str(tmp_path / "projects")]
    code, report = doctor_json(*target)
    assert code == 0, report
    # Both reported, each once, the child as a subagent of its parent's session.
    assert repaired_paths(report) == {layout.parent.resolve(), layout.agents["killed"].resolve()}
    (child_report,) = [
        r for r in report["repairs"] if Path(r["diagnosis"]["path"]).name.startswith("agent-")
    ]
    parent_id = next(
        r["diagnosis"]["session_id"] for r in report["repairs"] if r is not child_report
    )
    assert child_report["diagnosis"]["subagent_of"] == parent_id
    assert [o["rule"] for o in child_report["diagnosis"]["owed"]] == ["R1", "R4"]
    assert layout.parent.read_bytes().startswith(before[layout.parent])
    assert_child_repaired_honestly(layout, before[layout.agents["killed"]])
    # A finished agent and a warm-up owe nothing: not a byte changes.
    for name in ("finished", "warm-up"):
        assert layout.agents[name].read_bytes() == before[layout.agents[name]], name
    # A second run appends nothing anywhere.
    repaired = snapshot(layout.files)
    code, report = doctor_json(*target)
    assert code == 0 and not repaired_paths(report)
    assert snapshot(layout.files) == repaired


def test_doctor_file_leaves_another_sessions_agent_file_alone(tmp_path: Path) -> None:
    layout = session_20(tmp_path)
    # A killed agent of another session, in the same folder.
    other = write(
        tmp_path,
        "agent-0dd0dd0d.jsonl",
        killed_agent("2.0.29", SID, "0dd0dd0d", "check the tests").data(),
    )
    age(*layout.files, other)
    before = other.read_bytes()
    code, report = doctor_json(str(layout.parent))
    assert code == 0, report
    assert repaired_paths(report) == {layout.parent.resolve(), layout.agents["killed"].resolve()}
    assert other.read_bytes() == before
    # Named, it is repaired on its own, like any file.
    code, report = doctor_json(str(other))
    assert code == 0 and repaired_paths(report) == {other.resolve()}


def test_a_torn_subagent_file_loses_only_its_fragment(tmp_path: Path) -> None:
    layout = session_21(tmp_path / "projects")
    child = layout.agents["killed"]
    whole = child.read_bytes()
    fragment = b'{"parentUuid":"e0000510","isSidechain":true,"type":"user","mess'
    child.write_bytes(whole + fragment)
    age(*layout.files)
    code, report = doctor_json("--all", str(tmp_path / "projects"))
    assert code == 0, report
    assert child.resolve() in repaired_paths(report)
    assert Path(f"{child}.torn-{len(whole)}").read_bytes() == fragment
    assert_child_repaired_honestly(layout, whole)


def test_a_subagent_at_work_leaves_its_parent_alone(tmp_path: Path) -> None:
    """A 2.0 parent writes nothing while its `Task` runs: the agent's file,
    written just now, is what shows the session is alive."""
    layout = session_20(tmp_path / "projects")
    age(layout.parent, layout.agents["finished"], layout.agents["warm-up"])
    before = snapshot(layout.files)
    code, out, err = cli("doctor", "claude-code", str(layout.parent), "--yes")
    assert code == 4, (out, err)
    assert layout.agents["killed"].name in err and "--force" in err
    code, report = doctor_json("--all", str(tmp_path / "projects"))
    assert code == 4
    assert {r["action"] for r in report["repairs"]} == {"failed"}
    assert {r["kind"] for r in report["repairs"]} == {"SessionLockedError"}
    assert snapshot(layout.files) == before
    # Told the tool has exited, the run repairs both.
    code, report = doctor_json(str(layout.parent), "--force")
    assert code == 0, report
    assert repaired_paths(report) == {layout.parent.resolve(), layout.agents["killed"].resolve()}


def test_a_subagent_of_a_session_being_written_is_left_alone(tmp_path: Path) -> None:
    """The parent written just now: its process may carry the agent on at any
    moment, and a repair appended then would race it."""
    layout = session_21(tmp_path / "projects")
    child = layout.agents["killed"]
    age(*layout.agents.values())
    before = snapshot(layout.files)
    code, out, err = cli("doctor", "claude-code", str(child), "--yes")
    assert code == 4, (out, err)
    assert layout.parent.name in err
    assert snapshot(layout.files) == before
    code, report = doctor_json(str(child), "--live-window", "0")
    assert code == 0 and repaired_paths(report) == {child.resolve()}
    assert layout.parent.read_bytes() == before[layout.parent]
