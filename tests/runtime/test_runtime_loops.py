"""Deadlines, budgets and background subagents in both reference loops, on JSONL
and SQLite: what each writes, what the model sees, and what recovery makes of it."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

import turnlog
from conftest import make_store
from entry_point import cli
from turnlog import events as ev
from turnlog.core.fold import Fold, Message
from turnlog.core.notices import NOTIFICATION_FRAME, SYSTEM_PROMPT_SNIPPET, NoticeStyle
from turnlog.events import ToolCall
from turnlog.providers import PROVIDERS, render, validate
from turnlog.runtime.async_loop import (
    aopen,
    arun_agent_turn,
    async_subagent_tool,
    async_task_wait_tool,
)
from turnlog.runtime.loop import (
    AgentSpec,
    Reply,
    Tool,
    run_agent_turn,
    subagent_tool,
    task_wait_tool,
)
from turnlog.stores import Store

LOOPS = ("sync", "async")
STORES = ("jsonl", "sqlite")


@pytest.fixture(params=STORES)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Store:
    return make_store(request.param, tmp_path)


def drive(
    loop: str, store: Store, agent: AgentSpec, text: str | None = "go", **options: Any
) -> Reply:
    """One turn of `agent` on session `s` with the sync or the asyncio loop."""
    if loop == "sync":
        with turnlog.open(store, "s") as log:
            return run_agent_turn(log, agent, text, **options)

    async def main() -> Reply:
        log = await aopen(store, "s")
        async with log:
            return await arun_agent_turn(log, agent, text, **options)

    return asyncio.run(main())


def events_of(store: Store, session_id: str = "s") -> list[ev.Event]:
    return list(store.iter_events(session_id))


def results(events: Sequence[ev.Event]) -> dict[str, ev.Event]:
    return {e.data.call_id: e for e in events if isinstance(e.data, ev.ToolResult)}


def turn_ends(events: Sequence[ev.Event]) -> list[str]:
    return [e.data.reason for e in events if isinstance(e.data, ev.TurnEnd)]


def assert_valid(events: Sequence[ev.Event]) -> None:
    messages = Fold(events).state.messages
    for provider in PROVIDERS:
        assert validate(provider, render(provider, messages)) == [], provider


def asks(*calls: tuple[str, dict[str, Any]]) -> Callable[[Sequence[Message]], Reply]:
    """A model that asks for `calls` once, then answers with the tool texts it saw."""

    def model(messages: Sequence[Message]) -> Reply:
        if not any(m.role == "assistant" for m in messages):
            return Reply(
                tool_calls=tuple(
                    ToolCall(id=f"c{k}", name=name, arguments=arguments)
                    for k, (name, arguments) in enumerate(calls)
                )
            )
        texts = [ev.content_text(m.content) for m in messages if m.role == "tool"]
        return Reply(content=" | ".join(texts))

    return model


# -- deadlines ------------------------------------------------------------------------


@pytest.mark.parametrize("loop", LOOPS)
def test_a_call_past_its_deadline_is_answered_unknown_and_the_run_goes_on(
    loop: str, store: Store
) -> None:
    finished = threading.Event()

    def slow() -> str:
        time.sleep(0.5)
        finished.set()
        return "slow output"

    agent = AgentSpec(
        model=asks(("slow", {}), ("fast", {})),
        tools={"slow": Tool(run=slow, timeout_s=0.1), "fast": Tool(run=lambda: "fast output")},
    )
    started = time.monotonic()
    reply = drive(loop, store, agent)
    assert time.monotonic() - started < 0.45, "the loop waited past the deadline"
    found = results(events_of(store))
    slow_result = found["c0"]
    assert slow_result.origin == "deadline" and slow_result.data.rule == "D1"  # type: ignore[union-attr]
    assert slow_result.data.risk == "tool_outcome_unknown"  # type: ignore[union-attr]
    assert "deadline of 0.1 s" in ev.content_text(slow_result.data.content)  # type: ignore[union-attr]
    if loop == "sync":
        # The step's next call was never dispatched: not run, a live claim.
        assert found["c1"].origin == "deadline" and found["c1"].data.rule == "D2"  # type: ignore[union-attr]
        assert "exceeded its deadline, so this one was not dispatched" in ev.content_text(
            reply.content
        )
    else:
        # The asyncio loop dispatched both at once: the fast one answered.
        assert ev.content_text(found["c1"].data.content) == "fast output"  # type: ignore[union-attr]
    # The model saw the results and answered: the turn completed.
    assert "did not finish within its deadline" in ev.content_text(reply.content)
    assert turn_ends(events_of(store)) == ["complete"]
    dispatch = next(e.data for e in events_of(store) if isinstance(e.data, ev.ToolDispatch))
    assert dispatch.timeout_s == 0.1  # type: ignore[union-attr]
    assert_valid(events_of(store))
    # The runaway thread finished after all; with the log closed, its output
    # could not be recorded, and it was never delivered as the answer.
    assert finished.wait(2)
    assert ev.content_text(results(events_of(store))["c0"].data.content) != "slow output"  # type: ignore[union-attr]


@pytest.mark.parametrize("loop", LOOPS)
def test_a_late_output_is_recorded_never_delivered(loop: str, store: Store) -> None:
    def slow() -> str:
        time.sleep(0.3)
        return "late output"

    agent = AgentSpec(model=asks(("slow", {})), tools={"slow": Tool(run=slow)}, timeout_s=0.05)
    if loop == "sync":
        with turnlog.open(store, "s", create=True) as log:
            run_agent_turn(log, agent, "go")
            time.sleep(0.6)
    else:

        async def main() -> None:
            async with await aopen(store, "s", create=True) as log:
                await arun_agent_turn(log, agent, "go")
                await asyncio.sleep(0.6)

        asyncio.run(main())
    events = events_of(store)
    late = [e for e in events if e.type == "x_turnlog_late_result"]
    assert len(late) == 1 and late[0].data.fields["content"] == "late output"  # type: ignore[union-attr]
    assert all("late output" not in ev.content_text(m.content) for m in Fold(events).state.messages)
    where = store.location("s")
    if where is not None and where.endswith(".jsonl"):
        code, out, _ = cli("show", where)
        assert code == 0
        assert "deadline 0.05 s" in out and "D1" in out
        assert "after its deadline, recorded, not delivered" in out


def test_an_async_tool_is_cancelled_at_its_deadline(store: Store) -> None:
    cancelled = threading.Event()

    async def hang() -> str:
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "never"

    agent = AgentSpec(model=asks(("hang", {})), tools={"hang": Tool(run=hang, timeout_s=0.1)})
    drive("async", store, agent)
    assert cancelled.is_set()
    assert results(events_of(store))["c0"].data.rule == "D1"  # type: ignore[union-attr]


def test_results_of_deadlines_and_budgets_keep_r2_and_r3_alive() -> None:
    # A turn holding a live "not run" result (no dispatch before it) still
    # dispatches ahead: the fold must not take it for a writer that does not.
    events = [
        ev.Event(seq=0, data=ev.Session(session_id="s")),
        ev.Event(seq=1, data=ev.TurnStart(turn=1)),
        ev.Event(seq=2, data=ev.StepStart(turn=1, step=1)),
        ev.Event(
            seq=3,
            data=ev.AssistantMessage(
                tool_calls=[ToolCall(id="a", name="t"), ToolCall(id="b", name="t")]
            ),
        ),
        ev.Event(seq=4, data=ev.ToolDispatch(call_id="a", name="t", timeout_s=1)),
        ev.Event(seq=5, data=ev.ToolResult(call_id="b", rule="B1"), origin="budget"),
        ev.Event(seq=6, data=ev.StepEnd(turn=1, step=1, outcome="ok")),
        ev.Event(seq=7, data=ev.StepStart(turn=1, step=2)),
        ev.Event(seq=8, data=ev.AssistantMessage(tool_calls=[ToolCall(id="c", name="t")])),
    ]
    for origin in ("budget", "deadline"):
        events[5] = ev.Event(seq=5, data=events[5].data, origin=origin)
        owed = {o.call_id: o.rule for o in turnlog.verdict(events).owed}
        # The crash decision table is unchanged: a's dispatch is R1, c is R2.
        assert owed == {"a": "R1", "c": "R2"}


# -- budgets --------------------------------------------------------------------------


@pytest.mark.parametrize("loop", LOOPS)
def test_a_spent_tool_call_budget_answers_the_rest_not_run(loop: str, store: Store) -> None:
    ran: list[int] = []

    def work(n: int) -> str:
        ran.append(n)
        return f"worked {n}"

    agent = AgentSpec(
        model=asks(("work", {"n": 1}), ("work", {"n": 2}), ("work", {"n": 3})),
        tools={"work": Tool(run=work)},
        max_tool_calls=2,
    )
    drive(loop, store, agent)
    events = events_of(store)
    assert sorted(ran) == [1, 2]
    spent = results(events)["c2"]
    assert spent.origin == "budget" and spent.data.rule == "B1"  # type: ignore[union-attr]
    assert spent.data.risk == "tool_not_started"  # type: ignore[union-attr]
    assert "budget of 2 tool calls was spent" in ev.content_text(spent.data.content)  # type: ignore[union-attr]
    assert not any(isinstance(e.data, ev.ToolDispatch) and e.data.call_id == "c2" for e in events)
    assert turn_ends(events) == ["budget_exhausted"]
    assert_valid(events)


@pytest.mark.parametrize("loop", LOOPS)
def test_a_spent_step_budget_ends_the_turn_budget_exhausted(loop: str, store: Store) -> None:
    def model(messages: Sequence[Message]) -> Reply:
        return Reply(tool_calls=(ToolCall(id=f"c{len(messages)}", name="again"),))

    agent = AgentSpec(model=model, tools={"again": Tool(run=lambda: "ok")}, max_steps=3)
    drive(loop, store, agent)
    events = events_of(store)
    assert sum(isinstance(e.data, ev.StepStart) for e in events) == 3
    assert turn_ends(events) == ["budget_exhausted"]
    assert_valid(events)


@pytest.mark.parametrize("loop", LOOPS)
def test_a_spent_wall_time_budget_dispatches_nothing_more(loop: str, store: Store) -> None:
    def work() -> str:
        time.sleep(0.15)
        return "worked"

    agent = AgentSpec(
        model=asks(("work", {}), ("work2", {})),
        tools={"work": Tool(run=work), "work2": Tool(run=lambda: "never")},
        max_turn_s=0.1,
    )
    drive(loop, store, agent)
    events = events_of(store)
    assert turn_ends(events) == ["budget_exhausted"]
    if loop == "sync":
        assert results(events)["c1"].data.rule == "B1"  # type: ignore[union-attr]
        assert "0.1 s of wall time" in ev.content_text(results(events)["c1"].data.content)  # type: ignore[union-attr]
    assert_valid(events)


def test_budgets_and_deadlines_refuse_impossible_values(tmp_path: Path) -> None:
    with pytest.raises(turnlog.TurnlogError):
        turnlog.budgets.Budget(max_steps=0)
    with pytest.raises(turnlog.TurnlogError):
        turnlog.budgets.Budget(max_steps=1, max_turn_s=0)
    with pytest.raises(turnlog.TurnlogError, match="positive number of seconds"):
        Tool(run=lambda: "x", timeout_s=0)
    # Refused where it is given, not by the first run.
    with pytest.raises(turnlog.TurnlogError):
        AgentSpec(model=asks(), tools={}, timeout_s=-1)
    agent = AgentSpec(model=asks(), tools={})
    with pytest.raises(turnlog.TurnlogError):
        drive("sync", make_store("jsonl", tmp_path), agent, timeout_s=-1)


def test_only_recovery_writes_interrupted(tmp_path: Path) -> None:
    with (
        turnlog.open(tmp_path / "s.jsonl", create=True) as log,
        pytest.raises(turnlog.WriteOrderError),
        log.turn() as turn,
    ):
        turn.reason = "interrupted"


# -- background subagents ---------------------------------------------------------------


def child_agent(loop: str = "sync", gate: threading.Event | None = None) -> AgentSpec:
    """A child that answers after a short pause, or once `gate` is set (an
    asyncio child polls for it, so it never blocks the event loop)."""

    def answer(messages: Sequence[Message]) -> Reply:
        return Reply(content=f"child did {ev.content_text(messages[0].content)}")

    def model(messages: Sequence[Message]) -> Reply:
        if gate is None:
            time.sleep(0.05)
        elif not gate.wait(timeout=10):
            raise AssertionError("the test never released the child")
        return answer(messages)

    async def amodel(messages: Sequence[Message]) -> Reply:
        for _ in range(1000):
            if gate is None or gate.is_set():
                return answer(messages)
            await asyncio.sleep(0.01)
        raise AssertionError("the test never released the child")

    return AgentSpec(model=amodel if loop == "async" and gate is not None else model, tools={})


def parent_agent(loop: str, *, join: bool, gate: threading.Event | None = None) -> AgentSpec:
    make = subagent_tool if loop == "sync" else async_subagent_tool
    wait = task_wait_tool if loop == "sync" else async_task_wait_tool

    def model(messages: Sequence[Message]) -> Reply:
        if any(m.injected == "background" for m in messages) or any(
            m.role == "tool" and "Its report" in ev.content_text(m.content) for m in messages
        ):
            return Reply(content="parent done")
        asked = [m for m in messages if m.role == "assistant" and m.tool_calls]
        if not asked:
            return Reply(tool_calls=(ToolCall(id="sp", name="spawn", arguments={"task": "x"}),))
        if join and len(asked) == 1:
            # The child, held until now, may answer once the join is asked
            # for: its report cannot reach a step boundary before the join.
            if gate is not None:
                gate.set()
            return Reply(
                tool_calls=(
                    ToolCall(id="w", name="task_wait", arguments={"agent_id": "worker-sp"}),
                )
            )
        return Reply(content="waiting")

    return AgentSpec(
        model=model,
        tools={
            "spawn": make("worker", child_agent(loop, gate), background=True),
            "task_wait": wait(),
        },
    )


@pytest.mark.parametrize("loop", LOOPS)
def test_a_background_child_is_acknowledged_then_delivered_once(loop: str, store: Store) -> None:
    reply = drive(loop, store, parent_agent(loop, join=False))
    assert reply.content == "parent done"
    events = events_of(store)
    ack = results(events)["sp"]
    assert ack.data.background and "not its answer" in ev.content_text(ack.data.content)  # type: ignore[union-attr]
    deliveries = [e for e in events if isinstance(e.data, ev.UserMessage) and e.data.delivers]
    assert len(deliveries) == 1
    delivery = deliveries[0]
    assert delivery.origin == "background" and delivery.data.injected == "background"  # type: ignore[union-attr]
    text = ev.content_text(delivery.data.content)  # type: ignore[union-attr]
    assert text.startswith("[turnlog: automated notification (background)")
    assert "not a message from the user" in text and "child did x" in text
    # Delivered at a step boundary: the step before it ended, the next began after.
    before, after = events[delivery.seq - 1], events[delivery.seq + 1]
    assert isinstance(before.data, ev.StepEnd | ev.SubagentSettled)
    assert isinstance(after.data, ev.StepStart)
    state = Fold(events).state
    assert [c.delivered for c in state.background] == [delivery.seq]
    assert Fold(events_of(store, "s.agents/worker-sp")).state.messages[-1].content == "child did x"
    assert_valid(events)


@pytest.mark.parametrize("loop", LOOPS)
def test_task_wait_joins_a_background_child_and_nothing_is_injected(
    loop: str, store: Store
) -> None:
    reply = drive(loop, store, parent_agent(loop, join=True, gate=threading.Event()))
    assert reply.content == "parent done"
    events = events_of(store)
    joined = results(events)["w"]
    assert joined.data.delivers == "worker-sp"  # type: ignore[union-attr]
    assert "child did x" in ev.content_text(joined.data.content)  # type: ignore[union-attr]
    assert not any(isinstance(e.data, ev.UserMessage) and e.data.delivers for e in events)
    assert_valid(events)


@pytest.mark.parametrize("loop", LOOPS)
def test_a_child_left_running_reports_in_the_next_turn(loop: str, store: Store) -> None:
    # The child is held until the parent's first turn has ended and its
    # handle closed, so its end cannot be recorded on that handle.
    gate = threading.Event()
    agent = parent_agent(loop, join=False, gate=gate)
    first = drive(loop, store, agent, await_background=False)
    assert first.content == "waiting"
    gate.set()
    # A sync child finishes in its thread; an asyncio child was cancelled
    # when its event loop ended (and must have released its session).
    wait_until_released(store, "s.agents/worker-sp")
    assert drive(loop, store, agent, text="any news?").content == "parent done"
    events = events_of(store)
    deliveries = [e for e in events if isinstance(e.data, ev.UserMessage) and e.data.delivers]
    assert len(deliveries) == 1
    assert "child did x" in ev.content_text(deliveries[0].data.content)  # type: ignore[union-attr]
    assert_valid(events)
    child_events = events_of(store, "s.agents/worker-sp")
    revived = [e for e in child_events if isinstance(e.data, ev.RunRevived)]
    # The asyncio child, cancelled mid-turn, is revived as itself; the sync
    # one finished and is settled from its own log, not run again.
    assert len(revived) == (1 if loop == "async" else 0)
    answers = [e for e in child_events if isinstance(e.data, ev.AssistantMessage)]
    assert len(answers) == 1


def wait_until_released(store: Store, session_id: str, timeout_s: float = 10.0) -> None:
    """Wait until no handle of this process holds `session_id`."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            with turnlog.open(store, session_id):
                return
        except turnlog.SessionLockedError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.01)


