"""`turnlog.at_most_once`: a tool call inside a step an engine may run again runs at most once."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import tenacity

import turnlog
from turnlog import EngineRun, ToolCall, events as ev
from turnlog.errors import ReplayDivergedError, UsageError
from turnlog.handle.async_log import AsyncLog
from turnlog.ops.sweep import sweep
from turnlog.ops.tree import revive_tree
from turnlog.runtime.at_most_once import Answer, aat_most_once
from turnlog.stores import JSONLStore, Store, open_store

PROGRAM = Path(__file__).with_name("guard_program.py")
RUN = EngineRun(engine="test", run_id="wf-1")
CALL = ToolCall(id="c1", name="charge", arguments={})


def engine_session(store: Store, run: EngineRun = RUN) -> turnlog.Log:
    """A session whose engine run asked for `c1` and then wrote nothing more."""
    log = turnlog.open(store, "s1", engine_run=run)
    log.begin_turn()
    log.user("charge")
    log.begin_step()
    log.assistant("", tool_calls=[CALL])
    return log


@pytest.mark.parametrize(
    ("runner", "kind"), [("plain", "jsonl"), ("plain", "sqlite"), ("temporal", "jsonl")]
)
def test_a_task_run_again_after_its_worker_died_answers_r1(
    runner: str, kind: str, tmp_path: Path
) -> None:
    """A Celery-style retry, and Temporal's retry of an activity whose worker
    died: the second attempt finds the dispatch unanswered and does not run."""
    target = str(tmp_path / "store") if kind == "jsonl" else f"sqlite:///{tmp_path / 'store.db'}"
    store, _ = open_store(target)
    # The run the program's step belongs to: the task's, or the workflow id
    # Temporal's activity environment gives its activity.
    run_id = "task-1" if runner == "plain" else "test"
    engine_session(store, EngineRun(engine=runner, run_id=run_id)).close()
    args = [sys.executable, str(PROGRAM), target, str(tmp_path), runner]
    first = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert first.returncode == -signal.SIGKILL, first.stderr
    second = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert second.returncode == 0, second.stderr
    assert second.stdout.startswith("R1: [turnlog]"), second.stdout
    assert (tmp_path / "ledger").read_text() == "charged\n"
    third = subprocess.run(args, capture_output=True, text=True, timeout=120)
    # Run again once more: the answer recorded, not a third verdict.
    assert third.returncode == 0, third.stderr
    assert third.stdout.startswith("recorded by recovery: [turnlog]"), third.stdout
    assert (tmp_path / "ledger").read_text() == "charged\n"
    results = [e for e in store.iter_events("s1") if isinstance(e.data, ev.ToolResult)]
    assert len(results) == 1 and results[0].data.rule == "R1"


def test_an_ordinary_error_is_the_answer_and_a_retry_does_not_run(tmp_path: Path) -> None:
    """tenacity retries what raises: the guard's recorded error comes back,
    and the body ran once; the model decides whether to call again."""
    runs: list[int] = []

    def flaky() -> str:
        runs.append(1)
        raise ConnectionError("card service down")

    with engine_session(JSONLStore(tmp_path)) as log:

        @tenacity.retry(stop=tenacity.stop_after_attempt(3), reraise=True)
        def step() -> Answer:
            answer = turnlog.at_most_once(log, CALL, flaky, idempotency="destructive")
            if answer.is_error:
                raise RuntimeError(answer.content)
            return answer

        with pytest.raises(RuntimeError, match="ConnectionError: card service down"):
            step()
        assert runs == [1]
        (result,) = [m for m in log.messages if m.role == "tool"]
        assert result.is_error and result.origin is None and result.risk is None


def test_rerun_is_for_idempotent_tools_and_is_recorded(tmp_path: Path) -> None:
    store = JSONLStore(tmp_path)
    with engine_session(store) as log:
        log.append(ev.ToolDispatch(call_id="c1", name="charge", idempotency="idempotent"))
    with pytest.raises(UsageError, match="read_only or idempotent"):
        turnlog.at_most_once(
            turnlog.open(store, "s1", engine_run=RUN, replay=False), CALL, str, rerun=True
        )


def test_an_idempotent_tool_may_run_again_after_a_crash(tmp_path: Path) -> None:
    store = JSONLStore(tmp_path)
    with engine_session(store) as log:
        log.append(ev.ToolDispatch(call_id="c1", name="charge", idempotency="idempotent"))
    with turnlog.open(store, "s1", engine_run=RUN, replay=False) as log:
        answer = turnlog.at_most_once(
            log, CALL, lambda: "read again", idempotency="idempotent", rerun=True
        )
    assert answer.ran and answer.content == "read again"
    (result,) = [e for e in store.iter_events("s1") if isinstance(e.data, ev.ToolResult)]
    assert result.data.rerun is True


def test_a_replay_that_writes_otherwise_is_refused_and_writes_nothing(tmp_path: Path) -> None:
    store = JSONLStore(tmp_path)
    engine_session(store).close()
    before = list(store.iter_events("s1"))
    with turnlog.open(store, "s1", engine_run=RUN) as log:
        log.begin_turn()
        with pytest.raises(ReplayDivergedError, match="user_message"):
            log.user("charge twice")
    assert list(store.iter_events("s1")) == before


def test_a_handle_replaying_its_engine_run_is_not_crashed(tmp_path: Path) -> None:
    store = JSONLStore(tmp_path)
    engine_session(store).close()
    before = list(store.iter_events("s1"))
    with turnlog.open(store, "s1", engine_run=RUN) as log:
        assert not log.crashed  # the run's own turn, replayed
        log.begin_turn()
        log.user("charge")  # met again, not written twice
        assert not log.crashed
    assert list(store.iter_events("s1")) == before


def test_decisions_recorded_together_are_met_again_in_a_replay(tmp_path: Path) -> None:
    """A run that paused two calls and recorded their decisions in one batch
    (an approval; a rejection and the result it writes) and then died: run
    again from the top, every write is met, none is written twice."""
    store = JSONLStore(tmp_path)
    calls = [CALL, ToolCall(id="c2", name="refund", arguments={})]
    decisions = {"c1": turnlog.Approve(by="alice"), "c2": turnlog.Reject(by="alice")}

    def run_once() -> None:
        with turnlog.open(store, "s1", engine_run=RUN) as log:
            log.begin_turn()
            log.user("charge")
            log.begin_step()
            log.assistant("", tool_calls=calls)
            for call in calls:
                log.pause(call.id)
            turnlog.runtime.approvals.record_decisions(log, decisions)

    run_once()
    before = list(store.iter_events("s1"))
    run_once()
    assert list(store.iter_events("s1")) == before


def test_a_session_an_engine_owns_is_left_to_it(tmp_path: Path) -> None:
    store = JSONLStore(tmp_path)
    engine_session(store).close()
    before = list(store.iter_events("s1"))
    (swept,) = sweep(store, revive=True)
    assert swept.action == "skipped" and "owned by test run wf-1" in swept.reason
    assert turnlog.revive(store, "s1").reason == "engine_run"
    with pytest.raises(turnlog.SessionInterruptedError, match="durable engine"):
        turnlog.open(store, "s1", revive=True)
    with revive_tree(store, "s1") as tree:
        assert [node.outcome for node in tree.nodes] == ["engine_run"]
    assert list(store.iter_events("s1")) == before


def test_another_run_is_refused_with_the_owner_named_and_writes_nothing(
    tmp_path: Path,
) -> None:
    """A new engine run (not the crashed run's retry), or a handle with no
    run, finds the crashed run's turn open: refused, the owner named, with
    the way on (the engine's retry, or `turnlog recover`)."""
    store = JSONLStore(tmp_path)
    engine_session(store).close()
    before = list(store.iter_events("s1"))
    other = EngineRun(engine="test", run_id="wf-2")
    with turnlog.open(store, "s1", engine_run=other) as log:
        with pytest.raises(
            turnlog.SessionInterruptedError, match="open for test run 'wf-1'"
        ) as refused:
            log.begin_turn()
        assert "turnlog recover" in refused.value.hint
    refused_plain = pytest.raises(turnlog.SessionInterruptedError, match="run 'wf-1'")
    with turnlog.open(store, "s1") as log, refused_plain:
        log.user("hello")
    assert list(store.iter_events("s1")) == before


def test_the_async_twin(tmp_path: Path) -> None:
    async def body() -> dict[str, int]:
        return {"charged": 5}

    async def main() -> None:
        log = AsyncLog(engine_session(JSONLStore(tmp_path)))
        answer = await aat_most_once(log, CALL, body, idempotency="destructive")
        assert answer.ran and answer.content == '{"charged":5}'
        again = await aat_most_once(log, CALL, body, idempotency="destructive")
        assert not again.ran and again.content == answer.content
        await log.close()

    asyncio.run(main())


def test_calls_guarded_from_threads_each_run_once(tmp_path: Path) -> None:
    """A step's parallel tool calls in threads, then the step run again."""
    from concurrent.futures import ThreadPoolExecutor

    calls = [ToolCall(id=f"c{n}", name="charge", arguments={}) for n in range(8)]
    runs: list[str] = []

    def guard_all(log: turnlog.Log) -> list[Answer]:
        def one(call: ToolCall) -> Answer:
            return turnlog.at_most_once(
                log, call, lambda: runs.append(call.id) or call.id, idempotency="destructive"
            )

        with ThreadPoolExecutor(4) as pool:
            return list(pool.map(one, calls))

    store = JSONLStore(tmp_path)
    with turnlog.open(store, "s1", engine_run=RUN) as log:
        log.begin_turn()
        log.user("charge them all")
        log.begin_step()
        log.assistant("", tool_calls=calls)
        first = guard_all(log)
    with turnlog.open(store, "s1", engine_run=RUN, replay=False) as log:
        again = guard_all(log)
    assert sorted(runs) == sorted(c.id for c in calls)
    assert [a.content for a in again] == [a.content for a in first] == [c.id for c in calls]
    assert all(a.ran for a in first) and not any(a.ran for a in again)


def test_a_second_guard_of_a_running_call_is_refused_and_the_body_result_kept(
    tmp_path: Path,
) -> None:
    """Another thread (or the body itself) guarding the same call while its
    body runs here: no crash made the dispatch unanswered, so no R1 is
    written over the body, whose real result is what the log keeps."""
    import threading

    started, release = threading.Event(), threading.Event()
    second: list[BaseException] = []

    def body() -> str:
        started.set()
        release.wait(10)
        try:  # the body guarding its own call
            turnlog.at_most_once(log, CALL, lambda: "nested", idempotency="destructive")
        except UsageError as exc:
            second.append(exc)
        return "charged"

    with engine_session(JSONLStore(tmp_path)) as log:
        first: list[Answer] = []
        runner = threading.Thread(
            target=lambda: first.append(
                turnlog.at_most_once(log, CALL, body, idempotency="destructive")
            )
        )
        runner.start()
        assert started.wait(10)
        with pytest.raises(UsageError, match="already running under at_most_once"):
            turnlog.at_most_once(log, CALL, lambda: "again", idempotency="destructive")
        release.set()
        runner.join(10)
        assert [a.content for a in first] == ["charged"] and first[0].ran
        assert len(second) == 1
        # Once the body returned, the call's recorded answer comes back.
        again = turnlog.at_most_once(log, CALL, lambda: "again", idempotency="destructive")
        assert (again.content, again.ran) == ("charged", False)
        results = [e.data for e in log.store.iter_events("s1") if e.type == "tool_result"]
        assert [(r.content, r.rule) for r in results] == [("charged", None)]  # type: ignore[union-attr]
