"""The runtime rules at their edges, in both reference loops: a tool's own
`TimeoutError` is not the loop's deadline, a background report is delivered
once however many joins ask for it, the turn's time bounds the wait for
reports, a join in the step that spawned its child works, a tool that
swallows its cancellation does not hold the loop, and the bounds a writer
accepts are the bounds its reader reads."""

from __future__ import annotations

import asyncio
import math
import threading
import time
from collections.abc import Callable, Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any

import msgspec
import pytest

import turnlog
from conftest import make_store
from entry_point import cli
from turnlog import events as ev
from turnlog.core.fold import Fold, Message
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
    run_turn,
    subagent_tool,
    task_wait_tool,
)
from turnlog.stores import Store

LOOPS = ("sync", "async")


@pytest.fixture(params=("jsonl", "sqlite"))
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Store:
    return make_store(request.param, tmp_path)


def drive(loop: str, store: Store, agent: AgentSpec, *turns: str, **options: Any) -> list[Reply]:
    """Turns of `agent` on session `s`, one handle for all, with either loop;
    `settle_s` seconds are waited on that handle after the last turn."""
    settle_s = options.pop("settle_s", 0.0)
    if loop == "sync":
        with turnlog.open(store, "s", create=True) as log:
            replies = [run_agent_turn(log, agent, text, **options) for text in turns]
            time.sleep(settle_s)
            return replies

    async def main() -> list[Reply]:
        async with aopen(store, "s", create=True) as log:
            replies = [await arun_agent_turn(log, agent, text, **options) for text in turns]
            await asyncio.sleep(settle_s)
            return replies

    return asyncio.run(main())


def events_of(store: Store) -> list[ev.Event]:
    return list(store.iter_events("s"))


def results(events: Sequence[ev.Event]) -> dict[str, ev.ToolResult]:
    return {e.data.call_id: e.data for e in events if isinstance(e.data, ev.ToolResult)}


def origins(events: Sequence[ev.Event]) -> dict[str, str | None]:
    return {e.data.call_id: e.origin for e in events if isinstance(e.data, ev.ToolResult)}


def turn_ends(events: Sequence[ev.Event]) -> list[str]:
    return [e.data.reason for e in events if isinstance(e.data, ev.TurnEnd)]


def deliveries(events: Sequence[ev.Event]) -> list[ev.Event]:
    return [
        e
        for e in events
        if isinstance(e.data, ev.UserMessage | ev.ToolResult) and e.data.delivers is not None
    ]


def assert_valid(events: Sequence[ev.Event]) -> None:
    messages = Fold(events).state.messages
    for provider in PROVIDERS:
        assert validate(provider, render(provider, messages)) == [], provider


def scripted(*steps: tuple[tuple[str, dict[str, Any]], ...]) -> Callable[..., Reply]:
    """A model that asks for each step's calls in turn (ids `c<step><k>`),
    then answers with the tool texts it saw."""

    def model(messages: Sequence[Message]) -> Reply:
        asked = sum(1 for m in messages if m.role == "assistant" and m.tool_calls)
        if asked < len(steps):
            calls = steps[asked]
            return Reply(
                tool_calls=tuple(
                    ToolCall(id=f"c{asked}{k}", name=name, arguments=arguments)
                    for k, (name, arguments) in enumerate(calls)
                )
            )
        texts = [ev.content_text(m.content) for m in messages if m.role == "tool"]
        return Reply(content=" | ".join(texts))

    return model


# -- 1. a tool's own TimeoutError is an ordinary error ----------------------------------


def upstream_timeout() -> str:
    raise TimeoutError("upstream socket timed out")


async def async_upstream_timeout() -> str:
    await asyncio.sleep(0.01)
    raise TimeoutError("upstream socket timed out")


TIMEOUT_CASES = [
    (loop, kind, deadline)
    for loop in LOOPS
    for kind in ("plain", "coroutine")
    for deadline in (None, 5.0)
    if not (loop == "sync" and kind == "coroutine")
]


