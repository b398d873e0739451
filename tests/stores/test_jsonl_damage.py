"""Torn tails and damage: every byte offset, every bit, NULs and garbage."""

from __future__ import annotations

import io
import os
import stat
from pathlib import Path

import pytest

import turnlog
from builders import assistant, call, dispatch, number, step_start, turn_start
from turnlog import events as ev
from turnlog.core.damage import Scan
from turnlog.events import Event
from turnlog.stores import JSONLStore
from turnlog.stores.jsonl import scan_file, scan_lines
from turnlog.stores.jsonl.forward import Scanner, lines_forward
from turnlog.stores.record import encode_line

EVENTS = number(
    [
        ev.UserMessage(content="pay invoice 7"),
        turn_start(1),
        step_start(1, 1),
        assistant(call("a", "pay", invoice=7)),
        dispatch("a", "pay", "destructive"),
    ]
)
DATA = b"".join(encode_line(e) for e in EVENTS)
LINE_ENDS = [sum(len(encode_line(e)) for e in EVENTS[: i + 1]) for i in range(len(EVENTS))]


def scan(data: bytes) -> Scan:
    return scan_lines(iter(data.splitlines(keepends=True)), checksummed=True)


def test_format_matches_the_documented_checksum() -> None:
    import zlib

    line = encode_line(EVENTS[1])
    assert line.endswith(b'"}\n')
    prefix, _, tail = line.rpartition(b',"crc":"')
    assert int(tail[:8], 16) == zlib.crc32(prefix)
    assert line.startswith(b'{"seq":1,"type":"user_message","ts":')


def test_truncation_at_every_byte_offset_loads_the_valid_prefix() -> None:
    for cut in range(len(DATA) + 1):
        result = scan(DATA[:cut])
        whole = sum(1 for end in LINE_ENDS if end <= cut)
        assert not result.corrupt, cut
        assert result.events == EVENTS[:whole], cut
        assert (result.torn is None) == (cut in (0, *LINE_ENDS)), cut
        if result.torn is not None:
            assert result.torn.offset == ([0, *LINE_ENDS][whole])


@pytest.mark.parametrize(
    "junk", [b"\x00" * 4096, b"\x00\x00\n", b"garbage", b"{}\n", b'{"seq":5', b"\n\x00"]
)
def test_junk_after_a_valid_file_is_a_torn_tail(junk: bytes) -> None:
    result = scan(DATA + junk)
    assert not result.corrupt
    assert result.events == EVENTS
    if junk.strip(b"\n"):
        assert result.torn is not None and result.torn.offset >= len(DATA)
        assert result.torn.offset + result.torn.size_bytes == len(DATA + junk)


def test_every_single_bit_flip_is_detected() -> None:
    flips = 0
    for position in range(len(DATA)):
        for bit in range(8):
            damaged = bytearray(DATA)
            damaged[position] ^= 1 << bit
            result = scan(bytes(damaged))
            flips += 1
            assert result.problems, f"flip of bit {bit} at byte {position} went unnoticed"
            assert result.events == EVENTS[: len(result.events)]
            assert len(result.events) < len(EVENTS)
    assert flips == len(DATA) * 8


def test_damage_before_a_good_record_is_corruption(tmp_path: Path) -> None:
    damaged = bytearray(DATA)
    damaged[LINE_ENDS[1] + 10] ^= 0x01  # inside record 2
    path = tmp_path / "s1.jsonl"
    path.write_bytes(bytes(damaged))
    with pytest.raises(turnlog.CorruptLogError) as info:
        turnlog.open(path)
    assert info.value.line == 3 and info.value.offset == LINE_ENDS[1]
    assert str(path) in str(info.value)
    assert path.read_bytes() == bytes(damaged)  # refused, untouched


def test_writer_quarantines_a_torn_tail_then_appends(tmp_path: Path) -> None:
    path = tmp_path / "s1.jsonl"
    torn = b'{"seq":6,"type":"tool_res\x00\x00'
    path.write_bytes(DATA + torn)
    with turnlog.open(path) as log:
        assert log.torn_tail is not None
        sidecar = Path(log.torn_tail.sidecar or "")
        assert sidecar.name == f"s1.jsonl.torn-{len(DATA)}"
        assert sidecar.read_bytes() == torn
        assert stat.S_IMODE(sidecar.stat().st_mode) == 0o600
        plan = log.recover()
    assert [e.type for e in plan.events] == ["tool_result", "step_end", "turn_end"]
    events = JSONLStore(tmp_path).read("s1")
    assert events[: len(EVENTS)] == EVENTS


