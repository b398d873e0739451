"""The vocabulary and its codec: closed, typed, no code from data."""

from __future__ import annotations

import pytest

import turnlog
from builders import number
from turnlog import events as ev
from turnlog.core.fold import fold


def test_every_type_round_trips() -> None:
    payloads: list[ev.EventData] = [
        ev.Session(
            session_id="s",
            agent=ev.Agent(id="a1", type="coder", label="main"),
            parent=ev.Parent(session_id="p", seed_length=3),
            spawned_by=ev.SpawnedBy(session_id="p", call_id="c", agent_id="a0"),
            meta={"k": [1, 2]},
        ),
        ev.SystemMessage(content="be brief"),
        ev.UserMessage(content=[{"type": "text", "text": "hi"}], injected="background"),
        ev.AssistantMessage(
            content=[{"type": "reasoning", "opaque": "sig=="}],
            tool_calls=[ev.ToolCall(id="c", name="n", arguments={"a": 1})],
        ),
        ev.ToolResult(call_id="c", name="n", content="x", is_error=True, risk="r", rule="R1"),
        ev.TurnStart(turn=1, revivals=0),
        ev.TurnEnd(reason="complete", turn=1, steps=2),
        ev.StepStart(turn=1, step=1),
        ev.StepEnd(turn=1, step=1, outcome="ok"),
        ev.ToolDispatch(call_id="c", name="n", idempotency="read_only", join="agent-2"),
        ev.ToolPaused(call_id="c", name="n", kind="approval", until="2026-12-03T09:00:00.000000Z"),
        ev.ToolDecision(call_id="c", decision="approved", by="alice", reason="ok"),
        ev.Compaction(through_seq=3, summary="short"),
        ev.RunRevived(revival=1, agent_id="a1"),
        ev.SubagentSpawned(agent_id="a2", agent_type="t", label="l", call_id="c", child="s2"),
        ev.SubagentSettled(agent_id="a2", call_id="c", child="s2", outcome="ok", result="r"),
        ev.Custom(type="x_note", fields={"any": {"thing": True}}),
    ]
    assert {type(p).TYPE for p in payloads[:-1]} == set(ev.VOCABULARY)
    for event in number(payloads):
        assert ev.decode_event(ev.encode_event(event)) == event


def test_unknown_type_names_type_and_line() -> None:
    with pytest.raises(turnlog.errors.UnknownEventTypeError) as info:
        ev.decode_event(b'{"seq":1,"type":"tool_cal","data":{}}', line=12)
    assert "tool_cal" in str(info.value) and "line 12" in str(info.value)
    assert info.value.hint


def test_custom_types_are_kept_and_skipped_by_fold() -> None:
    event = ev.decode_event(b'{"seq":1,"type":"x_cost","data":{"usd":0.1}}')
    assert event.type == "x_cost"
    assert ev.encode_event(event) == b'{"seq":1,"type":"x_cost","data":{"usd":0.1}}'
    state = fold(number([ev.UserMessage(content="a"), event.data]))
    assert [m.role for m in state.messages] == ["user"]


def test_type_names_never_load_code() -> None:
    # Whatever a file says, only the literal whitelist can be instantiated.
    for name in ("__main__.Evil", "os.system", "builtins.eval", "Session", "session "):
        with pytest.raises(turnlog.errors.UnknownEventTypeError):
            ev.decode_event(b'{"seq":0,"type":"%s","data":{}}' % name.encode())


def test_wrong_field_type_is_a_format_error() -> None:
    with pytest.raises(turnlog.FormatError) as info:
        ev.decode_event(b'{"seq":1,"type":"tool_result","data":{"call_id":5}}')
    assert "call_id" in str(info.value)


def test_missing_ts_and_crc_are_accepted() -> None:
    event = ev.decode_event(b'{"seq":1,"type":"user_message","data":{"content":"hi"}}')
    assert event.ts is None


