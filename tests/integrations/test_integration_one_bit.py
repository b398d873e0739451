"""An adapter asks the log what it needs to know (is a turn open, which calls are
owed) without a whole verdict: recording a user's message, a call and its result
through `add_items` decides no verdict at all (it was seven for three items)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

import turnlog.handle.log as handle_log
from turnlog.core.verdict import decide


def test_add_items_decides_no_verdict(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from turnlog.integrations.openai_agents import TurnlogSession

    decided = [0]

    def counting(fold: object) -> object:
        decided[0] += 1
        return decide(fold)  # type: ignore[arg-type]

    monkeypatch.setattr(handle_log, "decide", counting)
    items = [
        {"role": "user", "content": "What is the weather in Oslo?"},
        {
            "type": "function_call",
            "call_id": "c1",
            "name": "lookup",
            "arguments": '{"city": "Oslo"}',
            "id": "fc_1",
        },
        {"type": "function_call_output", "call_id": "c1", "output": "3C"},
    ]

    async def main() -> list[object]:
        async with TurnlogSession(tmp_path, "w") as session:
            await session.add_items(items)
            return await session.get_items()

    recorded = asyncio.run(main())
    assert decided[0] == 0
    assert [item.get("type", "message") for item in recorded] == [  # type: ignore[attr-defined]
        "message",
        "function_call",
        "function_call_output",
    ]
