"""The skim of a JSONL session: every line checked, the asked-for records handed over,
and the index beside the file trusted only while the bytes it was made from are unchanged."""

from __future__ import annotations

import os
import zlib
from pathlib import Path

import pytest

from turnlog import events as ev
from turnlog.errors import CorruptLogError, TurnlogError
from turnlog.events import Event
from turnlog.stores import JSONLStore
from turnlog.stores.jsonl.skimming import INDEX_INFIX, read_index
from turnlog.stores.record import encode_line
from turnlog.stores.skim import Record, skim_lines
from turnlog.testing import CONTRACT_LOG

ASKED = ("user_message", "tool_result")
INDEX = "test"


def _store(tmp_path: Path, events: list[Event] = CONTRACT_LOG) -> JSONLStore:
    store = JSONLStore(tmp_path)
    with store.create(events[0]) as writer:
        writer.append(events[1:], expected_seq=1, sync=True)
    return store


def _skim(store: JSONLStore, index: str | None = INDEX) -> tuple[int | None, list[Record]]:
    handed: list[Record] = []
    count = store.skim("s1", dict.fromkeys(ASKED, handed.append), index=index)
    return count, handed


def _wanted(store: JSONLStore) -> list[Event]:
    return [event for event in store.read("s1") if event.type in ASKED]


def _lines(events: list[Event]) -> list[bytes]:
    return [encode_line(event)[:-1] for event in events]


def test_the_lines_of_a_session_are_checked_and_the_asked_for_handed_over() -> None:
    handed: list[Record] = []
    lines = _lines(CONTRACT_LOG)
    assert skim_lines(lines, {"tool_result": handed.append}) == len(CONTRACT_LOG)
    results = [event for event in CONTRACT_LOG if event.type == "tool_result"]
    assert [ev.decode_event(bytes(record)) for _, record in handed] == results
    assert [seq for seq, _ in handed] == [event.seq for event in results]


@pytest.mark.parametrize(
    "spoil",
    [
        pytest.param(lambda line: line[:-3] + b'0"}', id="checksum"),
        pytest.param(lambda line: line.replace(b'"seq":3', b'"seq":4', 1), id="seq"),
        pytest.param(lambda line: line[:40] + bytes([line[40] ^ 1]) + line[41:], id="a-byte"),
        pytest.param(lambda line: line[: -len(b',"crc":"00000000"}')] + b"}", id="no-checksum"),
    ],
)
def test_a_line_that_is_not_sound_stops_the_skim(spoil: object) -> None:
    lines = _lines(CONTRACT_LOG)
    lines[3] = spoil(lines[3])  # type: ignore[operator]
    assert skim_lines(lines, {}) is None


def test_a_type_outside_the_vocabulary_stops_the_skim_and_a_custom_one_does_not() -> None:
    custom = Event(seq=len(CONTRACT_LOG), data=ev.Custom(type="x_mine", fields={"a": 1}))
    lines = _lines([*CONTRACT_LOG, custom])
    assert skim_lines(lines, {}) == len(CONTRACT_LOG) + 1
    unknown = lines[-1].replace(b'"x_mine"', b'"mine"')
    body = unknown[: -len(b',"crc":"00000000"}')]
    assert skim_lines([*lines[:-1], body + b',"crc":"%08x"}' % zlib.crc32(body)], {}) is None


def test_the_first_record_must_be_the_header() -> None:
    assert skim_lines(_lines(CONTRACT_LOG)[1:], {}, expected_seq=0) is None


def test_an_index_is_written_then_read_through_and_records_past_it_skimmed(
    tmp_path: Path,
) -> None:
    store = _store(tmp_path, CONTRACT_LOG[:10])
    count, handed = _skim(store)
    assert count == 10
    index_path = tmp_path / ("s1.jsonl" + INDEX_INFIX + INDEX)
    assert index_path.exists()
    with store.writer("s1") as writer:
        writer.append(CONTRACT_LOG[10:], expected_seq=10, sync=True)
    count, handed = _skim(store)
    assert count == len(CONTRACT_LOG)
    assert [ev.decode_event(bytes(record)) for _, record in handed] == _wanted(store)
    # Read through the index: its records are views of the bytes read at once.
    assert any(isinstance(record, memoryview) for _, record in handed)


def test_an_index_whose_bytes_changed_is_not_trusted(tmp_path: Path) -> None:
    store = _store(tmp_path)
    _skim(store)
    path = tmp_path / "s1.jsonl"
    data = bytearray(path.read_bytes())
    # One byte of a tool result's content, flipped: its line no longer
    # matches its checksum, and nothing the index says is handed over.
    at = data.index(b'"content":"') + 12
    data[at] ^= 0x01
    path.write_bytes(bytes(data))
    count, _ = _skim(store)
    assert count is None
    with pytest.raises(CorruptLogError):
        store.read("s1")


def test_an_index_that_is_not_ours_is_neither_read_nor_replaced(tmp_path: Path) -> None:
    store = _store(tmp_path)
    index_path = tmp_path / ("s1.jsonl" + INDEX_INFIX + INDEX)
    index_path.write_bytes(b"my own notes\n")
    count, handed = _skim(store)
    assert count == len(CONTRACT_LOG)
    assert [ev.decode_event(bytes(record)) for _, record in handed] == _wanted(store)
    assert index_path.read_bytes() == b"my own notes\n"