@pytest.mark.parametrize(("loop", "kind", "deadline"), TIMEOUT_CASES)
def test_a_tools_own_timeout_error_is_an_ordinary_error_result(
    loop: str, kind: str, deadline: float | None, store: Store
) -> None:
    run = upstream_timeout if kind == "plain" else async_upstream_timeout
    agent = AgentSpec(
        model=scripted((("fetch", {}),)), tools={"fetch": Tool(run=run, timeout_s=deadline)}
    )
    started = time.monotonic()
    (reply,) = drive(loop, store, agent, "go")
    assert time.monotonic() - started < 2
    events = events_of(store)
    result = results(events)["c00"]
    # Only the loop's own deadline answers D1: this is the tool's failure.
    assert result.rule is None and result.risk is None and result.is_error
    assert origins(events)["c00"] is None
    assert ev.content_text(result.content) == "TimeoutError: upstream socket timed out"
    assert "deadline" not in ev.content_text(reply.content)
    assert turn_ends(events) == ["complete"]
    assert_valid(events)


# -- 2. and 5. joins: once, and in the step that spawned the child ----------------------


def child_agent(seconds: float = 0.05) -> AgentSpec:
    """A child that takes `seconds` to answer, on a thread (sync loop) or
    without blocking its event loop (asyncio loop: the model is a coroutine)."""

    def answer(messages: Sequence[Message]) -> Reply:
        return Reply(content=f"child did {ev.content_text(messages[0].content)}")

    def model(messages: Sequence[Message]) -> Any:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            time.sleep(seconds)
            return answer(messages)

        async def later() -> Reply:
            await asyncio.sleep(seconds)
            return answer(messages)

        return later()

    return AgentSpec(model=model, tools={})


def background_tools(loop: str, child: AgentSpec, wait_s: float | None = None) -> dict[str, Tool]:
    spawn = subagent_tool if loop == "sync" else async_subagent_tool
    wait = (task_wait_tool if loop == "sync" else async_task_wait_tool)()
    if wait_s is not None:
        wait = msgspec.structs.replace(wait, timeout_s=wait_s)
    return {"spawn": spawn("worker", child, background=True), "task_wait": wait}


SPAWN = ("spawn", {"task": "x"})
WAIT = ("task_wait", {"agent_id": "worker-c00"})


@pytest.mark.parametrize("loop", LOOPS)
def test_two_joins_in_one_step_deliver_the_report_once(loop: str, store: Store) -> None:
    agent = AgentSpec(
        model=scripted((SPAWN,), (WAIT, WAIT)), tools=background_tools(loop, child_agent(0.2))
    )
    (reply,) = drive(loop, store, agent, "go")
    events = events_of(store)
    found = results(events)
    delivered = [e.data.call_id for e in deliveries(events)]  # type: ignore[union-attr]
    # The sync loop runs the joins in order; the asyncio loop runs them at
    # once, and either may be the one that delivers: exactly one does.
    assert delivered == ["c10"] if loop == "sync" else delivered in (["c10"], ["c11"])
    (joined,) = delivered
    other = "c11" if joined == "c10" else "c10"
    assert found[joined].delivers == "worker-c00"
    assert "child did x" in ev.content_text(found[joined].content)
    second = ev.content_text(found[other].content)
    assert found[other].delivers is None and not found[other].is_error
    assert "already delivered" in second and "child did x" not in second
    assert ev.content_text(reply.content).count("child did x") == 1
    assert_valid(events)


@pytest.mark.parametrize("loop", LOOPS)
def test_a_join_in_the_step_that_spawned_its_child_waits_for_it(loop: str, store: Store) -> None:
    # The model lists the spawn first: the join waits for the child it starts.
    agent = AgentSpec(model=scripted((SPAWN, WAIT)), tools=background_tools(loop, child_agent(0.2)))
    (reply,) = drive(loop, store, agent, "go")
    events = events_of(store)
    joined = results(events)["c01"]
    assert joined.delivers == "worker-c00" and not joined.is_error
    assert "child did x" in ev.content_text(joined.content)
    assert "not running" not in ev.content_text(reply.content)
    assert [e.data.call_id for e in deliveries(events)] == ["c01"]  # type: ignore[union-attr]
    assert turn_ends(events) == ["complete"]
    assert_valid(events)