def test_readers_never_modify_a_torn_file(tmp_path: Path) -> None:
    path = tmp_path / "s1.jsonl"
    path.write_bytes(DATA + b"\x00\x00\x00")
    store = JSONLStore(tmp_path)
    assert store.read("s1") == EVENTS
    tail = store.read_tail("s1")
    assert tail.torn is not None and tail.torn.offset == len(DATA)
    assert store.scan("s1").torn is not None
    assert path.read_bytes() == DATA + b"\x00\x00\x00"
    assert list(tmp_path.iterdir()) == [path]


def test_hand_written_lines_without_crc_or_ts(tmp_path: Path) -> None:
    path = tmp_path / "hand.jsonl"
    path.write_text(
        '{"seq":0,"type":"session","data":{"session_id":"hand"}}\n'
        '{"seq":1,"type":"turn_start","data":{}}\n'
        "\n"
        '{"seq":2,"type":"assistant_message","data":{"content":"x",'
        '"tool_calls":[{"id":"c1","name":"rm"}]}}\n'
    )
    result = JSONLStore(tmp_path).scan("hand")
    assert result.lines_without_crc == [1, 2, 4] and not result.problems
    assert [r.data.rule for r in turnlog.plan(result.events).events[:1]] == ["R4"]  # type: ignore[union-attr]


def test_oversized_line_is_reported_not_loaded(tmp_path: Path) -> None:
    path = tmp_path / "s1.jsonl"
    with open(path, "wb") as f:
        f.write(DATA)
        f.write(b'{"seq":6,"type":"user_message","data":{"content":"')
        f.write(b"x" * (ev.MAX_RECORD_BYTES + 10))
        f.write(b'"}}\n')
    result = JSONLStore(tmp_path).scan("s1")
    assert result.torn is not None
    assert "limit" in result.problems[0].message


def test_files_and_directories_are_private(tmp_path: Path) -> None:
    store_dir = tmp_path / "new"
    with turnlog.open(store_dir, "s1"):
        pass
    assert stat.S_IMODE(store_dir.stat().st_mode) == 0o700
    assert stat.S_IMODE((store_dir / "s1.jsonl").stat().st_mode) == 0o600


def test_symlink_planted_where_a_session_would_be_created(tmp_path: Path) -> None:
    target = tmp_path / "victim.txt"
    target.write_text("precious")
    store_dir = tmp_path / "store"
    store_dir.mkdir()
    os.symlink(target, store_dir / "s1.jsonl")
    with pytest.raises(turnlog.TurnlogError) as info:
        turnlog.open(store_dir, "s1", create=True)
    assert "symbolic link" in str(info.value)
    with pytest.raises(turnlog.TurnlogError, match="symbolic link"):
        turnlog.open(store_dir, "s1", create=False)
    assert target.read_text() == "precious"