def spawned_without_report(store: Store, *, child: str | None) -> None:
    """A parent whose background child was spawned and acknowledged by a
    process that is gone; the child's session holds `child` as its answer
    (None: the child's session was never created)."""
    with turnlog.open(store, "s", create=True) as log:
        log.user("go")
        with log.turn(), log.step():
            log.assistant("", [ToolCall(id="sp", name="spawn", arguments={"task": "x"})])
            log.append(
                ev.ToolDispatch(call_id="sp", name="spawn", join="worker-sp", background=True)
            )
            log.append(
                ev.SubagentSpawned(
                    agent_id="worker-sp", agent_type="worker", call_id="sp", background=True
                )
            )
            log.append(ev.ToolResult(call_id="sp", name="spawn", content="ack", background=True))
    if child is not None:
        with turnlog.open(
            store, "s.agents/worker-sp", create=True, spawned_by=ev.SpawnedBy(session_id="s")
        ) as child_log:
            child_log.user("x")
            with child_log.turn(), child_log.step():
                child_log.assistant(child)


@pytest.mark.parametrize("loop", LOOPS)
def test_a_finished_child_reports_from_its_own_log_once(loop: str, store: Store) -> None:
    spawned_without_report(store, child="report from the log")
    agent = parent_agent(loop, join=False)
    drive(loop, store, agent, text=None)  # type: ignore[arg-type]
    drive(loop, store, agent, text="again")
    events = events_of(store)
    deliveries = [e for e in events if isinstance(e.data, ev.UserMessage) and e.data.delivers]
    assert len(deliveries) == 1
    assert "report from the log" in ev.content_text(deliveries[0].data.content)  # type: ignore[union-attr]