@pytest.mark.parametrize("loop", LOOPS)
def test_a_join_listed_before_the_spawn_is_refused_alike(loop: str, store: Store) -> None:
    # The sync loop runs a step's calls in order: a join before the spawn
    # finds no child. The asyncio loop says the same, then delivers once.
    wait = ("task_wait", {"agent_id": "worker-c01"})
    agent = AgentSpec(
        model=scripted((wait, SPAWN)), tools=background_tools(loop, child_agent(0.05))
    )
    drive(loop, store, agent, "go")
    events = events_of(store)
    refused = results(events)["c00"]
    assert refused.is_error and "no background subagent 'worker-c01'" in ev.content_text(
        refused.content
    )
    assert len([e for e in deliveries(events) if e.data.delivers == "worker-c01"]) == 1  # type: ignore[union-attr]
    assert_valid(events)


# -- 3. the turn's time bounds the wait for reports ------------------------------------


@pytest.mark.parametrize("loop", LOOPS)
def test_max_turn_s_bounds_the_wait_for_background_reports(loop: str, store: Store) -> None:
    def lead(messages: Sequence[Message]) -> Reply:
        if any(m.injected == "background" for m in messages):
            return Reply(content="read the report")
        if not any(m.role == "assistant" for m in messages):
            return Reply(tool_calls=(ToolCall(id="c00", name="spawn", arguments={"task": "x"}),))
        return Reply(content="answered at once")

    agent = AgentSpec(model=lead, tools=background_tools(loop, child_agent(1.0)), max_turn_s=0.3)
    started = time.monotonic()
    if loop == "sync":
        with turnlog.open(store, "s", create=True) as log:
            first = run_agent_turn(log, agent, "go")
            took = time.monotonic() - started
            assert not deliveries(events_of(store)), "delivered in a turn that could not read it"
            time.sleep(1.2)
            second = run_agent_turn(log, agent, "any news?")
    else:

        async def main() -> tuple[Reply, float, Reply]:
            async with aopen(store, "s", create=True) as log:
                first = await arun_agent_turn(log, agent, "go")
                took = time.monotonic() - started
                assert not deliveries(events_of(store))
                await asyncio.sleep(1.2)
                return first, took, await arun_agent_turn(log, agent, "any news?")

        first, took, second = asyncio.run(main())
    assert took < 0.8, f"the turn waited {took:.2f} s past its {agent.max_turn_s} s"
    assert first.content == "answered at once"
    # The report came after the turn: delivered once, at the next turn's start.
    assert second.content == "read the report"
    events = events_of(store)
    assert turn_ends(events) == ["budget_exhausted", "complete"]
    (delivery,) = deliveries(events)
    second_start = [e.seq for e in events if isinstance(e.data, ev.TurnStart)][1]
    assert delivery.seq > second_start
    assert_valid(events)


@pytest.mark.parametrize("loop", LOOPS)
def test_a_turn_with_nothing_to_wait_for_completes_whatever_its_time(
    loop: str, store: Store
) -> None:
    def slow_model(messages: Sequence[Message]) -> Reply:
        time.sleep(0.15)
        return Reply(content="done")

    agent = AgentSpec(model=slow_model, tools={}, max_turn_s=0.1)
    drive(loop, store, agent, "go")
    assert turn_ends(events_of(store)) == ["complete"]


# -- 4. the bounds a writer accepts, its reader reads ----------------------------------


BAD_SECONDS = [True, False, 0, -1, math.nan, math.inf, -math.inf, "1"]


@pytest.mark.parametrize("value", BAD_SECONDS, ids=repr)
def test_a_deadline_must_be_a_positive_finite_number(value: Any) -> None:
    with pytest.raises(turnlog.UsageError) as refused:
        Tool(run=lambda: "x", timeout_s=value)
    assert refused.value.hint and "positive" in refused.value.hint
    for field in ("timeout_s", "max_turn_s"):
        with pytest.raises(turnlog.UsageError) as refused:
            AgentSpec(model=scripted(), tools={}, **{field: value})
        assert field in str(refused.value) and refused.value.hint


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("max_steps", 0),
        ("max_steps", -3),
        ("max_steps", True),
        ("max_steps", 2.0),
        ("max_steps", None),
        ("max_tool_calls", -1),
        ("max_tool_calls", True),
        ("max_tool_calls", 1.5),
    ],
    ids=repr,
)
def test_a_count_must_be_an_int_in_range(field: str, value: Any) -> None:
    with pytest.raises(turnlog.UsageError) as refused:
        AgentSpec(model=scripted(), tools={}, **{field: value})
    assert field in str(refused.value) and refused.value.hint


