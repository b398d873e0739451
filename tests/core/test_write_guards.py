"""The writer refuses the orders a provider would reject after recovery; a crashed handle waits for recovery; reads are snapshots."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

import turnlog
from builders import assert_exports_valid, write_session
from turnlog import events as ev, providers
from turnlog.core.fold import Message
from turnlog.errors import SessionInterruptedError, WriteOrderError
from turnlog.events import ToolCall
from turnlog.stores import MemoryStore

PAY = ToolCall(id="c1", name="pay", arguments={"id": 7})


def open_step(log: turnlog.Log) -> None:
    log.user("pay the invoice")
    log.begin_turn()
    log.begin_step()


def refused(log: turnlog.Log, item: ev.EventData, words: str, **options: object) -> None:
    before = log.next_seq
    with pytest.raises(WriteOrderError, match=words) as caught:
        log.append(item, **options)  # type: ignore[arg-type]
    assert caught.value.hint
    assert log.next_seq == before


def test_a_compaction_that_swallows_an_owed_call_is_refused(tmp_path: Path) -> None:
    with turnlog.open(tmp_path / "s.jsonl") as log:
        open_step(log)
        asked = log.assistant("Paying.", [PAY])
        log.begin_dispatch(PAY)
        refused(log, ev.Compaction(through_seq=asked.seq, summary="s"), "owed call")
        # Up to before the request is fine: the call keeps its request.
        log.append(ev.Compaction(through_seq=asked.seq - 1, summary="s"))
        refused(log, ev.Compaction(through_seq=log.next_seq, summary="s"), "not written yet")


def test_a_dispatch_no_message_asked_for_is_refused(tmp_path: Path) -> None:
    with turnlog.open(tmp_path / "s.jsonl") as log:
        open_step(log)
        before = log.next_seq
        with pytest.raises(WriteOrderError, match="no assistant message"):
            log.begin_dispatch(ToolCall(id="ghost", name="pay"))
        refused(log, ev.ToolDispatch(call_id="ghost"), "no assistant message")
        assert log.next_seq == before
        # Asked for, it is dispatched; a result without a request is refused too.
        log.assistant("", [PAY])
        with log.dispatch(PAY) as call:
            call.result("paid")
        refused(log, ev.ToolResult(call_id="other"), "not dispatched")
        refused(
            log, ev.ToolResult(call_id="other"), "no assistant message", allow_undispatched=True
        )


def test_a_turn_inside_a_turn_is_refused(tmp_path: Path) -> None:
    with turnlog.open(tmp_path / "s.jsonl") as log:
        open_step(log)
        refused(log, ev.TurnStart(turn=2), "turns never nest")
        log.assistant("", [PAY])
        # Nor may a turn end with a call owed, nor a step claim nothing is in flight.
        refused(log, ev.TurnEnd(reason="complete"), "unanswered")
        refused(log, ev.StepEnd(outcome="ok"), "unanswered")
        refused(log, ev.AssistantMessage(tool_calls=[PAY]), "asks again")


def test_interrupted_is_written_by_recovery_only(tmp_path: Path) -> None:
    with turnlog.open(tmp_path / "s.jsonl") as log:
        open_step(log)
        log.append(ev.StepEnd(outcome="ok"))
        refused(log, ev.TurnEnd(reason="interrupted"), "recovery only")
        refused(log, ev.TurnEnd(reason="interrupted"), "recovery only", origin="revival")
        log.append(ev.TurnEnd(reason="complete"))


def test_an_assistant_asking_for_tools_outside_a_turn_is_refused(tmp_path: Path) -> None:
    with turnlog.open(tmp_path / "s.jsonl") as log:
        log.user("hi")
        refused(log, ev.AssistantMessage(tool_calls=[PAY]), "outside any turn")
        log.assistant("Hello.")  # a plain answer needs no turn


def test_a_batch_is_checked_in_order_and_refused_whole(tmp_path: Path) -> None:
    with turnlog.open(tmp_path / "s.jsonl") as log:
        open_step(log)
        before = log.next_seq
        with pytest.raises(WriteOrderError, match="no assistant message"):
            log.append_many([ev.ToolDispatch(call_id="c1"), ev.ToolResult(call_id="c1")])
        assert log.next_seq == before
        log.append_many(
            [
                ev.AssistantMessage(tool_calls=[PAY]),
                ev.ToolDispatch(call_id="c1"),
                ev.ToolResult(call_id="c1", content="paid"),
            ]
        )
        assert log.verdict().owed == ()


def crashed(path: Path) -> None:
    write_session(
        path,
        [
            ev.UserMessage(content="pay"),
            ev.TurnStart(turn=1, revivals=0),
            ev.StepStart(turn=1, step=1),
            ev.AssistantMessage(tool_calls=[PAY]),
            ev.ToolDispatch(call_id="c1", name="pay"),
        ],
    )


@pytest.mark.parametrize("kind", ["jsonl", "sqlite"])
def test_a_handle_on_a_crashed_session_refuses_writes_until_recovered(
    tmp_path: Path, kind: str
) -> None:
    path = tmp_path / "s.jsonl"
    crashed(path)
    target: str | Path = path
    if kind == "sqlite":
        target = f"sqlite:///{tmp_path}/s.db"
        with turnlog.open(path) as source:
            events = list(source.store.iter_events("s"))
        store, _ = turnlog.stores.open_store(target)
        with store.create(events[0]) as writer:
            writer.append(events[1:], expected_seq=1, sync=True)
        store.close()
    with turnlog.open(target, "s") as log:
        assert log.crashed
        before = log.next_seq
        with pytest.raises(SessionInterruptedError) as caught:
            log.user("are you there?")
        assert "recover" in (caught.value.hint or "")
        with pytest.raises(SessionInterruptedError):
            log.append_many([ev.UserMessage(content="x")])
        assert log.next_seq == before
        log.recover()
        assert not log.crashed
        log.user("are you there?")
        assert_exports_valid(log.messages)


def test_open_with_recover_or_revive(tmp_path: Path) -> None:
    crashed(tmp_path / "a.jsonl")
    with turnlog.open(tmp_path / "a.jsonl", recover=True) as log:
        assert not log.crashed and log.verdict().open_turn is None
        assert log.state.revivals == 0
        log.user("go on")
    crashed(tmp_path / "b.jsonl")
    with turnlog.open(tmp_path / "b.jsonl", revive=True) as log:
        assert not log.crashed and log.state.revivals == 1
        assert log.messages[-1].injected == "revival"
    # A healthy session opens as it is, with either flag.
    with turnlog.open(tmp_path / "b.jsonl", recover=True, revive=True) as log:
        assert log.state.revivals == 1


def test_anthropic_refuses_white_space_text_and_the_renderer_drops_it() -> None:
    payload = {"messages": [{"role": "user", "content": [{"type": "text", "text": " \n"}]}]}
    messages = {v.message for v in providers.validate("anthropic", payload)}
    assert "text content blocks must contain non-whitespace text" in messages
    transcript = (
        Message(role="user", content="go", seq=1),
        Message(role="assistant", content=[{"type": "text", "text": "  "}], seq=2),
        Message(role="user", content="   ", seq=3),
        Message(role="assistant", content="done", seq=4),
    )
    rendered = providers.render("anthropic", transcript)
    assert providers.validate("anthropic", rendered) == []
    assert all(
        block.get("text", "x").strip()
        for message in rendered["messages"]
        for block in message["content"]
    )


def reader_threads_see_snapshots(log: turnlog.Log, duration_s: float) -> int:
    """8 threads run parallel calls while 2 threads read; returns reads made."""
    stop = time.monotonic() + duration_s
    failures: list[BaseException] = []
    reads = [0]

    def check_snapshot() -> None:
        state = log.state
        asked: set[str] = set()
        for message in state.messages:
            assert message.seq < state.next_seq
            if message.role == "assistant":
                asked.update(call.id for call in message.tool_calls)
            elif message.role == "tool":
                assert message.call_id in asked
        found = log.verdict()
        assert found.next_seq >= state.next_seq
        assert found.open_turn is not None
        turn_calls = {call.call_id for call in found.open_turn.calls if not call.answered}
        assert {call.call_id for call in found.owed} == turn_calls
        log.plan()

    def reader() -> None:
        try:
            while time.monotonic() < stop:
                check_snapshot()
                reads[0] += 1
        except BaseException as exc:  # any exception is a finding
            failures.append(exc)

    def worker(index: int) -> None:
        try:
            step = 0
            while time.monotonic() < stop:
                step += 1
                calls = [ToolCall(id=f"w{index}-{step}-{n}", name="read") for n in range(2)]
                with log.lock:
                    log.assistant("", calls)
                for call in calls:
                    with log.dispatch(call, idempotency="read_only") as running:
                        running.result("ok")
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=reader) for _ in range(2)]
    threads += [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == [], failures[:3]
    return reads[0]


@pytest.mark.parametrize("kind", ["jsonl", "memory"])
def test_reads_race_no_writes(tmp_path: Path, kind: str) -> None:
    target = tmp_path / "s.jsonl" if kind == "jsonl" else turnlog.stores.MemoryStore()
    with turnlog.open(target, "s", durability="none") as log:
        open_step(log)
        assert reader_threads_see_snapshots(log, duration_s=2.0) > 0
        log.end_step()
        assert_exports_valid(log.messages)


@pytest.mark.slow
def test_reads_race_no_writes_for_ten_seconds(tmp_path: Path) -> None:
    with turnlog.open(tmp_path / "s.jsonl", durability="none") as log:
        open_step(log)
        assert reader_threads_see_snapshots(log, duration_s=10.0) > 0


def test_an_idempotency_typo_is_refused_with_the_values(tmp_path: Path) -> None:
    with turnlog.open(tmp_path / "s.jsonl") as log:
        open_step(log)
        log.assistant("", [PAY])
        before = log.next_seq
        with pytest.raises(turnlog.UsageError, match="destructiv") as caught:
            log.begin_dispatch(PAY, idempotency="destructiv")
        assert "read_only" in str(caught.value) and caught.value.hint
        assert log.next_seq == before
        with log.dispatch(PAY, idempotency="destructive") as call:
            call.result("paid")


def test_false_revival_counts_are_refused(tmp_path: Path) -> None:
    # Tail readers take these numbers as the count: the writer keeps them true.
    with turnlog.open(tmp_path / "s.jsonl") as log:
        log.user("hi")
        refused(log, ev.RunRevived(revival=5), "next revival")
        refused(log, ev.TurnStart(turn=1, revivals=9), "stamped with 9")
        log.append(ev.RunRevived(revival=1))
        log.append(log.next_turn_start())
        assert log.verdict().revivals == 1


def test_an_orphaned_result_is_recovery_s_only(tmp_path: Path) -> None:
    with turnlog.open(tmp_path / "s.jsonl") as log:
        open_step(log)
        log.assistant("", [PAY])
        log.begin_dispatch(PAY)
        refused(log, ev.ToolResult(call_id="c1", content="ok", orphaned=True), "orphaned")


def test_a_stale_dispatch_handle_does_not_answer_a_later_call(tmp_path: Path) -> None:
    call = ToolCall(id="call_0", name="search")
    with turnlog.open(tmp_path / "s.jsonl") as log:
        log.user("search")
        with pytest.raises(TimeoutError), log.turn(), log.step():
            log.assistant("", [call])
            first = log.begin_dispatch(call)
            raise TimeoutError
        with log.turn(), log.step():
            log.assistant("retrying", [call])
            second = log.begin_dispatch(call)
            with pytest.raises(WriteOrderError, match="already closed"):
                first.result("OLD RUN")
            second.result("new")
        answers = [m.content for m in log.messages if m.role == "tool"]
        assert answers[-1] == "new" and "OLD RUN" not in answers


def test_a_crashed_handle_takes_only_repairs_even_with_their_origin(tmp_path: Path) -> None:
    crashed(tmp_path / "s.jsonl")
    with turnlog.open(tmp_path / "s.jsonl") as log:
        with pytest.raises(SessionInterruptedError):
            log.append(ev.UserMessage(content="x"), origin="revival")
        with pytest.raises(SessionInterruptedError):
            log.append(ev.AssistantMessage(content="x"), origin="recovery")
        log.recover()


def test_end_step_without_a_turn_of_the_handle_is_a_usage_error(tmp_path: Path) -> None:
    with turnlog.open(tmp_path / "s.jsonl") as log:
        log.user("hi")
        log.append(ev.TurnStart(turn=1))
        log.append(ev.StepStart(turn=1, step=1))
        with pytest.raises(turnlog.UsageError, match="no step"):
            log.end_step()


def test_a_copied_session_file_is_refused_not_read_as_another(tmp_path: Path) -> None:
    with turnlog.open(tmp_path / "run-1.jsonl") as log:
        log.user("original")
    (tmp_path / "run-2.jsonl").write_bytes((tmp_path / "run-1.jsonl").read_bytes())
    with turnlog.open(tmp_path / "run-1.jsonl") as log:
        log.user("only in run-1")
    before = (tmp_path / "run-2.jsonl").read_bytes()
    with pytest.raises(turnlog.FormatError, match="holds session 'run-1'") as caught:
        turnlog.open(tmp_path / "run-2.jsonl")
    assert "turnlog copy" in (caught.value.hint or "")
    assert (tmp_path / "run-2.jsonl").read_bytes() == before


def test_threads_sharing_a_handle_revive_it_once(tmp_path: Path) -> None:
    for attempt in range(20):
        path = tmp_path / f"r{attempt}.jsonl"
        crashed(path)
        with turnlog.open(path) as log:
            barrier = threading.Barrier(4)

            def revive(handle: turnlog.Log = log, barrier: threading.Barrier = barrier) -> None:
                barrier.wait()
                turnlog.revive(handle)

            threads = [threading.Thread(target=revive) for _ in range(4)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            notices = [m for m in log.messages if m.injected == "revival"]
            assert len(notices) == 1 and log.state.revivals == 1


def test_a_tool_with_an_idempotency_typo_is_refused_when_built() -> None:
    with pytest.raises(turnlog.UsageError, match="destructiv") as caught:
        turnlog.Tool(run=lambda: "ok", idempotency="destructiv")  # type: ignore[arg-type]
    assert "read_only" in str(caught.value) and caught.value.hint
    assert turnlog.Tool(run=lambda: "ok", idempotency="read_only").idempotency == "read_only"


def test_a_batch_whose_first_item_alone_depends_on_the_turn_is_checked_as_is(
    tmp_path: Path,
) -> None:
    with turnlog.open(tmp_path / "s.jsonl") as log:
        open_step(log)
        before = log.next_seq
        with pytest.raises(WriteOrderError, match="no assistant message"):
            log.append_many([ev.ToolDispatch(call_id="ghost"), ev.UserMessage(content="x")])
        assert log.next_seq == before
        log.append_many([ev.StepEnd(outcome="ok"), ev.UserMessage(content="meanwhile")])
        assert not log.verdict().open_turn.open_step  # type: ignore[union-attr]


def test_an_assistant_message_before_the_user_says_anything_is_refused() -> None:
    """Anthropic and Gemini refuse a transcript the assistant opens, and every
    export drops an empty or white-space user message: the writer refuses
    the order and writes nothing."""
    store = MemoryStore()
    with turnlog.open(store, "s", create=True) as log:
        log.system("You pay invoices.")
        with pytest.raises(turnlog.WriteOrderError, match="before any user message"):
            log.assistant("Hello! What shall I pay?")
        log.user("")
        log.user("  \n")
        with pytest.raises(turnlog.WriteOrderError, match="before any user message"):
            log.assistant("Hello!")
        assert len(store.read("s")) == 4
        log.user("Pay invoice 7")
        log.assistant("Paid.")
    assert [e.type for e in store.read("s")][-2:] == ["user_message", "assistant_message"]


def test_an_orphaned_result_for_a_call_the_transcript_asks_for_is_refused_from_any_origin() -> None:
    """Marked orphaned, a result is hidden from every export: for a call whose
    request is in the transcript that leaves the request unanswered."""
    store = MemoryStore()
    call = ev.ToolCall(id="c1", name="pay")
    with turnlog.open(store, "s", create=True) as log:
        log.user("pay")
        with log.turn(), log.step():
            log.assistant("", [call])
            with log.dispatch(call) as running:
                for origin in ("recovery", None):
                    with pytest.raises(turnlog.WriteOrderError, match="orphaned"):
                        log.append(
                            ev.ToolResult(call_id="c1", content="lost", orphaned=True),
                            origin=origin,
                        )
                running.result("paid")
    results = [e for e in store.read("s") if isinstance(e.data, ev.ToolResult)]
    assert [(e.data.content, e.data.orphaned) for e in results] == [("paid", False)]


def test_reopened_the_writer_still_knows_the_user_has_not_spoken(tmp_path: Path) -> None:
    """A reopened writer folds only the tail; whether the user spoke before it
    is read from the head, so the assistant still may not open the transcript."""
    path = tmp_path / "s.jsonl"
    with turnlog.open(path) as log:
        log.user("")
        for _ in range(3):
            with log.turn():
                pass
        log.user("  ")
    assert turnlog.stores.JSONLStore(tmp_path).read_tail("s").events[0].seq > 1
    with turnlog.open(path) as log:
        with pytest.raises(turnlog.WriteOrderError, match="before any user message"):
            log.assistant("Hello")
        log.user("Pay invoice 7")
    with turnlog.open(path) as log:  # now the head shows the user spoke
        log.assistant("Paid.")


def test_a_compaction_whose_summary_has_no_text_is_refused() -> None:
    store = MemoryStore()
    with turnlog.open(store, "s", create=True) as log:
        log.user("pay")
        log.assistant("paid")
        for summary in ("", "  \n"):
            with pytest.raises(turnlog.WriteOrderError, match="summary has no text"):
                log.append(ev.Compaction(through_seq=2, summary=summary))
        log.append(ev.Compaction(through_seq=2, summary="The user asked to pay; it was paid."))


def test_a_turn_boundary_that_hides_an_owed_report_is_refused() -> None:
    store = MemoryStore()
    with turnlog.open(store, "s", create=True) as log:
        log.user("start a researcher")
        log.append(log.next_turn_start())
        log.append(ev.SubagentSpawned(agent_id="bg", background=True))
        log.assistant("started")
        with pytest.raises(turnlog.WriteOrderError, match="owing the reports"):
            log.append(ev.TurnEnd(turn=1, reason="complete"))
        log.append(ev.TurnEnd(turn=1, reason="complete", reports_owed=["bg"]))
        start = log.next_turn_start()
        assert start.reports_owed == ["bg"]
