"""The writer handle: write order, honest unwinding, durability barriers, revival."""

from __future__ import annotations

from pathlib import Path

import pytest

import turnlog
from fileio_doubles import RecordingIO
from turnlog import events as ev
from turnlog.core.fold import Fold
from turnlog.stores import JSONLStore, MemoryStore

CALLS = [
    turnlog.ToolCall(id="pay", name="pay", arguments={"usd": 5}),
    turnlog.ToolCall(id="ls", name="ls"),
]


def new_log() -> turnlog.Log:
    log = turnlog.open(MemoryStore(), "s", create=True)
    log.user("go")
    return log


def results(log: turnlog.Log) -> dict[str, ev.ToolResult]:
    events = log.store.read(log.session_id)
    return {e.data.call_id: e.data for e in events if isinstance(e.data, ev.ToolResult)}


def test_exception_in_a_tool_unwinds_honestly() -> None:
    log = new_log()
    with pytest.raises(RuntimeError, match="bank down"), log.turn(), log.step():
        log.assistant("paying", CALLS)
        with log.dispatch(CALLS[0], idempotency="destructive"):
            raise RuntimeError("bank down")
    events = log.store.read("s")
    found = results(log)
    assert (found["pay"].risk, found["pay"].rule) == ("tool_outcome_unknown", "U1")
    assert "bank down" in ev.content_text(found["pay"].content)
    assert (found["ls"].risk, found["ls"].rule) == ("tool_not_started", "U2")
    assert [e.type for e in events[-2:]] == ["step_end", "turn_end"]
    end = events[-1].data
    assert isinstance(end, ev.TurnEnd) and end.reason == "error"
    assert all(e.origin == "unwind" for e in events[-4:])
    assert turnlog.plan(events).events == ()


def test_cancellation_ends_the_turn_cancelled() -> None:
    log = new_log()
    with pytest.raises(KeyboardInterrupt), log.turn(), log.step():
        log.assistant("", CALLS[:1])
        raise KeyboardInterrupt
    end = log.store.read("s")[-1].data
    assert isinstance(end, ev.TurnEnd) and end.reason == "cancelled"
    assert results(log)["pay"].risk == "tool_not_started"


def test_tool_block_without_a_result_is_outcome_unknown() -> None:
    log = new_log()
    with log.turn(), log.step():
        log.assistant("", CALLS[:1])
        with log.dispatch(CALLS[0]):
            pass
    assert results(log)["pay"].risk == "tool_outcome_unknown"


def test_turn_ending_with_unanswered_calls_is_an_error_and_closed() -> None:
    log = new_log()
    with pytest.raises(turnlog.UsageError, match="ls"), log.turn(), log.step():
        log.assistant("", CALLS)
        with log.dispatch(CALLS[0]) as running:
            running.result("paid")
    assert not turnlog.recovery.interrupted(log.store.read("s"))


def test_structure_misuse_is_refused() -> None:
    log = new_log()
    with pytest.raises(turnlog.UsageError), log.step():
        pass
    with log.turn():
        with pytest.raises(turnlog.UsageError, match="never nest"), log.turn():
            pass
        log.assistant("", CALLS[:1])
        with log.dispatch(CALLS[0]) as running:
            running.result("paid")
        with pytest.raises(turnlog.UsageError, match="never replayed"), log.dispatch(CALLS[0]):
            pass


def test_hot_path_never_builds_a_snapshot(monkeypatch: pytest.MonkeyPatch) -> None:
    log = new_log()

    def no_snapshot(self: Fold) -> None:
        raise AssertionError("a snapshot of the whole state was built on the hot path")

    monkeypatch.setattr(Fold, "state", property(no_snapshot))
    for turn in range(3):
        call = turnlog.ToolCall(id=f"pay{turn}", name="pay")
        log.user("go")
        with log.turn(), log.step():
            log.assistant("", [call])
            with log.dispatch(call) as running:
                running.result("ok")


def test_barrier_syncs_dispatch_before_it_returns(tmp_path: Path) -> None:
    io = RecordingIO()
    log = turnlog.open(JSONLStore(tmp_path, io=io), "b", create=True)
    log.user("pay")
    with log, log.turn(), log.step():
        log.assistant("", CALLS[:1])
        before = len(io.ops)
        with log.dispatch(CALLS[0]) as running:
            # Inside the tool body: the dispatch is written and synced.
            kinds = [op[0] for op in io.ops[before:]]
            assert kinds == ["write", "fsync"]
            running.result("paid")
        assert [op[0] for op in io.ops[before + 2 :]] == ["write"]  # the result: not synced