@pytest.mark.parametrize("loop", LOOPS)
def test_a_child_that_cannot_be_revived_is_reported_lost(loop: str, store: Store) -> None:
    spawned_without_report(store, child=None)
    drive(loop, store, parent_agent(loop, join=False), text="go on")
    events = events_of(store)
    deliveries = [e for e in events if isinstance(e.data, ev.UserMessage) and e.data.delivers]
    assert len(deliveries) == 1
    text = ev.content_text(deliveries[0].data.content)  # type: ignore[union-attr]
    assert "was lost" in text and "check the state" in text
    assert Fold(events).state.background[0].settled.outcome == "lost"  # type: ignore[union-attr]


# -- what the model is told -----------------------------------------------------------


def crashed(store: Store) -> None:
    with turnlog.open(store, "s", create=True) as log:
        log.user("go")
        log.append(log.next_turn_start())
        log.append(ev.StepStart(turn=1, step=1))
        log.assistant("", [ToolCall(id="r", name="read")])
        log.append(ev.ToolDispatch(call_id="r", name="read", idempotency="read_only"))


def test_the_revival_notice_is_framed_as_an_automated_notification(store: Store) -> None:
    crashed(store)
    with turnlog.open(store, "s") as log:
        revival = turnlog.revive(log)
    notice = ev.content_text(revival.appended[-1].data.content)  # type: ignore[union-attr]
    assert notice.startswith("[turnlog: automated notification (revival) from the system")
    assert "not a message from the user" in notice
    assert NOTIFICATION_FRAME.split(" (", 1)[0] in SYSTEM_PROMPT_SNIPPET
    # The in-flight read-only call is answered like any other: not retried.
    result = ev.content_text(revival.appended[0].data.content)  # type: ignore[union-attr]
    assert "It has NOT been retried" in result and "safe" not in result


