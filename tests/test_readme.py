"""The README's Python example runs as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import turnlog

README = Path(__file__).parent.parent / "README.md"


def test_readme_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    block = re.search(r"```python\n(.*?)```", README.read_text(), re.S)
    assert block is not None
    monkeypatch.chdir(tmp_path)
    exec(block.group(1), {"pay": lambda invoice: f"paid invoice {invoice}"})
    events = turnlog.JSONLStore(tmp_path / "sessions").read("run-1")
    assert [e.type for e in events][-3:] == ["tool_result", "step_end", "turn_end"]
    assert not turnlog.interrupted(events)
