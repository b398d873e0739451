"""A message whose content is neither text nor parts is refused before it is
written: written, it would be refused by every reader, and the session with it."""

from __future__ import annotations

from pathlib import Path

import pytest

import turnlog
from turnlog import events as ev
from turnlog.errors import UsageError
from turnlog.events import ToolCall


@pytest.mark.parametrize("bad", [None, 5, {"text": "hi"}])
@pytest.mark.parametrize("kind", ["user", "system", "assistant", "result"])
def test_bad_content_is_refused_and_the_session_stays_readable(
    kind: str, bad: object, tmp_path: Path
) -> None:
    path = tmp_path / "s.jsonl"
    with turnlog.open(path, create=True) as log:
        log.user("go")
        with log.turn(), log.step():
            log.assistant("", [ToolCall(id="c1", name="look")])
            with log.dispatch(ToolCall(id="c1", name="look")) as running:
                running.result("ok")
            before = log.next_seq
            with pytest.raises(UsageError, match="neither text nor a list of parts"):
                if kind == "result":
                    log.append(ev.ToolResult(call_id="c1", content=bad))  # type: ignore[arg-type]
                else:
                    getattr(log, kind)(bad)
            assert log.next_seq == before
            log.assistant("done")
    found = turnlog.inspect(path)
    assert found.status == "finished", (found.status, found.reason)
