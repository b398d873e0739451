"""The scripted agent the durable-engine test programs run: its model, its tools, its ledgers and its kill points.

An engine program (tests/support/dbos_program.py, tests/support/prefect_program.py) wraps
`model_reply` and `tool_body` in the engine's steps and runs `converse`
in the engine's workflow. The tools and the model append what they did to
ledgers in the work folder: the ground truth a test holds the log to.

Kill points: `none`, `event:K` (right after this process's K-th write to
the log), `tool:NAME` (inside the tool, after its side effect) or `model:N`
(inside the N-th model request).
"""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import turnlog
from turnlog import ToolCall

IDEMPOTENCY = {"lookup": "read_only", "charge": "destructive", "email": "destructive"}
PROMPT = "pay bob 5 and tell him"


class Agent:
    """One process's agent: where it keeps its ledgers and where it dies."""

    def __init__(self, work: str, kill_at: str) -> None:
        self.work = Path(work)
        self.kill_at = kill_at
        self.writes = 0
        self.model_calls = 0

    def die(self) -> None:
        os.kill(os.getpid(), signal.SIGKILL)

    def count_writes(self, events: Any, synced: bool) -> None:
        """A log subscriber: dies right after the chosen write."""
        for _ in events:
            self.writes += 1
            if f"event:{self.writes}" == self.kill_at:
                self.die()

    def tool_body(self, name: str, call_id: str) -> str:
        synced_append(self.work / "tools.log", f"{name} {call_id}")
        if f"tool:{name}" == self.kill_at:
            self.die()
        return f"{name} done"

    def model_reply(self, messages: list[dict[str, Any]]) -> dict[str, Any]:
        """A scripted model: look up, then charge and email side by side, then answer."""
        self.model_calls += 1
        synced_append(self.work / "model.jsonl", json.dumps(messages))
        if f"model:{self.model_calls}" == self.kill_at:
            self.die()
        answered = {m["call_id"] for m in messages if m["role"] == "tool"}
        if "c1" not in answered:
            return {"text": "", "calls": [{"id": "c1", "name": "lookup", "arguments": {}}]}
        if "c2" not in answered:
            return {
                "text": "",
                "calls": [
                    {"id": "c2", "name": "charge", "arguments": {"amount": 5}},
                    {"id": "c3", "name": "email", "arguments": {"to": "bob"}},
                ],
            }
        return {"text": "all done", "calls": []}


def synced_append(path: Path, line: str) -> None:
    with path.open("a") as out:
        out.write(line + "\n")
        out.flush()
        os.fsync(out.fileno())


def as_request(log: turnlog.Log) -> list[dict[str, Any]]:
    return [{"role": m.role, "content": str(m.content), "call_id": m.call_id} for m in log.messages]


def converse(
    log: turnlog.Log,
    call_model: Callable[[list[dict[str, Any]]], dict[str, Any]],
    run_tool: Callable[[dict[str, Any]], Any],
) -> str:
    """The agent's turn: ask the model, run the tools it asks for, repeat.
    `call_model` and `run_tool` are the engine's steps."""
    with log.turn():
        log.user(PROMPT)
        while True:
            with log.step():
                reply = call_model(as_request(log))
                calls = [ToolCall(**c) for c in reply["calls"]]
                log.assistant(reply["text"], tool_calls=calls)
                for call in reply["calls"]:
                    run_tool(call)
            if not calls:
                return str(reply["text"])


def run_for(
    run: turnlog.EngineRun,
    target: str,
    session_id: str,
    agent: Agent,
    handles: dict[str, turnlog.Log],
    call_model: Callable[[list[dict[str, Any]]], dict[str, Any]],
    run_tool: Callable[[dict[str, Any]], Any],
) -> str:
    """The workflow's body: the session opened for the engine's run, its
    handle left in `handles` for the steps (run in this process), the turn."""
    with turnlog.open(target, session_id, engine_run=run) as log:
        log.subscribe(agent.count_writes)
        handles[run.run_id] = log
        try:
            return converse(log, call_model, run_tool)
        finally:
            del handles[run.run_id]


def guarded_tool(agent: Agent, log: turnlog.Log, call: dict[str, Any]) -> dict[str, Any]:
    """The tool's body under the guard: at most once, its answer as a plain dict."""
    import dataclasses

    answer = turnlog.at_most_once(
        log,
        ToolCall(**call),
        lambda: agent.tool_body(call["name"], call["id"]),
        idempotency=IDEMPOTENCY[call["name"]],  # type: ignore[arg-type]
    )
    return dataclasses.asdict(answer)
