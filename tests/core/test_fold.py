"""The fold: transcript, open turn, owed calls; incremental equals fresh."""

from __future__ import annotations

from builders import (
    assistant,
    call,
    dispatch,
    number,
    result,
    step_end,
    step_start,
    turn_end,
    turn_start,
)
from turnlog import events as ev
from turnlog.core.fold import Fold, fold

SESSION = number(
    [
        ev.SystemMessage(content="sys"),
        ev.UserMessage(content="hi"),
        turn_start(1),
        step_start(1, 1),
        assistant(
            call("a", "read"), call("b", "pay"), content=[{"type": "thinking", "signature": "S"}]
        ),
        dispatch("a", "read"),
        result("a", "read"),
        dispatch("b", "pay"),
        result("b", "pay"),
        step_end(1, 1),
        step_start(1, 2),
        assistant(content="done"),
        step_end(1, 2),
        turn_end(1, 2),
        ev.Compaction(through_seq=7, summary="earlier: read and paid"),
        ev.RunRevived(revival=1),
        ev.UserMessage(content="again", injected="revival"),
        turn_start(2),
        step_start(2, 1),
        assistant(call("c", "rm")),
        dispatch("c", "rm"),
        ev.Custom(type="x_cost", fields={"usd": 1}),
    ]
)


def test_incremental_state_equals_fresh_fold_at_every_prefix() -> None:
    folder = Fold()
    for i, event in enumerate(SESSION):
        folder.apply(event)
        assert folder.state == fold(SESSION[: i + 1]), f"diverged after seq {i}"


def test_transcript_and_open_turn() -> None:
    state = fold(SESSION)
    assert state.session_id == "s1"
    roles = [(m.role, m.kind) for m in state.messages]
    assert roles[0] == ("user", "compaction")
    # The result at seq 9 answers a call (seq 5) the summary now covers, so
    # it goes with it: alone it would be an orphan every provider rejects.
    assert [m.seq for m in state.messages][1:] == [12, 17, 20]
    turn = state.open_turn
    assert turn is not None and turn.seq == 18 and turn.turn == 2 and turn.steps == 1
    assert turn.open_step is not None and turn.open_step.seq == 19
    assert [c.call_id for c in state.owed_calls] == ["c"]
    assert [c.call_id for c in state.owed_calls if c.dispatch is not None] == ["c"]
    assert state.revivals == 1
    assert state.turns == 2 and state.last_turn == 2
    assert state.needs_response


def test_compaction_replaces_without_deleting() -> None:
    state = fold(SESSION[:16])
    assert state.messages[0].content == "earlier: read and paid"
    assert all(m.seq > 7 for m in state.messages[1:])
    assert state.next_seq == 16


def test_reasoning_kept_verbatim() -> None:
    message = fold(SESSION[:6]).messages[-1]
    assert message.content == [{"type": "thinking", "signature": "S"}]


def test_needs_response_and_finished() -> None:
    assert not fold(SESSION[:15]).needs_response
    assert fold(SESSION[:3]).needs_response
    assert fold(SESSION[:6]).needs_response


def test_steps_pair_structurally_not_by_number() -> None:
    log = number([turn_start(5), step_start(9, 9), step_end(1, 1), turn_end(3)])
    state = fold(log)
    assert state.open_turn is None
    assert state.warnings == ()


def test_stray_ends_warn() -> None:
    state = fold(number([step_end(), turn_end()]))
    assert len(state.warnings) == 2


def test_a_scratch_fold_goes_on_alone_and_shares_the_frozen_messages() -> None:
    """A batch is tried on a scratch fold: what it changes never reaches the
    handle's fold, and the copy shares the transcript's messages (no copy of
    each, which made every batch cost the whole session's length)."""
    for cut in range(1, len(SESSION)):
        original = Fold()
        for event in SESSION[:cut]:
            original.apply(event)
        before = original.state
        scratch = original.scratch()
        assert scratch.state == before
        copied = scratch.state.messages
        assert all(a is b for a, b in zip(copied, before.messages, strict=True))
        for event in SESSION[cut:]:
            scratch.apply(event)
        assert scratch.state == fold(SESSION), f"scratch from seq {cut} diverged"
        assert original.state == before
