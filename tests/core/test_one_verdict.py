"""The tail decides as the whole log does, in the cases an outside review found where it did not."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

import turnlog
from builders import assert_exports_valid
from turnlog import events as ev
from turnlog.core.fold import Message
from turnlog.core.verdict import verdict
from turnlog.events import ToolCall
from turnlog.providers.common import unique_call_ids

LS = ToolCall(id="c1", name="ls")


def same_verdict(store: turnlog.Store, session_id: str) -> turnlog.Verdict:
    full = verdict(store.read(session_id))
    assert store.read_tail(session_id).verdict() == full
    return full


@pytest.mark.parametrize("kind", ["jsonl", "sqlite"])
def test_a_result_placed_back_beside_its_request_does_not_unfinish_a_session(
    tmp_path: Path, kind: str
) -> None:
    target = tmp_path / "s.jsonl" if kind == "jsonl" else f"sqlite:///{tmp_path}/s.db"
    with turnlog.open(target, "s") as log:
        log.user("list the files")
        with log.turn(), log.step():
            asked = log.assistant("", [LS])
            running = log.begin_dispatch(asked.data.tool_calls[0])
            log.assistant("Listing in the background; done.")
            running.result("a b c")
        store = log.store
    found = same_verdict(store, "s")
    assert found.finished
    assert turnlog.inspect(store, "s").status == "finished"
    with turnlog.open(store, "s") as log:
        assert not turnlog.revive(log).revived


def test_needs_response_agrees_after_a_system_message_in_a_turn(tmp_path: Path) -> None:
    with turnlog.open(tmp_path / "s.jsonl") as log:
        log.user("hi")
        with log.turn():
            log.system("note")
        store = log.store
    assert same_verdict(store, "s").needs_response


def test_an_unwinding_turn_stamps_its_events_with_the_time(tmp_path: Path) -> None:
    with turnlog.open(tmp_path / "s.jsonl"):
        pass
    time.sleep(0.05)
    with turnlog.open(tmp_path / "s.jsonl") as log:
        log.user("go")
        with pytest.raises(RuntimeError), log.turn(), log.step():
            log.assistant("", [LS])
            raise RuntimeError("boom")
        store = log.store
    events = store.read("s")
    assert all(e.ts is not None for e in events)
    assert same_verdict(store, "s").last_ts == events[-1].ts


def test_a_renamed_call_id_never_takes_an_id_the_log_uses() -> None:
    # c1 asked twice (the second becomes c1__2 for the provider), then a call
    # whose own id is "c1__2": every id in the request stays unique.
    messages = []
    for seq, call_id in enumerate(["c1", "c1", "c1__2"], start=1):
        messages.append(
            Message(
                role="assistant",
                content="",
                seq=2 * seq,
                tool_calls=(ToolCall(id=call_id, name="t"),),
            )
        )
        messages.append(Message(role="tool", content="ok", seq=2 * seq + 1, call_id=call_id))
    transcript = [Message(role="user", content="go", seq=0), *messages]
    renamed = unique_call_ids(transcript)
    ids = [c.id for m in renamed for c in m.tool_calls]
    assert len(set(ids)) == 3 and ids[2] == "c1__2"
    answers = [m.call_id for m in renamed if m.role == "tool"]
    assert answers == ids
    assert_exports_valid([*transcript, Message(role="assistant", content="done", seq=99)])


def test_verify_reports_the_orders_recovery_leaves_alone(tmp_path: Path) -> None:
    from builders import write_session

    path = tmp_path / "s.jsonl"
    write_session(
        path,
        [
            ev.UserMessage(content="go"),
            ev.AssistantMessage(tool_calls=[ToolCall(id="x", name="t")]),
            ev.TurnStart(turn=1, revivals=3),
            ev.AssistantMessage(tool_calls=[LS]),
            ev.TurnEnd(turn=1),
            ev.ToolResult(call_id="c1"),
            ev.RunRevived(revival=7),
        ],
    )
    report = turnlog.verify.verify_session(turnlog.JSONLStore(tmp_path), "s")
    text = " ".join(problem.message for problem in report.problems)
    for words in ("outside any turn", "unanswered", "stamped with 3", "numbered 7"):
        assert words in text, words
