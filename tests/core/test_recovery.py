"""The decision table and the repair plan (DESIGN §5), rule by rule."""

from __future__ import annotations

import msgspec
import pytest

import turnlog
from builders import (
    assert_exports_valid,
    assistant,
    call,
    dispatch,
    json_roundtrip,
    number,
    result,
    step_end,
    step_start,
    turn_end,
    turn_start,
)
from turnlog import events as ev
from turnlog.core.fold import fold
from turnlog.core.recovery import interrupted, patch_dangling_tool_calls
from turnlog.events import Event
from turnlog.ops.recover import plan


def results_of(p: turnlog.Plan) -> list[ev.ToolResult]:
    return [e.data for e in p.events if isinstance(e.data, ev.ToolResult)]


def risks(p: turnlog.Plan) -> list[tuple[str, str | None, str | None]]:
    return [(r.call_id, r.risk, r.rule) for r in results_of(p)]


def test_r1_dispatched_without_result_is_outcome_unknown() -> None:
    log = number([turn_start(), step_start(), assistant(call("a")), dispatch("a")])
    assert risks(plan(log)) == [("a", "tool_outcome_unknown", "R1")]


def test_r2_sibling_without_dispatch_did_not_start() -> None:
    log = number(
        [turn_start(), step_start(), assistant(call("a"), call("b")), dispatch("a"), result("a")]
    )
    assert risks(plan(log)) == [("b", "tool_not_started", "R2")]


def test_r1_and_r2_together_in_first_sighting_order() -> None:
    log = number(
        [turn_start(), step_start(), assistant(call("a"), call("b"), call("c")), dispatch("b")]
    )
    assert risks(plan(log)) == [
        ("a", "tool_not_started", "R2"),
        ("b", "tool_outcome_unknown", "R1"),
        ("c", "tool_not_started", "R2"),
    ]


def test_r3_and_r4_no_dispatches_closed_then_open_step() -> None:
    log = number(
        [
            turn_start(),
            step_start(1, 1),
            assistant(call("a")),
            step_end(1, 1),
            step_start(1, 2),
            assistant(call("b")),
        ]
    )
    assert risks(plan(log)) == [
        ("a", "tool_not_started", "R3"),
        ("b", "tool_outcome_unknown", "R4"),
    ]


def test_r4_call_outside_any_step_is_pessimistic() -> None:
    log = number([turn_start(), assistant(call("a"))])
    assert risks(plan(log)) == [("a", "tool_outcome_unknown", "R4")]


def test_repair_order_results_then_step_end_then_turn_end() -> None:
    log = number([turn_start(7), step_start(7, 1), assistant(call("a"), call("b")), dispatch("a")])
    repairs = plan(log)
    assert [e.type for e in repairs.events] == [
        "tool_result",
        "tool_result",
        "step_end",
        "turn_end",
    ]
    assert [e.seq for e in repairs.events] == list(range(len(log), len(log) + 4))
    assert all(e.origin == "recovery" for e in repairs.events)
    assert all(e.ts == log[-1].ts for e in repairs.events)
    end = repairs.events[-1].data
    assert isinstance(end, ev.TurnEnd)
    assert (end.reason, end.turn, end.steps) == ("interrupted", 7, 1)
    step = repairs.events[2].data
    assert isinstance(step, ev.StepEnd) and (step.turn, step.step) == (7, 1)


def test_turn_number_is_never_invented() -> None:
    log = number([turn_start(None), assistant(call("a"))])
    end = plan(log).events[-1].data
    assert isinstance(end, ev.TurnEnd) and end.turn is None
    assert b'"turn"' not in ev.encode_event(plan(log).events[-1])


def test_zero_step_turn_closes_with_zero_steps() -> None:
    repairs = plan(number([ev.UserMessage(content="hi"), turn_start()]))
    assert [e.type for e in repairs.events] == ["turn_end"]
    end = repairs.events[0].data
    assert isinstance(end, ev.TurnEnd) and end.steps == 0


def test_answered_call_is_never_answered_again() -> None:
    log = number(
        [turn_start(), step_start(), assistant(call("a"), call("b")), dispatch("a"), result("a")]
    )
    assert "a" not in [r.call_id for r in results_of(plan(log))]


def test_result_from_an_earlier_turn_answers_nothing_in_the_open_one() -> None:
    # Call ids repeat across turns: a result answers a request made before it,
    # in the same turn (DESIGN §5).
    log = number(
        [
            turn_start(1),
            step_start(1, 1),
            assistant(call("a")),
            dispatch("a"),
            result("a"),
            step_end(1, 1),
            turn_end(1),
            turn_start(2),
            step_start(2, 1),
            assistant(call("a"), call("b")),
            dispatch("b"),
        ]
    )
    assert [(r.call_id, r.rule) for r in results_of(plan(log))] == [("a", "R2"), ("b", "R1")]