def test_the_notice_frame_is_configurable(store: Store) -> None:
    crashed(store)
    style = NoticeStyle(frame="<system-notice kind={kind}>{body}</system-notice>")
    with turnlog.open(store, "s") as log:
        revival = turnlog.revive(log, style=style)
    notice = ev.content_text(revival.appended[-1].data.content)  # type: ignore[union-attr]
    assert notice.startswith("<system-notice kind=revival>The previous process")
    assert "(revival 1)" in notice


def test_show_and_every_export_understand_the_runtime_events(tmp_path: Path) -> None:
    store = make_store("jsonl", tmp_path)

    def hang() -> str:
        time.sleep(0.5)
        return "late"

    asked_by_request = {
        "go": [("hang", {}), ("next", {})],
        "again": [("work", {}), ("work", {})],
        "spawn": [("spawn", {"task": "x"})],
    }

    def model(messages: Sequence[Message]) -> Reply:
        if any(m.injected == "background" for m in messages[-2:]):
            return Reply(content="reported")
        last = messages[-1]
        if last.role == "user":
            calls = asked_by_request[ev.content_text(last.content)]
            return Reply(
                tool_calls=tuple(
                    ToolCall(id=f"c{last.seq}_{k}" if n != "spawn" else "sp", name=n, arguments=a)
                    for k, (n, a) in enumerate(calls)
                )
            )
        return Reply(content="noted")

    tools = {
        **parent_agent("sync", join=False).tools,
        "hang": Tool(run=hang, timeout_s=0.05),
        "next": Tool(run=lambda: "never"),
        "work": Tool(run=lambda: "worked"),
    }
    agent = AgentSpec(model=model, tools=tools)
    drive("sync", store, agent)
    drive("sync", store, agent, text="again", max_tool_calls=1)
    drive("sync", store, agent, text="spawn")
    path = store.location("s")
    assert path is not None
    for provider in ("anthropic", "openai-chat", "openai-responses", "gemini"):
        code, _, err = cli("export", path, "--to", provider, "--validate")
        assert code == 0, (provider, err)
    code, out, _ = cli("show", path)
    assert code == 0
    for shown in (
        "deadline 0.05 s",
        "tool_outcome_unknown D1",
        "tool_not_started D2",
        "tool_not_started B1",
        "end: budget_exhausted",
        "[background: acknowledgement, not the answer]",
        "(report of worker-sp)",
        "<deadline>",
        "<budget>",
        "<background>",
    ):
        assert shown in out, shown