def test_the_run_refuses_what_the_spec_refuses(tmp_path: Path) -> None:
    with turnlog.open(tmp_path / "s.jsonl", create=True) as log:
        for options in (
            {"max_turn_s": math.nan},
            {"max_turn_s": True},
            {"timeout_s": math.inf},
            {"max_steps": 1.0},
            {"max_tool_calls": False},
        ):
            with pytest.raises(turnlog.UsageError):
                run_turn(log, scripted(), {}, **options)
        assert log.messages == ()


@pytest.mark.parametrize("loop", LOOPS)
def test_a_rational_deadline_is_stored_as_a_float_and_reads_back(loop: str, store: Store) -> None:
    tool = Tool(run=lambda: "fine", timeout_s=Fraction(1, 2))  # type: ignore[arg-type]
    assert tool.timeout_s == 0.5 and type(tool.timeout_s) is float
    agent = AgentSpec(
        model=scripted((("t", {}), ("u", {}))),
        tools={"t": tool, "u": Tool(run=lambda: "fine too")},
        timeout_s=2,  # an int is a number of seconds too
        max_turn_s=Fraction(30),  # type: ignore[arg-type]
        max_steps=4,
    )
    assert type(agent.timeout_s) is float and type(agent.max_turn_s) is float
    drive(loop, store, agent, "go")
    events = events_of(store)
    deadlines = {
        e.data.call_id: e.data.timeout_s for e in events if isinstance(e.data, ev.ToolDispatch)
    }
    assert deadlines == {"c00": 0.5, "c01": 2.0}
    assert turn_ends(events) == ["complete"]
    where = store.location("s")
    if where is not None and where.endswith(".jsonl"):
        for provider in ("anthropic", "openai-chat"):
            code, _, err = cli("export", where, "--to", provider, "--validate")
            assert code == 0, err


# -- 6. a tool that swallows its cancellation; a join past its deadline ----------------


def test_an_async_tool_that_swallows_cancellation_does_not_hold_the_loop(store: Store) -> None:
    async def stubborn() -> str:
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            await asyncio.sleep(0.6)  # cleans up at its own pace, then answers anyway
        return "stubborn output"

    agent = AgentSpec(
        model=scripted((("stubborn", {}),)), tools={"stubborn": Tool(run=stubborn, timeout_s=0.1)}
    )

    async def main() -> float:
        async with aopen(store, "s", create=True) as log:
            started = time.monotonic()
            await arun_agent_turn(log, agent, "go")
            took = time.monotonic() - started
            await asyncio.sleep(0.9)
            return took

    took = asyncio.run(main())
    assert took < 0.5, f"the loop waited {took:.2f} s on a 0.1 s deadline"
    events = events_of(store)
    assert results(events)["c00"].rule == "D1"
    late = [e.data for e in events if e.type == "x_turnlog_late_result"]
    assert [f.fields["content"] for f in late] == ["stubborn output"]  # type: ignore[union-attr]
    assert all(
        "stubborn output" not in ev.content_text(m.content) for m in Fold(events).state.messages
    )
    assert_valid(events)


def test_a_cancelled_async_tool_records_nothing_late(store: Store) -> None:
    async def polite() -> str:
        await asyncio.sleep(10)
        return "never"

    agent = AgentSpec(
        model=scripted((("polite", {}),)), tools={"polite": Tool(run=polite, timeout_s=0.05)}
    )
    drive("async", store, agent, "go", settle_s=0.2)
    events = events_of(store)
    assert results(events)["c00"].rule == "D1"
    assert not [e for e in events if e.type == "x_turnlog_late_result"]


@pytest.mark.parametrize("loop", LOOPS)
def test_a_join_past_its_deadline_says_what_became_of_the_report(loop: str, store: Store) -> None:
    agent = AgentSpec(
        model=scripted((SPAWN,), (WAIT,)),
        tools=background_tools(loop, child_agent(0.4), wait_s=0.1),
    )
    drive(loop, store, agent, "go", settle_s=0.5)
    events = events_of(store)
    assert results(events)["c10"].rule == "D1"
    # The report reached the model once, injected after the join gave up.
    (delivery,) = deliveries(events)
    assert isinstance(delivery.data, ev.UserMessage) and delivery.data.injected == "background"
    late = [e.data.fields for e in events if e.type == "x_turnlog_late_result"]  # type: ignore[union-attr]
    for fields in late:
        text = fields["content"]
        assert isinstance(text, str) and "not running in this process" not in text
        assert not fields["is_error"], text
    if loop == "sync":
        # The abandoned join's thread saw the report go out: its record says so
        # (or, had it seen the report first, holds the report itself).
        assert len(late) == 1
        assert "delivered" in late[0]["content"] or "child did x" in late[0]["content"]
    assert_valid(events)