def test_closed_earlier_turn_is_left_alone() -> None:
    log = number(
        [
            turn_start(1),
            assistant(call("old")),
            turn_end(1),
            turn_start(2),
            step_start(2, 1),
            assistant(call("new")),
            dispatch("new"),
        ]
    )
    assert [r.call_id for r in results_of(plan(log))] == ["new"]


def test_log_without_turn_events_is_never_interrupted() -> None:
    log = number([ev.UserMessage(content="hi"), assistant(call("a")), dispatch("a")])
    assert not interrupted(log)
    assert plan(log).events == ()


def test_finished_log_plans_nothing() -> None:
    log = number([turn_start(), step_start(), assistant(content="done"), step_end(), turn_end()])
    assert not plan(log)


def test_text_differs_by_class_not_by_idempotency() -> None:
    log = number(
        [
            turn_start(),
            step_start(),
            assistant(call("r", "read"), call("d", "rm"), call("n", "x"), call("i", "put")),
            dispatch("r", "read", "read_only"),
            dispatch("d", "rm", "destructive"),
            dispatch("i", "put", "idempotent"),
        ]
    )
    texts = {r.call_id: ev.content_text(r.content) for r in results_of(plan(log))}
    assert "did not run" in texts["n"] and "no side effects" in texts["n"]
    # Read-only and idempotent calls get the same honest answer as any other
    # in-flight call: what they read may have changed, and nothing is replayed.
    for call_id in ("r", "d", "i"):
        assert "NOT been retried" in texts[call_id] and "safe" not in texts[call_id]
    assert len({texts["r"].replace("`read` (r)", "X"), texts["i"].replace("`put` (i)", "X")}) == 1
    assert [r.rule for r in results_of(plan(log))] == ["R1", "R1", "R2", "R1"]
    assert all(r.is_error for r in results_of(plan(log)))


def test_inconsistent_bookkeeping_is_warned_about() -> None:
    log = number([turn_end(), turn_start(), assistant(call("a"))])
    repairs = plan(log)
    assert any("closes no open turn" in w for w in repairs.warnings)
    assert [r.call_id for r in results_of(repairs)] == ["a"]


def test_plan_is_deterministic_byte_for_byte() -> None:
    log = number([turn_start(), step_start(), assistant(call("a"), call("b")), dispatch("a")])
    first = b"".join(ev.encode_event(e) for e in plan(log).events)
    second = b"".join(ev.encode_event(e) for e in plan(list(log)).events)
    assert first == second


def test_json_roundtrip_recovers_identically() -> None:
    log = number(
        [
            turn_start(),
            step_start(),
            assistant(call("a"), call("b")),
            ev.ToolDispatch(call_id="a", name="tool", idempotency=ev.Idempotency.DESTRUCTIVE),
        ]
    )
    direct = [ev.encode_event(e) for e in plan(log).events]
    via_json = [ev.encode_event(e) for e in plan(json_roundtrip(log)).events]
    assert direct == via_json


def test_detection_keys_on_type_not_reason() -> None:
    # A turn_end with a made-up reason still closes the turn.
    log = number([turn_start(), assistant(call("a")), ev.TurnEnd(reason="whatever")])
    assert not interrupted(log)


def apply(log: list[Event], repairs: turnlog.Plan) -> list[Event]:
    return [*log, *repairs.events]


def test_append_only_and_idempotent() -> None:
    log = number([turn_start(), step_start(), assistant(call("a"), call("b")), dispatch("a")])
    repaired = apply(log, plan(log))
    assert repaired[: len(log)] == log
    assert all(e.type != "turn_start" for e in plan(log).events)
    assert plan(repaired).events == ()
    assert not interrupted(repaired)


def test_recover_through_a_store() -> None:
    store = turnlog.MemoryStore()
    log = number([turn_start(), step_start(), assistant(call("a")), dispatch("a")])
    writer = store.create(log[0])
    writer.append(log[1:], expected_seq=1, sync=True)
    writer.close()
    first = turnlog.recover(store, "s1")
    assert len(first.plan.events) == 3
    assert turnlog.recover(store, "s1").plan.events == ()
    assert store.read("s1")[: len(log)] == log


def test_a_turn_start_inside_an_open_turn_carries_its_owed_calls() -> None:
    # Turns never nest, and the writer refuses a turn_start inside an open
    # turn. A log that has one (hand-made, imported) crashed in the earlier
    # turn: its owed calls carry into the new one, and recovery answers every
    # owed call, oldest first. The earlier turn proves nothing about them
    # (R4, never "not started"), and every provider accepts the result.
    log = number(
        [
            ev.UserMessage(content="go"),
            turn_start(1),
            step_start(1, 1),
            assistant(call("a")),
            dispatch("a"),
            step_end(1, 1),
            turn_start(2),
            assistant(call("b")),
        ]
    )
    repairs = plan(log)
    assert [(e.type, getattr(e.data, "call_id", None)) for e in repairs.events] == [
        ("tool_result", "a"),
        ("tool_result", "b"),
        ("turn_end", None),
    ]
    a, b = results_of(repairs)
    assert (a.risk, a.rule) == ("tool_outcome_unknown", "R1")
    assert (b.risk, b.rule) == ("tool_outcome_unknown", "R4")
    repaired = apply(log, repairs)
    assert not interrupted(repaired)
    assert plan(repaired).events == ()
    assert any("carry into the new turn" in w for w in repairs.warnings)
    assert_exports_valid(fold(repaired).messages)