def test_the_notice_role_is_recorded_and_every_export_stays_valid(store: Store) -> None:
    crashed(store)
    with pytest.raises(turnlog.TurnlogError):
        NoticeStyle(role="assistant")
    with turnlog.open(store, "s") as log:
        turnlog.revive(log, style=NoticeStyle(role="system"))
        notice = log.messages[-1]
    assert notice.role == "user" and notice.injected == "revival"
    assert notice.render_as == "system"
    assert_valid(events_of(store))
    # Where a provider has a role for the system inside the conversation, the
    # notice takes it; elsewhere it stays a user turn.
    messages = Fold(events_of(store)).state.messages
    from turnlog import providers

    chat = providers.render("openai-chat", messages)["messages"]
    responses = providers.render("openai-responses", messages)["input"]
    assert chat[-1]["role"] == "developer" and responses[-1]["role"] == "developer"
    assert providers.render("anthropic", messages)["messages"][-1]["role"] == "user"
    # The loop that carries on after it does not take it for a new request.
    with turnlog.open(store, "s") as log:
        assert turnlog.revive(log).reason == "already_revived"


@pytest.fixture(params=(*STORES, "postgres"))
def any_store(request: pytest.FixtureRequest, tmp_path: Path) -> Store:
    """Every backend, PostgreSQL's advisory lock included: what a close releases."""
    return make_store(request.param, tmp_path, request)