# -- the late record of a join holds text, never a structure ----------------------------


def test_a_late_join_records_the_report_text() -> None:
    from turnlog.runtime.background import Delivered
    from turnlog.runtime.loop import record_late

    store = turnlog.MemoryStore()
    with turnlog.open(store, "s", create=True) as log:
        record_late(
            log, ToolCall(id="w", name="task_wait"), Delivered(content="r", delivers="a"), False
        )  # type: ignore[arg-type]
    (late,) = [e for e in store.iter_events("s") if e.type == "x_turnlog_late_result"]
    assert late.data.fields["content"] == "r"  # type: ignore[union-attr]


def test_a_join_that_sees_its_report_injected_says_so(tmp_path: Path) -> None:
    # The sync loop's join past its deadline waits on in its thread while the
    # loop injects the report: what the join then returns (recorded late)
    # says where the report went, not that the child is gone.
    from turnlog.runtime import background
    from turnlog.runtime.loop import join_background

    spawned = ev.SubagentSpawned(agent_id="w", agent_type="worker", call_id="sp", background=True)
    answers: list[object] = []
    with turnlog.open(tmp_path / "s.jsonl", create=True) as log:
        log.user("go")
        log.append(spawned)
        found = background.registry(log)
        found.running.add("w")
        with found.changed:
            joiner = threading.Thread(target=lambda: answers.append(join_background(log, "w")))
            joiner.start()
            time.sleep(0.3)  # the join has read the log and waits for this lock
            log.append(background.settled_record(spawned, "s.agents/w", "complete", "done"))
            (delivered,) = background.deliver_reports(log)
            found.running.discard("w")
            found.changed.notify_all()
        joiner.join(5)
    assert answers == [
        f"The report of w was delivered while this call waited (event {delivered.seq}), "
        "so it is not repeated here."
    ]


def test_a_cancelled_turn_takes_its_coroutine_tool_with_it(store: Store) -> None:
    # The loop no longer waits for a tool past its deadline, but a turn that
    # is itself cancelled still cancels the tool it runs, and records nothing
    # of it as late: the unwinding dispatch answers the call.
    stopped = asyncio.Event()

    async def hang() -> str:
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            stopped.set()
            raise
        return "never"

    agent = AgentSpec(model=scripted((("hang", {}),)), tools={"hang": Tool(run=hang, timeout_s=5)})

    async def main() -> None:
        async with aopen(store, "s", create=True) as log:
            turn = asyncio.ensure_future(arun_agent_turn(log, agent, "go"))
            await asyncio.sleep(0.3)
            turn.cancel()
            with pytest.raises(asyncio.CancelledError):
                await turn
            await asyncio.wait_for(stopped.wait(), 2)

    asyncio.run(main())
    events = events_of(store)
    answer = results(events)["c00"]
    assert answer.risk == "tool_outcome_unknown" and answer.rule != "D1"
    assert turn_ends(events) == ["cancelled"]
    assert not [e for e in events if e.type == "x_turnlog_late_result"]
    assert_valid(events)


def test_live_answers_are_flagged_errors_and_their_text_agrees() -> None:
    """D1, D2 and B1 carry `is_error: true` (not the tool's own answer, as
    recovery's), and no text says it is not an error."""
    from turnlog.runtime.budgets import budget_spent_result
    from turnlog.runtime.deadlines import behind_deadline_result, past_deadline_result

    pay, ls = ToolCall(id="c1", name="pay"), ToolCall(id="c2", name="ls")
    answers = [
        past_deadline_result(pay, 2.0),
        behind_deadline_result(ls, pay),
        budget_spent_result(ls, "3 tool calls"),
    ]
    assert [(a.rule, a.is_error) for a in answers] == [("D1", True), ("D2", True), ("B1", True)]
    for answer in answers:
        assert "not an error" not in ev.content_text(answer.content)
    assert "not the tool's answer" in ev.content_text(answers[0].content)