def test_tail_read_does_not_grow_with_the_log(tmp_path: Path) -> None:
    store = JSONLStore(tmp_path)
    filler = ev.UserMessage(content="y" * 900)
    sizes = {}
    for name, count in (("small", 10), ("large", 20_000)):
        with turnlog.open(store, name, durability="none") as log:
            for _ in range(count // 100):
                log.append_many([filler] * 100)
            # The writer stamps the revival count on turn_start; that stamp is
            # what lets the tail stop without counting revivals from the start.
            log.user("go")
            log.append(turnlog.events.TurnStart(turn=1, revivals=0))
            log.append(assistant(call("a")))
        tail = store.read_tail(name)
        assert [c.call_id for c in tail.verdict().owed] == ["a"]
        sizes[name] = tail.bytes_read
    assert os.path.getsize(tmp_path / "large.jsonl") > 15_000_000
    assert sizes["large"] <= 2 * 64 * 1024
    assert sizes["small"] <= sizes["large"]


def test_backward_line_reader_matches_a_forward_split(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import random

    import turnlog.stores.jsonl.backward as backward

    # Tiny blocks so lines span many of them.
    monkeypatch.setattr(backward, "TAIL_BLOCK_BYTES", 7)
    rng = random.Random(3)
    pieces = [b"a", b"bb", b"\n", b"ccc\n", b"dddddddddddd", b"\n\n"]
    for _ in range(300):
        data = b"".join(rng.choice(pieces) for _ in range(rng.randint(0, 30)))
        path = tmp_path / "x.jsonl"
        path.write_bytes(data)
        fd = os.open(path, os.O_RDONLY)
        try:
            newest_first = list(backward.lines_newest_first(fd, len(data), [0]))
        finally:
            os.close(fd)
        expected, offset = [], 0
        for line in data.splitlines(keepends=True):
            expected.append((offset, line))
            offset += len(line)
        assert newest_first[::-1] == expected, data


def test_revivals_of_a_log_without_stamps_are_found_by_the_byte_search(tmp_path: Path) -> None:
    # Another writer: turn_start carries no `revivals`, so the count comes from
    # the newest run_revived before the kept events, found by searching bytes.
    # Payloads that mention the anchors' words must not be taken for them.
    decoys: list[ev.EventData] = [
        ev.UserMessage(content='{"type":"run_revived","revival":7} and "revivals": 9'),
        ev.AssistantMessage(
            content="", tool_calls=[ev.ToolCall(id="c", name="t", arguments={"revivals": 5})]
        ),
        ev.Custom(type="x_note", fields={"type": "run_revived", "revival": 8}),
    ]
    for real in (0, 1, 2):
        items: list[ev.EventData] = [ev.Session(session_id=f"u{real}")]
        for n in range(1, real + 1):
            items += [ev.RunRevived(revival=n), ev.UserMessage(content="notice")]
        for turn in range(1, 200):
            items += [ev.UserMessage(content="x" * 500), ev.TurnStart(turn=turn), *decoys]
            items += [ev.TurnEnd(turn=turn)]
        items += [ev.UserMessage(content="last"), ev.TurnStart(turn=200)]
        events = [Event(seq=i, data=d) for i, d in enumerate(items)]
        (tmp_path / f"u{real}.jsonl").write_bytes(b"".join(encode_line(e) for e in events))
        tail = JSONLStore(tmp_path).read_tail(f"u{real}")
        assert tail.verdict().revivals == real == turnlog.verdict(events).revivals
        assert len(tail.events) < 10


def test_a_revival_mark_across_a_search_block_boundary_is_found(tmp_path: Path) -> None:
    # The backward search for the revival count reads the last 64 KB first. A
    # padding that grows a byte at a time slides the anchor's mark across that
    # block's start; every position must still find it.
    from turnlog.stores.jsonl.backward import ANCHOR_MARK, TAIL_BLOCK_BYTES, search_revivals_before

    straddled = 0
    for pad in range(64 * 1024 - 400, 64 * 1024):
        head = encode_line(Event(seq=0, data=ev.Session(session_id="m")))
        # A stamped turn_start holds the mark once ("revivals"); run_revived holds it twice.
        anchor = encode_line(Event(seq=1, data=ev.TurnStart(turn=1, revivals=1)))
        padding = encode_line(Event(seq=2, data=ev.UserMessage(content="x" * pad)))
        data = head + anchor + padding
        mark = len(head) + anchor.index(ANCHOR_MARK)
        boundary = len(data) - TAIL_BLOCK_BYTES
        straddled += mark < boundary < mark + len(ANCHOR_MARK)
        path = tmp_path / "m.jsonl"
        path.write_bytes(data)
        fd = os.open(path, os.O_RDONLY)
        try:
            assert search_revivals_before(fd, len(data), str(path)) == 1, pad
        finally:
            os.close(fd)
    assert straddled == len(ANCHOR_MARK) - 1  # the test crosses the boundary


# Block sizes that cut lines everywhere: inside a record, on its newline, a block per byte.
BLOCK_SIZES = (1, 7, 64, 151, 4096)


def line_by_line(data: bytes, *, checksummed: bool = True) -> Scan:
    # Lines as the line reader takes them from a file: split on newline
    # bytes only, none longer than the line limit.
    return scan_lines(lines_forward(io.BytesIO(data), len(data)), checksummed=checksummed)


def in_blocks(data: bytes, block_bytes: int, *, checksummed: bool = True) -> Scan:
    return scan_file(io.BytesIO(data), len(data), checksummed=checksummed, block_bytes=block_bytes)


def damaged_images() -> list[bytes]:
    images = [DATA[:cut] for cut in range(len(DATA) + 1)]
    for position in range(0, len(DATA), 3):
        damaged = bytearray(DATA)
        damaged[position] ^= 1 << (position % 8)
        images.append(bytes(damaged))
    images += [DATA + junk for junk in (b"\x00" * 300, b"garbage", b"{}\n", b"\n\x00", b"\r\n")]
    # A record out of seq order, and a good record after damage.
    lines = DATA.splitlines(keepends=True)
    images.append(b"".join([lines[0], lines[2], lines[1], *lines[3:]]))
    images.append(b"".join([*lines[:2], b"junk\n", *lines[2:]]))
    # Lines the tight loop cannot take but no damage either: a custom event
    # (then more sound lines after it) and blank lines.
    custom = encode_line(Event(seq=2, data=ev.Custom(type="x_note", fields={"n": 1})))
    renumbered = [encode_line(Event(seq=e.seq + 1, data=e.data, ts=e.ts)) for e in EVENTS[2:]]
    with_custom = b"".join([*lines[:2], custom, *renumbered])
    images += [with_custom, with_custom[:-7], b"".join([*lines[:3], b"\n \n", *lines[3:]])]
    return images


def test_block_reader_classifies_exactly_like_the_line_reader() -> None:
    # Loading reads in blocks with a tight loop for whole records; whatever
    # the damage and wherever a block ends, it must find what the line-by-line
    # reader finds: the same events, problems, torn tail and refusal.
    for image in damaged_images():
        expected = line_by_line(image)
        for block_bytes in BLOCK_SIZES:
            assert in_blocks(image, block_bytes) == expected, (image, block_bytes)


def test_block_reader_classifies_hand_made_lines_like_the_line_reader() -> None:
    # A session written by hand: no checksums, no timestamps.
    plain = b"".join(msgspec_json_line(e) for e in EVENTS)
    for image in (plain, plain[:-3], plain + b"{}\n"):
        expected = line_by_line(image, checksummed=False)
        assert expected.events or not image
        for block_bytes in BLOCK_SIZES:
            assert in_blocks(image, block_bytes, checksummed=False) == expected


def msgspec_json_line(event: Event) -> bytes:
    return ev.encode_event(event) + b"\n"


def test_block_reader_keeps_at_most_a_block_of_records_after_a_custom_event() -> None:
    # Events the tight loop cannot take are classified one by one and the
    # loop resumes, so a log with custom events is still read a block at a
    # time: each list holds at most the records one block can hold.
    items: list[ev.EventData] = [ev.Session(session_id="c")]
    for n in range(200):
        items.append(
            ev.Custom(type="x_note", fields={"n": n})
            if n % 7 == 0
            else ev.UserMessage(content="y" * 300)
        )
    data = b"".join(encode_line(Event(seq=i, data=d)) for i, d in enumerate(items))
    scanner = Scanner(checksummed=True)
    lists = list(scanner.batches(io.BytesIO(data), len(data), block_bytes=4096))
    assert [e.data for batch in lists for e in batch] == items
    shortest = min(len(line) for line in data.splitlines(keepends=True))
    assert max(len(batch) for batch in lists) <= 4096 // shortest + 1
    assert len(lists) >= len(data) // 4096


def test_block_reader_hands_an_oversized_line_to_the_line_reader() -> None:
    huge = (
        b'{"seq":5,"type":"user_message","data":{"content":"' + b"x" * ev.MAX_LINE_BYTES + b'"}}\n'
    )
    image = DATA + huge
    result = in_blocks(image, 1 << 20)
    assert result == line_by_line(image)
    assert result.events == EVENTS and result.torn is not None
    assert "limit" in result.problems[0].message