def test_content_string_and_parts_both_accepted() -> None:
    a = ev.decode_event(b'{"seq":1,"type":"user_message","data":{"content":"hi"}}')
    b = ev.decode_event(
        b'{"seq":1,"type":"user_message","data":{"content":[{"type":"text","text":"hi"}]}}'
    )
    assert ev.content_text(a.data.content) == ev.content_text(b.data.content) == "hi"  # type: ignore[union-attr]


def test_nan_is_refused_and_never_written() -> None:
    with pytest.raises(turnlog.FormatError):
        ev.decode_event(b'{"seq":1,"type":"x_a","data":{"v":NaN}}')
    event = ev.Event(seq=1, data=ev.Custom(type="x_a", fields={"v": float("nan")}))
    assert b"NaN" not in ev.encode_event(event)


def test_lone_surrogates_refused_both_ways() -> None:
    with pytest.raises(turnlog.FormatError):
        ev.decode_event(b'{"seq":1,"type":"user_message","data":{"content":"\\udc00"}}')
    with pytest.raises(turnlog.FormatError) as info:
        ev.encode_event(ev.Event(seq=1, data=ev.UserMessage(content="\udc00")))
    assert info.value.hint


def test_duplicate_keys_are_normalised_to_one() -> None:
    event = ev.decode_event(b'{"seq":1,"type":"x_a","data":{"k":1,"k":2}}')
    assert ev.encode_event(event).count(b'"k"') == 1


def test_deep_nesting_is_a_limit_error() -> None:
    deep = b"[" * 100_000 + b"]" * 100_000
    with pytest.raises(turnlog.errors.LimitExceededError):
        ev.decode_event(b'{"seq":1,"type":"x_a","data":{"v":%s}}' % deep)


def test_oversized_record_is_refused() -> None:
    big = ev.Event(seq=1, data=ev.UserMessage(content="x" * (ev.MAX_RECORD_BYTES + 1)))
    with pytest.raises(turnlog.errors.LimitExceededError):
        ev.encode_event(big)


def test_unknown_envelope_member_is_refused() -> None:
    with pytest.raises(turnlog.FormatError):
        ev.decode_event(b'{"seq":1,"type":"user_message","data":{},"cbc":"00000000"}')


def test_non_json_value_is_a_clear_error() -> None:
    with pytest.raises(turnlog.FormatError) as info:
        ev.encode_event(ev.Event(seq=1, data=ev.Custom(type="x_a", fields={"v": object()})))
    assert info.value.hint


def test_the_one_pass_decoder_is_made_on_need_and_agrees_with_the_careful_path(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A process's first records take the careful path (making the one-pass
    decoder costs more than a short read saves); then the one-pass decoder
    is made, and both give the same events."""
    monkeypatch.setattr(ev, "_fast_decoder", None)
    monkeypatch.setattr(ev, "_records_before_fast", 0)
    call = ev.ToolCall(id="c", name="t", arguments={"k": [1, {"x": None}]})
    payloads = [
        ev.UserMessage(content="hi"),
        ev.AssistantMessage(content="", tool_calls=[call]),
        ev.ToolDispatch(call_id="c", name="t", idempotency="read_only"),
        ev.ToolResult(call_id="c", name="t", content="ok"),
    ]
    records = [
        ev.encode_event(ev.Event(seq=i, data=payloads[i % 4], ts="2026-12-01T00:00:00.000000Z"))
        for i in range(ev.FAST_DECODER_AFTER_RECORDS + 8)
    ]
    fast = [ev.decode_record_fast(record) for record in records]
    n = ev.FAST_DECODER_AFTER_RECORDS
    assert fast[:n] == [None] * n
    assert ev._fast_decoder is not None
    assert fast[n:] == [ev.decode_record(record)[0] for record in records[n:]]
    assert [ev.decode_event(record) for record in records] == [
        ev.decode_record(record)[0] for record in records
    ]