def test_an_undispatched_call_carried_from_a_left_open_turn_is_never_not_started() -> None:
    # R2 would say "not started" of a call without a dispatch in a turn that
    # dispatched others; a carried call's own turn proves nothing of the kind.
    log = number(
        [
            ev.UserMessage(content="go"),
            turn_start(1),
            assistant(call("a"), call("b")),
            dispatch("a"),
            turn_start(2),
            assistant(call("c")),
            dispatch("c"),
        ]
    )
    risks = {r.call_id: (r.risk, r.rule) for r in results_of(plan(log))}
    assert risks == {
        "a": ("tool_outcome_unknown", "R1"),
        "b": ("tool_outcome_unknown", "R4"),
        "c": ("tool_outcome_unknown", "R1"),
    }


def test_a_compaction_that_swallows_an_owed_call_is_settled_without_a_visible_result() -> None:
    # A hand-made log (the writer refuses this order): the message that asked
    # for `a` is inside the summary, so a provider would reject any result
    # for it. Recovery settles it outcome unknown, marked orphaned, kept in
    # the log and out of the transcript.
    log = number(
        [
            ev.UserMessage(content="go"),
            turn_start(1),
            step_start(1, 1),
            assistant(call("a", "pay")),
            dispatch("a", "pay"),
            ev.Compaction(through_seq=4, summary="paid, maybe"),
        ]
    )
    repairs = plan(log)
    (result,) = results_of(repairs)
    assert result.orphaned and result.risk == "tool_outcome_unknown"
    messages = fold(apply(log, repairs)).messages
    assert all(m.call_id != "a" for m in messages)
    assert_exports_valid(messages)
    assert plan(apply(log, repairs)).events == ()


def test_a_dispatch_no_message_asked_for_is_settled_without_a_visible_result() -> None:
    log = number(
        [
            ev.UserMessage(content="go"),
            turn_start(1),
            step_start(1, 1),
            assistant(call("a")),
            dispatch("a"),
            ev.ToolResult(call_id="a", content="ok"),
            dispatch("ghost"),
        ]
    )
    repairs = plan(log)
    (result,) = results_of(repairs)
    assert result.call_id == "ghost" and result.orphaned
    assert result.risk == "tool_outcome_unknown"
    assert_exports_valid(fold(apply(log, repairs)).messages)


def test_recovery_then_patch_leaves_nothing_to_patch() -> None:
    log = number([turn_start(), step_start(), assistant(call("a"), call("b")), dispatch("a")])
    messages = fold(apply(log, plan(log))).messages
    assert patch_dangling_tool_calls(messages) == list(messages)


def test_patch_alone_answers_same_calls_without_risk() -> None:
    log = number(
        [ev.UserMessage(content="go"), turn_start(), assistant(call("a"), call("b")), dispatch("a")]
    )
    recovered = {r.call_id for r in results_of(plan(log))}
    patched = patch_dangling_tool_calls(fold(log).messages)
    synthetic = [m for m in patched if m.role == "tool"]
    assert {m.call_id for m in synthetic} == recovered
    assert all(m.risk is None and m.is_error and m.origin == "patch" for m in synthetic)
    # Right after their assistant message, in call order.
    roles = [m.role for m in patched]
    assert roles == ["user", "assistant", "tool", "tool"]
    assert [m.call_id for m in synthetic] == ["a", "b"]


def test_patch_keeps_existing_results_first_and_order_stable() -> None:
    log = number([assistant(call("a"), call("b")), result("a"), ev.UserMessage(content="next")])
    patched = patch_dangling_tool_calls(fold(log).messages)
    assert [(m.role, m.call_id) for m in patched] == [
        ("assistant", None),
        ("tool", "a"),
        ("tool", "b"),
        ("user", None),
    ]


def test_plan_events_are_valid_structs() -> None:
    log = number([turn_start(), assistant(call("a"))])
    for event in plan(log).events:
        assert ev.decode_event(ev.encode_event(event)) == event
        msgspec.json.encode(event.data)


@pytest.mark.parametrize("cut", range(1, 9))
def test_every_cut_of_a_turn_recovers(cut: int) -> None:
    full = number(
        [
            turn_start(),
            step_start(),
            assistant(call("a"), call("b")),
            dispatch("a"),
            result("a"),
            dispatch("b"),
            result("b"),
            step_end(),
            turn_end(),
        ]
    )
    log = full[:cut]
    repaired = apply(log, plan(log))
    assert not interrupted(repaired)
    assert plan(repaired).events == ()
