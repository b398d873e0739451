"""One damage rule: the forward and backward readers agree on every damaged offset of a session."""

from __future__ import annotations

import collections
from collections.abc import Callable
from pathlib import Path

import pytest

import turnlog
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
from turnlog.core.damage import Scan
from turnlog.core.tail import Tail
from turnlog.stores import JSONLStore
from turnlog.stores.record import encode_line

# Two closed turns, a revival, and a crashed one: the backward reader stops at
# the last turn boundary, so damage older than it is seen by the forward
# reader only, and damage inside it by both.
EVENTS = number(
    [
        ev.UserMessage(content="pay invoice 7"),
        turn_start(1),
        step_start(1, 1),
        assistant(call("a", "pay", invoice=7)),
        dispatch("a", "pay"),
        result("a", "pay", "paid"),
        step_end(1, 1),
        turn_end(1, 1),
        ev.RunRevived(revival=1),
        ev.UserMessage(content="and invoice 8"),
        ev.TurnStart(turn=2, revivals=1),
        step_start(2, 1),
        assistant(call("b", "pay", invoice=8), call("c", "mail")),
        dispatch("b", "pay"),
    ]
)
DATA = b"".join(encode_line(event) for event in EVENTS)


def flip(offset: int) -> bytes:
    """One byte changed: a bit flipped on the disk or in flight."""
    return DATA[:offset] + bytes([DATA[offset] ^ 0x20]) + DATA[offset + 1 :]


def cut(offset: int) -> bytes:
    """The file cut short: a crash mid-append."""
    return DATA[:offset]


def nul_padded(offset: int) -> bytes:
    """NUL bytes from the offset on: a crash after the size grew, before the data landed."""
    return DATA[:offset] + b"\0" * (len(DATA) - offset)


def garbage(offset: int) -> bytes:
    """A line of bytes no writer made, inserted (splitting a line when mid-line)."""
    return DATA[:offset] + b'{"not":"a record"}\n' + DATA[offset:]


DAMAGE: dict[str, Callable[[int], bytes]] = {
    "flip": flip,
    "cut": cut,
    "nul": nul_padded,
    "garbage": garbage,
}
# What each offset came to, by damage kind: printed with `-s`, and checked to
# cover every outcome the rule has.
OUTCOMES: collections.Counter[tuple[str, str]] = collections.Counter()


def read_both(store: JSONLStore) -> tuple[Scan | Exception, Tail | Exception]:
    forward: Scan | Exception
    backward: Tail | Exception
    try:
        forward = store.scan("s1")
    except turnlog.TurnlogError as exc:
        forward = exc
    try:
        backward = store.read_tail("s1")
    except turnlog.TurnlogError as exc:
        backward = exc
    return forward, backward


def agree(forward: Scan | Exception, backward: Tail | Exception) -> str:
    """Assert the two readers tell the same story; return which story."""
    if isinstance(forward, Exception):
        # The header itself is damaged: both prove ownership the same way.
        assert type(backward) is type(forward), (forward, backward)
        assert str(backward) == str(forward)
        return "header refused"
    if forward.refusal is not None:
        offset = forward.refusal.offset
        if isinstance(backward, Exception):
            kind = (
                "unreadable"
                if isinstance(backward, turnlog.errors.UnreadableRecordError)
                else "corrupt"
            )
            assert kind == forward.refusal_kind, (forward.refusal, backward)
            assert getattr(backward, "offset", None) == offset, (forward.refusal, backward)
            assert forward.refusal.message in str(backward), (forward.refusal, backward)
            return "refused by both"
        # The damage lies before what decides the state: the backward
        # reader never read it, and everything it did read is sound.
        assert backward.torn is None and not backward.problems
        assert backward.events[0].seq >= len(forward.events), (forward.refusal, backward)
        return "refused, older than the tail"
    assert not isinstance(backward, Exception), (forward.problems, backward)
    if forward.torn is None:
        assert backward.torn is None and not backward.problems
        if forward.events:
            assert backward.events[-1] == forward.events[-1]
        return "clean"
    assert backward.torn is not None, (forward.torn, backward)
    assert backward.torn.offset == forward.torn.offset
    assert backward.torn.size_bytes == forward.torn.size_bytes
    if forward.events:
        assert backward.events[-1] == forward.events[-1]
        assert backward.valid_size_bytes == len(b"".join(map(encode_line, forward.events)))
    return "torn"


@pytest.mark.parametrize("kind", list(DAMAGE))
def test_forward_and_backward_readers_agree_on_damage_at_every_offset(
    tmp_path: Path, kind: str
) -> None:
    store = JSONLStore(tmp_path)
    path = tmp_path / "s1.jsonl"
    damage = DAMAGE[kind]
    for offset in range(len(DATA)):
        path.write_bytes(damage(offset))
        forward, backward = read_both(store)
        try:
            outcome = agree(forward, backward)
        except AssertionError as exc:
            raise AssertionError(f"{kind} at byte {offset}: {exc}") from exc
        OUTCOMES[kind, outcome] += 1
    counts = {outcome: n for (k, outcome), n in OUTCOMES.items() if k == kind}
    print(f"\n{kind}: {len(DATA)} offsets: {counts}")
    assert sum(counts.values()) == len(DATA)
    # Every kind of damage reaches the outcomes it can make.
    expected = {
        "flip": {"header refused", "refused by both", "refused, older than the tail", "torn"},
        "cut": {"torn", "clean"},
        "nul": {"torn"},
        "garbage": {"refused by both", "refused, older than the tail", "torn"},
    }[kind]
    assert expected <= set(counts), counts
