"""Every Python example in docs/runtime.md runs as written and does what it says."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import turnlog
from paths import ROOT
from turnlog import events as ev

RUNTIME = ROOT / "docs" / "runtime.md"


def example(marker: str) -> str:
    blocks = re.findall(r"```python\n(.*?)```", RUNTIME.read_text(), re.S)
    return next(b for b in blocks if marker in b)


def run(block: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, object]:
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {}
    exec(block, namespace)
    return namespace


def test_every_example_is_tested() -> None:
    blocks = re.findall(r"```python\n(.*?)```", RUNTIME.read_text(), re.S)
    assert len(blocks) == 3


def test_the_deadline_example(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    namespace = run(example("timeout_s=0.2"), tmp_path, monkeypatch)
    text = ev.content_text(namespace["reply"].content)  # type: ignore[attr-defined]
    assert "did not finish within its deadline of 0.2 s" in text
    assert "exceeded its deadline, so this one was not dispatched" in text
    rules = [
        e.data.rule
        for e in turnlog.JSONLStore(tmp_path / "sessions").read("deadline")
        if isinstance(e.data, ev.ToolResult)
    ]
    assert rules == ["D1", "D2"]


def test_the_budget_example(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    namespace = run(example("max_tool_calls=2"), tmp_path, monkeypatch)
    assert "budget of 2 tool calls" in ev.content_text(namespace["results"][-1])  # type: ignore[index]
    events = turnlog.JSONLStore(tmp_path / "sessions").read("budget")
    assert events[-1].data.reason == "budget_exhausted"  # type: ignore[union-attr]


def test_the_background_example(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    namespace = run(example("background=True"), tmp_path, monkeypatch)
    assert namespace["reply"].content == "Summary: three sources agree"  # type: ignore[attr-defined]
    events = turnlog.JSONLStore(tmp_path / "sessions").read("lead")
    delivered = [e for e in events if isinstance(e.data, ev.UserMessage) and e.data.delivers]
    assert len(delivered) == 1


def test_the_documented_frame_is_the_one_written() -> None:
    from turnlog.core.fold import BackgroundChild
    from turnlog.core.notices import SYSTEM_PROMPT_SNIPPET, framed
    from turnlog.runtime.background import report_body

    child = BackgroundChild(
        spawned=ev.SubagentSpawned(agent_id="worker-r1", call_id="r1", background=True),
        settled=ev.SubagentSettled(
            agent_id="worker-r1", outcome="complete", result="three sources agree"
        ),
    )
    shown = framed("background", report_body(child))
    text = RUNTIME.read_text()
    assert "    " + "\n    ".join(shown.splitlines()) in text
    quoted = " ".join(
        line.removeprefix("> ") for line in text.splitlines() if line.startswith("> ")
    )
    assert quoted == SYSTEM_PROMPT_SNIPPET


def test_the_documented_notice_roles_are_the_exported_ones() -> None:
    from turnlog import providers
    from turnlog.core.fold import Fold
    from turnlog.core.notices import NoticeStyle

    text = " ".join(RUNTIME.read_text().split())
    assert "still render every notice as a user turn" not in text
    assert (
        "the notice is a `developer` message in the OpenAI Chat Completions and OpenAI "
        "Responses exports" in text
    )
    assert "Anthropic and Gemini" in text
    notice = ev.UserMessage(
        content="notice", injected="revival", render_as=NoticeStyle(role="system").render_as
    )
    events = [
        ev.Event(seq=0, data=ev.Session(session_id="s")),
        ev.Event(seq=1, data=ev.UserMessage(content="go")),
        ev.Event(seq=2, data=ev.AssistantMessage(content="on it")),
        ev.Event(seq=3, data=notice, origin="revival"),
    ]
    messages = Fold(events).state.messages
    last = {
        "openai-chat": providers.render("openai-chat", messages)["messages"][-1],
        "openai-responses": providers.render("openai-responses", messages)["input"][-1],
        "anthropic": providers.render("anthropic", messages)["messages"][-1],
        "gemini": providers.render("gemini", messages)["contents"][-1],
    }
    assert last["openai-chat"]["role"] == last["openai-responses"]["role"] == "developer"
    assert last["anthropic"]["role"] == last["gemini"]["role"] == "user"


def test_the_demo_shows_a_deadline_and_the_run_going_on(tmp_path: Path) -> None:
    import io

    from rich.console import Console

    from turnlog.cli.demo_agent import deadline_demo

    out = io.StringIO()
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    deadline_demo(Console(file=out, width=200), tmp_path / "d.jsonl", workspace)
    text = out.getvalue()
    assert "did not finish within its deadline of 0.5 s" in text
    assert "Not paying again" in text
    events = turnlog.JSONLStore(tmp_path).read("d")
    assert next(e.data.rule for e in events if isinstance(e.data, ev.ToolResult)) == "D1"
    assert events[-1].data.reason == "complete"  # type: ignore[union-attr]
    assert (workspace / "ledger.txt").read_text().count("invoice 10") == 1