def test_revive_counts_from_the_log_and_stops_at_the_cap() -> None:
    store = MemoryStore()
    for revival in (1, 2):
        with turnlog.open(store, "r", create=revival == 1) as log:
            with pytest.raises(RuntimeError), log.turn():
                raise RuntimeError("crash stand-in")  # leaves nothing open: not a crash
            log.append(ev.TurnStart(turn=99, revivals=log.state.revivals))  # a real orphan
            outcome = turnlog.revive(log, max_revivals=2)
            assert outcome.revived and outcome.revival == revival
            assert outcome.messages[-1].injected == "revival"
            assert not turnlog.recovery.interrupted(store.read("r"))
    with turnlog.open(store, "r") as log:
        log.append(log.next_turn_start())  # run on after the second revival, and crashed
        before = log.next_seq
        outcome = turnlog.revive(log, max_revivals=2)
        assert (outcome.revived, outcome.reason) == (False, "revival_cap")
        assert log.next_seq == before  # past the cap nothing is written
        assert turnlog.revive(log, max_revivals=0).reason == "revival_disabled"
    found = turnlog.inspect(store, "r", max_revivals=2)
    assert (found.revivals, found.revivable, found.reason) == (2, False, "revival_cap")


def test_finished_session_is_not_revived() -> None:
    log = new_log()
    log.user("hi")
    with log.turn():
        log.assistant("hello")
    outcome = turnlog.revive(log)
    assert (outcome.revived, outcome.reason) == (False, "finished")


def test_bad_durability_is_refused_before_anything_is_created(tmp_path: Path) -> None:
    with pytest.raises(turnlog.UsageError, match="durability"):
        turnlog.open(tmp_path / "d.jsonl", durability="sometimes")  # type: ignore[arg-type]
    assert not (tmp_path / "d.jsonl").exists()


def test_a_dispatch_that_may_not_happen_is_refused_as_such_whatever_its_idempotency(
    tmp_path: Path,
) -> None:
    call = ev.ToolCall(id="c1", name="pay", arguments={})
    with turnlog.open(tmp_path / "d.jsonl") as log:
        log.user("pay")
        with pytest.raises(turnlog.UsageError, match="must be inside a turn"):
            log.begin_dispatch(call, idempotency="bogus")  # type: ignore[arg-type]
        with log.turn(), log.step():
            log.assistant("", [call])
            with pytest.raises(turnlog.UsageError, match="idempotency 'bogus'"):
                log.begin_dispatch(call, idempotency="bogus")  # type: ignore[arg-type]
            with log.dispatch(call) as running:
                running.result("paid")
            with pytest.raises(turnlog.UsageError, match="never replayed"):
                log.begin_dispatch(call, idempotency="bogus")  # type: ignore[arg-type]


def test_read_transcript_reads_the_log_once_and_shows_each_event(tmp_path: Path) -> None:
    with turnlog.open(tmp_path / "r.jsonl") as log:
        log.user("hi")
        log.append(ev.Custom(type="x_mark", fields={"n": 1}))
    with turnlog.open(tmp_path / "r.jsonl") as log:
        assert not log.transcript_read  # reopened: only the tail was read
        seen: list[ev.Event] = []
        assert log.read_transcript(observe=seen.append) is True
        assert [e.seq for e in seen] == [0, 1, 2] and log.transcript_read
        assert log.read_transcript(observe=seen.append) is False
        assert len(seen) == 3
        assert [m.content for m in log.messages] == ["hi"]


def test_both_loops_word_a_refused_dispatch_alike(tmp_path: Path) -> None:
    import asyncio

    call = ev.ToolCall(id="c1", name="pay", arguments={})
    with (
        turnlog.open(tmp_path / "s.jsonl") as log,
        pytest.raises(turnlog.UsageError) as sync_refusal,
        log.dispatch(call),
    ):
        pass

    async def main() -> str:
        async with turnlog.aopen(tmp_path / "a.jsonl") as log:
            with pytest.raises(turnlog.UsageError) as refusal:
                async with log.dispatch(call):
                    pass
            return str(refusal.value)

    async_refusal = asyncio.run(main())
    assert "must be inside a turn" in async_refusal
    assert async_refusal == str(sync_refusal.value)