def test_an_index_of_other_types_or_another_session_is_not_used(tmp_path: Path) -> None:
    store = _store(tmp_path)
    _skim(store)
    handed: list[Record] = []
    assert store.skim("s1", {"turn_end": handed.append}, index=INDEX) == len(CONTRACT_LOG)
    assert [ev.decode_event(bytes(record)) for _, record in handed] == [
        event for event in store.read("s1") if event.type == "turn_end"
    ]
    dir_fd = os.open(tmp_path, os.O_RDONLY)
    try:
        index = read_index(dir_fd, "s1.jsonl", INDEX)
    finally:
        os.close(dir_fd)
    assert index is not None
    assert index.types == ["turn_end"]  # written again for what was asked


def test_an_unterminated_last_line_stops_the_skim(tmp_path: Path) -> None:
    store = _store(tmp_path)
    with (tmp_path / "s1.jsonl").open("ab") as f:
        f.write(encode_line(Event(seq=len(CONTRACT_LOG), data=ev.UserMessage(content="hi")))[:-1])
    assert _skim(store, index=None)[0] is None


def test_a_record_this_turnlog_cannot_read_stops_the_skim(tmp_path: Path) -> None:
    # Its checksum matches, so no crash made it: the skim leaves it to the
    # careful read, which reports it, rather than passing over it.
    store = _store(tmp_path, CONTRACT_LOG[:5])
    body = b'{"seq":5,"type":"x_note","data":[1,2,3]'
    with (tmp_path / "s1.jsonl").open("ab") as f:
        f.write(body + b',"crc":"%08x"}\n' % zlib.crc32(body))
    assert _skim(store, index=None)[0] is None
    assert _skim(store)[0] is None


def test_the_sqlite_store_skims_its_rows(tmp_path: Path) -> None:
    # The contract lets a store answer None; the SQL stores answer, as the
    # JSONL store does, and keep no index.
    from turnlog.stores import SQLiteStore

    store = SQLiteStore(tmp_path / "s.db")
    with store.create(CONTRACT_LOG[0]) as writer:
        writer.append(CONTRACT_LOG[1:], expected_seq=1, sync=True)
    handed: list[Record] = []
    count = store.skim("s1", dict.fromkeys(ASKED, handed.append), index=INDEX)
    assert count == len(CONTRACT_LOG)
    assert [ev.decode_event(bytes(record)) for _, record in handed] == [
        event for event in store.read("s1") if event.type in ASKED
    ]
    assert not store.keeps_skim_index


def test_an_empty_file_at_the_index_name_is_replaced(tmp_path: Path) -> None:
    # What a power loss can leave of an unsynced index: ours to write over.
    store = _store(tmp_path)
    index_path = tmp_path / ("s1.jsonl" + INDEX_INFIX + INDEX)
    index_path.write_bytes(b"")
    _skim(store)
    assert index_path.read_bytes().startswith(b'{"format":"turnlog skim index"')


def test_a_fifo_at_the_index_name_is_neither_waited_on_nor_replaced(tmp_path: Path) -> None:
    # Opening a FIFO to read waits for a writer: on the event loop's thread
    # of a first `get_items`, forever. It is not an index, and not ours.
    import stat
    import threading

    store = _store(tmp_path)
    index_path = tmp_path / ("s1.jsonl" + INDEX_INFIX + INDEX)
    os.mkfifo(index_path)
    found: list[tuple[int | None, list[Record]]] = []
    reader = threading.Thread(target=lambda: found.append(_skim(store)), daemon=True)
    reader.start()
    reader.join(10)
    if reader.is_alive():  # let the stuck reader go before failing
        os.close(os.open(index_path, os.O_WRONLY | os.O_NONBLOCK))
        pytest.fail("the skim waited on the FIFO at the index's name")
    ((count, handed),) = found
    assert count == len(CONTRACT_LOG)
    assert [ev.decode_event(bytes(record)) for _, record in handed] == _wanted(store)
    assert stat.S_ISFIFO(index_path.lstat().st_mode)


def test_reading_records_where_the_skim_gives_up_is_the_careful_read(tmp_path: Path) -> None:
    # `read_records` always answers: what the skim had handed over before it
    # gave up is taken back, and the careful read then hands over the same
    # records, or raises what it finds wrong (never a record passed over).
    store = _store(tmp_path, CONTRACT_LOG[:5])
    body = b'{"seq":5,"type":"x_note","data":[1,2,3]'
    with (tmp_path / "s1.jsonl").open("ab") as f:
        f.write(body + b',"crc":"%08x"}\n' % zlib.crc32(body))
    kept: list[Record] = []
    with pytest.raises(TurnlogError) as careful:
        list(store.iter_events("s1"))
    with pytest.raises(type(careful.value)):
        store.read_records("s1", dict.fromkeys(ASKED, kept), index=None)
    assert kept == []


def test_reading_records_of_a_log_written_by_hand_answers_from_the_careful_read(
    tmp_path: Path,
) -> None:
    # Lines with no checksum (a log written by hand) are not skimmed, and
    # still read: the records are the events the careful read gives.
    (tmp_path / "s1.jsonl").write_bytes(
        b"".join(ev.encode_event(event) + b"\n" for event in CONTRACT_LOG)
    )
    store = JSONLStore(tmp_path)
    assert _skim(store, index=None)[0] is None
    kept: list[Record] = []
    assert store.read_records("s1", dict.fromkeys(ASKED, kept)) == len(CONTRACT_LOG)
    want = [event for event in store.read("s1") if event.type in ASKED]
    assert [ev.decode_event(bytes(record)) for _, record in kept] == want
