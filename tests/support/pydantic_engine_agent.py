"""The scripted Pydantic AI payer the durable-engine programs run: its model, its tool, its ledgers and where it dies.

KILL is `none`, `tool` (inside `send_money`, after its side effect) or
`model2` (inside the second model request, after the tool answered); each
kill happens once (a marker file in WORKDIR remembers it).
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo

from engine_agent import synced_append


class Payer:
    def __init__(self, work: Path, kill_at: str) -> None:
        self.work = work
        self.kill_at = kill_at

    def die_once_at(self, point: str) -> None:
        marker = self.work / f"killed_{point}"
        if self.kill_at == point and not marker.exists():
            marker.touch()
            os.kill(os.getpid(), signal.SIGKILL)

    def model(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        """Asks for send_money, then answers; writes each request's tool returns."""
        returns = [
            str(part.content)
            for message in messages
            for part in message.parts
            if isinstance(part, ToolReturnPart)
        ]
        synced_append(self.work / "model.jsonl", json.dumps(returns))
        if not returns:
            return ModelResponse(
                parts=[ToolCallPart(tool_name="send_money", args={"to": "bob"}, tool_call_id="c1")]
            )
        self.die_once_at("model2")
        return ModelResponse(parts=[TextPart("sent")])

    def tool(self) -> Any:
        def send_money(to: str) -> str:
            synced_append(self.work / "tools.log", f"send_money {to}")
            self.die_once_at("tool")
            return f"sent to {to}"

        return send_money