def test_a_cancelled_close_still_releases_the_session(any_store: Store) -> None:
    """An event loop that ends cancels its tasks, a child's close among
    them: the close, queued behind a slow write, must still release the lock."""
    store = any_store
    turnlog.open(store, "c", create=True).close()

    async def main() -> None:
        log = await aopen(store, "c")
        busy = asyncio.ensure_future(log.call(time.sleep, 0.2))
        closing = asyncio.ensure_future(log.close())
        await asyncio.sleep(0.01)
        closing.cancel()
        with pytest.raises(asyncio.CancelledError):
            await closing
        await busy

    asyncio.run(main())
    wait_until_released(store, "c", timeout_s=2.0)


def test_a_second_close_waits_for_what_was_queued_before_the_first(any_store: Store) -> None:
    store = any_store
    turnlog.open(store, "c", create=True).close()

    async def main() -> None:
        log = await aopen(store, "c")
        busy = asyncio.ensure_future(log.call(time.sleep, 0.2))
        queued = asyncio.ensure_future(log.user("queued before close"))
        await asyncio.sleep(0.01)
        first, second = asyncio.ensure_future(log.close()), asyncio.ensure_future(log.close())
        await asyncio.gather(busy, queued, first, second)
        with pytest.raises(turnlog.UsageError, match="closed"):
            await log.user("after close")

    asyncio.run(main())
    assert [e.data for e in events_of(store, "c")][1:] == [
        ev.UserMessage(content="queued before close")
    ]
    wait_until_released(store, "c", timeout_s=2.0)


@pytest.mark.parametrize("loop", LOOPS)
def test_a_turn_with_no_input_on_a_finished_session_is_refused(loop: str, store: Store) -> None:
    """Nothing for the model to answer: it would answer itself."""
    answered: list[int] = []

    def model(messages: Sequence[Message]) -> Reply:
        answered.append(len(messages))
        return Reply(content="done")

    agent = AgentSpec(model=model, tools={})
    drive(loop, store, agent, "hello")
    before = events_of(store)
    with pytest.raises(turnlog.UsageError, match="nothing to answer") as refused:
        drive(loop, store, agent, None)
    assert "what the user says next" in (refused.value.hint or "")
    assert events_of(store) == before and answered == [1]
