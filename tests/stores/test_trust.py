"""Trust before reach: never touch what is not ours, never cut a whole record, one verdict.

Each section pins one item of the "Trust before reach" work; most drive the
command line as a process, the way a user runs it.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import threading
import zlib
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

import turnlog
from builders import (
    assistant,
    call,
    dispatch,
    number,
    result,
    step_end,
    step_start,
    turn_start,
    write_session,
)
from entry_point import cli
from paths import ROOT
from turnlog import events as ev, providers
from turnlog.core.fold import fold
from turnlog.events import MAX_LINE_BYTES, MAX_NESTING_DEPTH, Event
from turnlog.ops.fork import fork_session
from turnlog.stores import JSONLStore, MemoryStore
from turnlog.stores.record import encode_line

SHARED_FORMATS = ROOT.parent / "shared" / "formats"


CRASHED = [
    ev.UserMessage(content="pay"),
    turn_start(1),
    step_start(1, 1),
    assistant(call("a", "read"), call("b", "pay")),
    dispatch("a", "read"),
    result("a", "read"),
    dispatch("b", "pay"),
]


def directory_listing(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir()) if p.is_file()}


# -- 1. a file that is not a turnlog session is never modified --------------------------

FOREIGN = {
    "claude-code": (
        b'{"parentUuid":null,"isSidechain":false,"sessionId":"0b7e","type":"user",'
        b'"message":{"role":"user","content":"hi"},"uuid":"u1"}\n'
        b'{"parentUuid":"u1","sessionId":"0b7e","type":"assistant","message":{"role":"assistant",'
        b'"content":[{"type":"tool_use","id":"toolu_1","name":"Bash","input":{}}]},"uuid":"u2"}\n'
    ),
    "codex": (
        b'{"timestamp":"2025-10-29T00:59:38.317Z","type":"session_meta","payload":{"id":"x"}}\n'
        b'{"timestamp":"2025-10-29T00:59:39.000Z","type":"response_item","payload":'
        b'{"type":"function_call","name":"shell","arguments":"{}","call_id":"call_1"}}\n'
    ),
    "chat": b'{"role":"user","content":"hi"}\n{"role":"assistant","content":"hello"}\n',
    "text": b"just some notes\nwith no JSON at all",
    "bom-header": b"\xef\xbb\xbf" + encode_line(Event(seq=0, data=ev.Session(session_id="x"))),
}

COMMANDS = [
    ["inspect"],
    ["plan"],
    ["recover"],
    ["recover", "--force"],
    ["show"],
    ["verify"],
    ["fork", "--at", "0"],
    ["export", "--to", "anthropic"],
]


@pytest.mark.parametrize("shape", list(FOREIGN))
def test_every_command_refuses_a_foreign_file_and_changes_nothing(
    tmp_path: Path, shape: str
) -> None:
    path = tmp_path / "x.jsonl"
    path.write_bytes(FOREIGN[shape])
    before = directory_listing(tmp_path)
    for command in COMMANDS:
        code, out, err = cli(*command, str(path))
        assert code == 3, (shape, command, code, out, err)
        assert directory_listing(tmp_path) == before, (shape, command)
        if shape in ("claude-code", "codex"):
            text = err + out
            assert f"turnlog doctor {shape}" in text and "turnlog import" in text, (command, text)
    if shape == "bom-header":
        assert "byte-order mark" in cli("recover", str(path))[2]


@pytest.mark.parametrize("shape", list(FOREIGN))
def test_every_library_entry_point_refuses_a_foreign_file(tmp_path: Path, shape: str) -> None:
    path = tmp_path / "x.jsonl"
    path.write_bytes(FOREIGN[shape])
    # A hard link into a store: the same bytes under a session's name.
    store_dir = tmp_path / "store"
    store_dir.mkdir()
    os.link(path, store_dir / "linked.jsonl")
    store = JSONLStore(store_dir)
    attempts = [
        lambda: turnlog.open(path),
        lambda: turnlog.open(path, create=False),
        lambda: turnlog.open(path, create=True),
        lambda: turnlog.open(store, "linked"),
        lambda: turnlog.recover(store, "linked"),
        lambda: turnlog.recover(store, "linked", force=True),
        lambda: store.writer("linked", check="tail"),
        lambda: store.read("linked"),
        lambda: store.read_tail("linked"),
        lambda: fork_session(store, "linked", 0),
    ]
    for attempt in attempts:
        with pytest.raises((turnlog.NotASessionError, turnlog.SessionExistsError)):
            attempt()
    assert path.read_bytes() == FOREIGN[shape]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["store", "x.jsonl"]
    assert sorted(p.name for p in store_dir.iterdir()) == ["linked.jsonl"]
    assert turnlog.inspect(store, "linked").status == "unreadable"


@pytest.mark.skipif(not SHARED_FORMATS.is_dir(), reason="the shared format samples are absent")
@pytest.mark.parametrize("sample", ["claude-code-sample.jsonl", "codex-sample.jsonl"])
def test_real_tool_samples_are_left_alone(tmp_path: Path, sample: str) -> None:
    path = tmp_path / sample
    original = (SHARED_FORMATS / sample).read_bytes()
    path.write_bytes(original)
    for command in (["recover"], ["inspect"], ["verify"]):
        code, _, err = cli(*command, str(path))
        assert code == 3
        if command == ["recover"]:
            assert "turnlog doctor" in err
    assert path.read_bytes() == original
    assert [p.name for p in tmp_path.iterdir()] == [sample]


# -- 2. a complete record is never a torn tail ---------------------------------------------


def crc_line(body: bytes) -> bytes:
    """A complete line with a valid checksum around any bytes turnlog would not write."""
    prefix = body[:-1]
    return prefix + b',"crc":"%08x"}\n' % zlib.crc32(prefix)


def deep(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


COMPLETE_BUT_NOT_UNDERSTOOD = {
    "newer type": b'{"seq":7,"type":"tool_progress","data":{"pct":50}}',
    "invalid utf-8": b'{"seq":7,"type":"user_message","data":{"content":"\xff\xfe"}}',
    "NaN": b'{"seq":7,"type":"x_metric","data":{"v":NaN}}',
    "1e999": b'{"seq":7,"type":"x_metric","data":{"v":1e999}}',
    "lone surrogate": b'{"seq":7,"type":"user_message","data":{"content":"\\ud800"}}',
    "seq -1": b'{"seq":-1,"type":"user_message","data":{"content":"x"}}',
    "deep nesting": b'{"seq":7,"type":"x_deep","data":{"v":' + deep(2000) + b"}}",
}


@pytest.mark.parametrize("case", list(COMPLETE_BUT_NOT_UNDERSTOOD))
def test_a_complete_record_that_is_not_understood_is_refused_not_cut(
    tmp_path: Path, case: str
) -> None:
    path = tmp_path / "s.jsonl"
    write_session(path, CRASHED)
    with open(path, "ab") as f:
        f.write(crc_line(COMPLETE_BUT_NOT_UNDERSTOOD[case]))
    original = path.read_bytes()
    code, out, err = cli("recover", str(path))
    assert code == 3, (out, err)
    code, found_text, _ = cli("inspect", "--json", str(path))
    found = json.loads(found_text)
    assert code == 3 and found["status"] == "corrupt"
    assert found["problems"][0]["line"] == 9 and found["problems"][0]["message"]
    with pytest.raises(turnlog.errors.UnreadableRecordError):
        turnlog.open(path)
    with pytest.raises(turnlog.errors.UnreadableRecordError):
        turnlog.recover(JSONLStore(tmp_path), "s")
    assert path.read_bytes() == original
    assert [p.name for p in tmp_path.iterdir()] == ["s.jsonl"]


def test_a_session_from_a_newer_format_is_refused_whole(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(encode_line(Event(seq=0, data=ev.Session(session_id="s", format=2))))
    original = path.read_bytes()
    code, _, err = cli("recover", str(path))
    assert code == 3 and "format 2" in err and "newer turnlog" in err
    assert path.read_bytes() == original


def test_bytes_that_cannot_be_a_record_are_still_a_torn_tail(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    write_session(path, CRASHED)
    valid = path.stat().st_size
    with open(path, "ab") as f:
        f.write(b'{"seq":7,"type":"tool_res')  # a cut append
    code, out, _ = cli("recover", str(path))
    assert code == 0 and "torn tail of 25 bytes" in out
    assert (tmp_path / f"s.jsonl.torn-{valid}").read_bytes() == b'{"seq":7,"type":"tool_res'


# -- 3. whatever the writer acknowledges, its reader reads ---------------------------------


def _append_sized(store: turnlog.Store, size_bytes: int) -> None:
    with turnlog.open(store, "big", durability="none") as log:
        probe = Event(
            seq=log.next_seq, data=ev.UserMessage(content="x"), ts=turnlog.core.clock.utc_now()
        )
        content = "x" * (size_bytes - len(encode_line(probe)) + 1)
        log.user(content)


@settings(max_examples=12, deadline=None)
@given(st.integers(-24, 24))
def test_write_then_reopen_at_the_line_limit(delta: int) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as directory:
        for store in (JSONLStore(directory), MemoryStore()):
            size = MAX_LINE_BYTES + delta
            try:
                _append_sized(store, size)
            except turnlog.errors.LimitExceededError:
                assert delta > 0, "a line within the limit was refused"
                continue
            assert delta <= 0, "a line over the limit was accepted"
            with turnlog.open(store, "big") as log:
                assert log.next_seq == 2
            assert len(store.read("big")) == 2


@pytest.mark.parametrize("backend", ["jsonl", "memory"])
def test_nesting_limit_is_the_same_on_write_and_read(tmp_path: Path, backend: str) -> None:
    store: turnlog.Store = JSONLStore(tmp_path) if backend == "jsonl" else MemoryStore()
    for depth in (MAX_NESTING_DEPTH - 4, MAX_NESTING_DEPTH - 3, 991, 993, 1200):
        value: object = []
        for _ in range(depth - 1):
            value = [value]
        session_id = f"d{depth}"
        with turnlog.open(store, session_id, durability="none") as log:
            try:
                log.append(ev.Custom(type="x_deep", fields={"v": value}))
            except turnlog.errors.LimitExceededError:
                accepted = False
            else:
                accepted = True
        # The record nests `depth` lists in "v", in "data", in the record: +2.
        assert accepted == (depth + 2 <= MAX_NESTING_DEPTH), depth
        with turnlog.open(store, session_id) as log:
            assert log.next_seq == (2 if accepted else 1)


# -- 4. the checksum cannot be bypassed -----------------------------------------------------


def _flip_figures(path: Path, original: bytes) -> tuple[int, int]:
    store = JSONLStore(path.parent)
    events = store.read(path.stem)
    tried = detected = 0
    for index in range(len(original)):
        for bit in range(8):
            flipped = bytearray(original)
            flipped[index] ^= 1 << bit
            path.write_bytes(bytes(flipped))
            tried += 1
            try:
                scan = store.scan(path.stem)
            except turnlog.TurnlogError:
                detected += 1
                continue
            if scan.problems or scan.events != events:
                detected += 1
    path.write_bytes(original)
    return tried, detected


def test_every_single_bit_flip_is_detected(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    write_session(path, CRASHED[:4])
    original = path.read_bytes()
    tried, detected = _flip_figures(path, original)
    print(f"bit flips, LF file: {detected} of {tried} detected")
    assert tried == 8 * len(original) and detected == tried


def test_a_crlf_copy_is_damage_not_a_file_without_checksums(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    write_session(path, CRASHED[:4])
    crlf = path.read_bytes().replace(b"\n", b"\r\n")
    path.write_bytes(crlf)
    code, _, err = cli("verify", str(path))
    assert code == 3 and "damaged session header" in err
    with pytest.raises(turnlog.CorruptLogError):
        turnlog.open(path)
    assert path.read_bytes() == crlf
    # Flipped bits in a CRLF file cannot pass either: the file never passes.
    store = JSONLStore(tmp_path)
    passed = 0
    for index in range(0, len(crlf), 7):
        flipped = bytearray(crlf)
        flipped[index] ^= 0x04
        path.write_bytes(bytes(flipped))
        try:
            scan = store.scan("s")
        except turnlog.TurnlogError:
            continue
        passed += not scan.problems
    assert passed == 0


@pytest.mark.parametrize(
    "tamper",
    [
        lambda line: line[:-1] + b" \n",  # a trailing space
        lambda line: b'{"crc":"00000000",' + line[1 : line.rindex(b',"crc"')] + b"}\n",
        lambda line: line[: line.rindex(b',"crc"')] + b"}\n",  # the checksum removed
    ],
    ids=["trailing-space", "crc-first", "crc-removed"],
)
def test_tampered_lines_fail_verify_and_fork_refuses_them(tmp_path: Path, tamper: object) -> None:
    path = tmp_path / "s.jsonl"
    write_session(path, [*CRASHED, result("b", "pay"), step_end(1, 1), ev.TurnEnd(turn=1)])
    lines = path.read_bytes().splitlines(keepends=True)
    lines[4] = tamper(lines[4])  # type: ignore[operator]
    path.write_bytes(b"".join(lines))
    tampered = path.read_bytes()
    code, _, _ = cli("verify", "--strict", str(path))
    assert code == 1
    code, _, err = cli("fork", "--at", "9", str(path))
    assert code == 3 and "damaged" in err
    assert not (tmp_path / "s-fork-1.jsonl").exists()
    assert path.read_bytes() == tampered
    # Tampering with the last line makes it a torn tail: a fork cannot reach it.
    write_session(path, [*CRASHED, result("b", "pay"), step_end(1, 1), ev.TurnEnd(turn=1)])
    lines = path.read_bytes().splitlines(keepends=True)
    lines[-1] = tamper(lines[-1])  # type: ignore[operator]
    path.write_bytes(b"".join(lines))
    assert cli("fork", "--at", "10", str(path))[0] in (2, 3)
    assert cli("verify", str(path))[0] == 1


# -- 5. recover refuses what open() refuses -------------------------------------------------


def _damaged(lines: list[bytes], case: str) -> bytes:
    lines = list(lines)
    if case == "garbage line":
        lines.insert(6, b"this is not a record\n")
    elif case == "duplicate line":
        lines.insert(6, lines[5])
    elif case == "swapped lines":
        lines[5], lines[6] = lines[6], lines[5]
    elif case == "wrong seq":
        lines[5] = encode_line(Event(seq=50, data=ev.ToolResult(call_id="a", name="read")))
    elif case == "NUL line":
        lines.insert(6, b"\x00" * 40 + b"\n")
    elif case == "bad checksum mid-turn":
        lines[6] = lines[6].replace(b'"ok"', b'"OK"')
    elif case == "BOM":
        lines[0] = b"\xef\xbb\xbf" + lines[0]
    elif case == "no header":
        del lines[0]
    elif case == "CRLF":
        lines = [line.replace(b"\n", b"\r\n") for line in lines]
    return b"".join(lines)


DAMAGE = [
    "garbage line",
    "duplicate line",
    "swapped lines",
    "wrong seq",
    "NUL line",
    "bad checksum mid-turn",
    "BOM",
    "no header",
    "CRLF",
]


@pytest.mark.parametrize("case", DAMAGE)
def test_recover_refuses_what_open_refuses(tmp_path: Path, case: str) -> None:
    path = tmp_path / "s.jsonl"
    write_session(path, CRASHED)
    damaged = _damaged(path.read_bytes().splitlines(keepends=True), case)
    path.write_bytes(damaged)
    with pytest.raises(turnlog.FormatError):
        turnlog.open(path)
    code, out, err = cli("recover", str(path))
    assert code == 3, (case, out, err)
    assert "hint:" in err
    with pytest.raises(turnlog.FormatError):
        turnlog.recover(JSONLStore(tmp_path), "s")
    assert path.read_bytes() == damaged
    assert [p.name for p in tmp_path.iterdir()] == ["s.jsonl"]


def test_damage_before_the_window_is_verify_s_to_find(tmp_path: Path) -> None:
    # The documented boundary: recovery reads the tail only, so damage in a
    # closed turn long before it is found by `verify`, not by `recover`.
    path = tmp_path / "s.jsonl"
    items = [
        turn_start(1),
        step_start(1, 1),
        assistant(content="old"),
        step_end(1, 1),
        ev.TurnEnd(turn=1),
        *CRASHED[1:],
    ]
    items[5] = ev.TurnStart(turn=2, revivals=0)  # the stamp lets the tail stop here
    write_session(path, items)
    lines = path.read_bytes().splitlines(keepends=True)
    lines[3] = lines[3].replace(b"old", b"OLD")
    path.write_bytes(b"".join(lines))
    assert cli("verify", str(path))[0] == 1
    assert cli("recover", str(path))[0] == 0


# -- 6. one verdict --------------------------------------------------------------------------


def test_plan_and_recover_agree_on_a_reused_call_id(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    write_session(
        path,
        [
            turn_start(1),
            step_start(1, 1),
            assistant(call("a", "read")),
            dispatch("a", "read"),
            result("a", "read"),
            step_end(1, 1),
            ev.TurnEnd(turn=1),
            turn_start(2),
            step_start(2, 1),
            assistant(call("a", "read"), call("b", "pay")),
            dispatch("b", "pay"),
        ],
    )
    code, out, _ = cli("plan", "--json", str(path))
    assert code == 0
    planned = [
        r["data"]["call_id"] for r in json.loads(out)["repairs"] if r["type"] == "tool_result"
    ]
    assert planned == ["a", "b"]
    _, found, _ = cli("inspect", "--json", str(path))
    assert [c["call_id"] for c in json.loads(found)["owed_calls"]] == ["a", "b"]
    _code, out, _ = cli("recover", "--json", str(path))
    recovered = [
        e["data"]["call_id"] for e in json.loads(out)["appended"] if "call_id" in e["data"]
    ]
    assert recovered == planned
    assert turnlog.plan(JSONLStore(tmp_path).read("s")).events == ()


# -- 7. every recovered log exports valid for all four providers ----------------------------


def test_a_result_recovery_appends_late_is_placed_beside_its_call(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    write_session(
        path,
        [
            ev.UserMessage(content="go"),
            turn_start(1),
            step_start(1, 1),
            assistant(call("early", "read")),
            step_end(1, 1),  # closed with "early" unanswered (another writer did this)
            step_start(1, 2),
            assistant(call("late", "pay")),
            dispatch("late", "pay"),
        ],
    )
    assert cli("recover", str(path))[0] == 0
    for provider in providers.PROVIDERS:
        code, _out, err = cli("export", "--to", provider, "--validate", str(path))
        assert code == 0, (provider, err)
    messages = fold(JSONLStore(tmp_path).read("s")).messages
    roles = [(m.role, m.call_id) for m in messages]
    assert roles.index(("tool", "early")) == roles.index(("assistant", None)) + 1 or roles[
        roles.index(("tool", "early")) - 1
    ] == ("assistant", None)
    early_asker = next(
        i for i, m in enumerate(messages) if m.tool_calls and m.tool_calls[0].id == "early"
    )
    assert messages[early_asker + 1].call_id == "early"


# -- 8. live files are not corrupt ------------------------------------------------------------

LIVE_WRITER = """
import sys, time, turnlog
path, rounds = sys.argv[1], int(sys.argv[2])
with turnlog.open(path, durability="none") as log:
    print("ready", flush=True)
    for i in range(rounds):
        log.user("x" * 200_000)
        time.sleep(0.002)
    sys.stdin.readline()
"""


def test_reading_a_live_file_never_reports_damage(tmp_path: Path) -> None:
    path = tmp_path / "live.jsonl"
    turnlog.open(path, create=True).close()
    writer = subprocess.Popen(
        [sys.executable, "-c", LIVE_WRITER, str(path), "600"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert writer.stdout is not None and writer.stdout.readline().strip() == "ready"
        store = JSONLStore(tmp_path)
        reads = in_flight = 0
        while path.stat().st_size < 600 * 200_000:
            if reads % 20 == 0:
                scan = store.scan("live")
                assert scan.problems == [] and scan.refusal is None, scan.problems
                in_flight += scan.in_flight_bytes > 0
            tail = store.read_tail("live")
            assert tail.torn is None and not tail.problems, tail.problems
            reads += 1
        code, out, _ = cli("verify", "--json", str(path))
        assert code == 0, out
    finally:
        assert writer.stdin is not None
        writer.stdin.write("\n")
        writer.stdin.close()
        writer.wait(timeout=30)
    print(f"live reads: {reads}, of which caught a record in flight: {in_flight}")
    assert reads > 10


# -- 9. the writer handle is safe to share between threads -------------------------------------


def test_sixteen_threads_of_parallel_dispatches(tmp_path: Path) -> None:
    per_thread = 4
    calls = [call(f"t{t}c{i}", "work") for t in range(16) for i in range(per_thread)]
    with turnlog.open(tmp_path / "t.jsonl", durability="always") as log:
        log.user("fan out")
    with turnlog.open(tmp_path / "t.jsonl", durability="always") as log, log.turn(), log.step():
        log.assistant("fan out", calls)
        barrier = threading.Barrier(16)
        errors: list[BaseException] = []

        def worker(t: int) -> None:
            try:
                barrier.wait()
                for i in range(per_thread):
                    with log.dispatch(calls[t * per_thread + i]) as running:
                        running.result(f"done {t}.{i}")
            except BaseException as exc:  # pragma: no cover - reported below
                errors.append(exc)

        threads = [threading.Thread(target=worker, args=(t,)) for t in range(16)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert errors == []
    events = JSONLStore(tmp_path).read("t")
    assert [e.seq for e in events] == list(range(len(events)))
    dispatched: dict[str, int] = {}
    for event in events:
        if isinstance(event.data, ev.ToolDispatch):
            dispatched[event.data.call_id] = event.seq
        elif isinstance(event.data, ev.ToolResult):
            assert dispatched[event.data.call_id] < event.seq
    assert len(dispatched) == 64
    assert cli("verify", "--strict", str(tmp_path / "t.jsonl"))[0] == 0


# -- 10. whole-store commands survive odd entries -------------------------------------------------


def test_odd_entries_are_reported_and_the_rest_goes_on(tmp_path: Path) -> None:
    write_session(tmp_path / "good.jsonl", CRASHED)
    os.mkfifo(tmp_path / "fifo.jsonl")
    (tmp_path / "adir.jsonl").mkdir()
    os.symlink(tmp_path / "good.jsonl", tmp_path / "link.jsonl")
    if os.geteuid() == 0:
        os.mknod(tmp_path / "dev.jsonl", stat.S_IFCHR | 0o600, os.makedev(1, 3))
    code, out, _ = cli("ls", "--json", "--store", str(tmp_path), timeout_s=30)
    rows = {row["session_id"]: row["status"] for row in json.loads(out)["sessions"]}
    assert code == 0 and rows.pop("good") == "interrupted"
    assert set(rows.values()) == {"unreadable"}
    code, out, _ = cli("verify", "--json", "--store", str(tmp_path), timeout_s=30)
    reports = {r["session_id"]: r for r in json.loads(out)["sessions"]}
    assert code == 1 and reports["good"]["ok"]
    messages = {sid: r["problems"][0]["message"] for sid, r in reports.items() if not r["ok"]}
    assert "named pipe" in messages["fifo"] and "directory" in messages["adir"]
    assert "symbolic link" in messages["link"]
    if "dev" in messages:
        assert "device" in messages["dev"]
    code, _, err = cli("inspect", str(tmp_path / "fifo.jsonl"), timeout_s=30)
    assert code == 3 and "named pipe" in err + _


# -- 11. a signal during a write cannot corrupt the session ---------------------------------------


class InterruptAfterWrite(turnlog.stores.fileio.FileIO):
    """Writes, then raises as a Ctrl-C handler would, `after` writes in."""

    def __init__(self, after: int) -> None:
        self.after = after
        self.writes = 0

    def write(self, fd: int, data: bytes) -> int:
        written = super().write(fd, data)
        self.writes += 1
        if self.writes == self.after:
            raise KeyboardInterrupt
        return written


@pytest.mark.parametrize("after", range(2, 9))
def test_an_interrupt_right_after_a_write_leaves_a_sound_session(
    tmp_path: Path, after: int
) -> None:
    store = JSONLStore(tmp_path, io=InterruptAfterWrite(after))
    with pytest.raises(KeyboardInterrupt), turnlog.open(store, "s", create=True) as log:
        log.user("pay")
        with log.turn(), log.step():
            message = log.assistant("paying", [call("p", "pay")])
            with log.dispatch(message.data.tool_calls[0]) as running:  # type: ignore[union-attr]
                running.result("paid")
    events = JSONLStore(tmp_path).read("s")
    assert [e.seq for e in events] == list(range(len(events)))
    assert turnlog.verify.verify_session(JSONLStore(tmp_path), "s", strict=True).ok
    with turnlog.open(tmp_path / "s.jsonl") as log:
        log.recover()
    assert cli("verify", str(tmp_path / "s.jsonl"))[0] == 0


SIGINT_WRITER = """
import sys, turnlog
with turnlog.open(sys.argv[1], durability="none") as log:
    print("ready", flush=True)
    while True:
        with log.turn(), log.step():
            m = log.assistant("", [turnlog.ToolCall(id="c", name="t")])
            with log.dispatch(m.data.tool_calls[0]) as running:
                running.result("r" * 8_000_000)
"""


def test_ctrl_c_during_eight_megabyte_results(tmp_path: Path) -> None:
    import random
    import signal
    import time

    rng = random.Random(11)
    for run in range(10):
        path = tmp_path / f"c{run}.jsonl"
        turnlog.open(path, create=True).close()
        writer = subprocess.Popen(
            [sys.executable, "-c", SIGINT_WRITER, str(path)],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        assert writer.stdout is not None and writer.stdout.readline().strip() == "ready"
        time.sleep(rng.uniform(0.05, 0.4))
        writer.send_signal(signal.SIGINT)
        writer.wait(timeout=60)
        code, out, err = cli("verify", str(path))
        assert code == 0, (run, out, err)


# -- 12. "did not run" only where the log proves the writer dispatches ----------------------------


def test_closing_a_step_with_calls_owed_is_refused_and_never_called_not_started(
    tmp_path: Path,
) -> None:
    path = tmp_path / "s.jsonl"
    with turnlog.open(path) as log:
        log.user("charge")
    with pytest.raises(turnlog.WriteOrderError), turnlog.open(path) as log, log.turn():
        with log.step():
            log.assistant("", [call("x", "charge")])
        charge_the_card = pytest.fail  # a program that runs it here never gets here
        charge_the_card("the step's end must refuse")
    events = JSONLStore(tmp_path).read("s")
    results = [e.data for e in events if isinstance(e.data, ev.ToolResult)]
    assert [(r.call_id, r.risk, r.rule) for r in results] == [("x", "tool_outcome_unknown", "U3")]
    assert not any(isinstance(e.data, ev.StepEnd) and e.data.outcome == "ok" for e in events)


def test_a_result_without_a_dispatch_is_refused_unless_said_so(tmp_path: Path) -> None:
    with turnlog.open(tmp_path / "s.jsonl") as log:
        log.user("run t")
    with turnlog.open(tmp_path / "s.jsonl") as log, log.turn():
        log.assistant("", [call("x", "t")])
        with pytest.raises(turnlog.WriteOrderError):
            log.append(ev.ToolResult(call_id="x", name="t", content="ran"))
        log.append(ev.ToolResult(call_id="x", name="t", content="ran"), allow_undispatched=True)


def test_a_turn_showing_a_result_without_dispatch_proves_nothing_about_other_calls() -> None:
    log = number(
        [
            turn_start(1),
            step_start(1, 1),
            assistant(call("a"), call("b")),
            result("a"),  # written by something that does not dispatch
            step_end(1, 1),
            step_start(1, 2),
            assistant(call("c"), call("d")),
            dispatch("c"),
        ]
    )
    rules = {
        e.data.call_id: e.data.rule
        for e in turnlog.plan(log).events
        if isinstance(e.data, ev.ToolResult)
    }
    assert rules == {"b": "R4", "c": "R1", "d": "R4"}


README_SNIPPET = """
import sys, turnlog
def pay(invoice):
    return f"paid {invoice}"
with turnlog.open(sys.argv[1]) as log:
    log.user("Pay the invoice")
    with log.turn(), log.step():
        msg = log.assistant("Paying.", [turnlog.ToolCall(id="c1", name="pay", arguments={"id": 7})])
        with log.dispatch(msg.data.tool_calls[0], idempotency="destructive") as call:
            call.result(pay(7))
"""


def test_the_readme_snippet_runs_twice_on_one_session(tmp_path: Path) -> None:
    path = tmp_path / "run-1.jsonl"
    for _ in range(2):
        done = subprocess.run(
            [sys.executable, "-c", README_SNIPPET, str(path)], capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr
    assert cli("verify", "--strict", str(path))[0] == 0


# -- 13. smaller ones ---------------------------------------------------------------------------


def test_a_header_only_session_is_empty(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    turnlog.open(path, create=True).close()
    found = turnlog.inspect(path)
    assert (found.status, found.revivable, found.reason) == ("empty", False, "empty")
    with turnlog.open(path) as log:
        assert turnlog.revive(log).reason == "empty"
        assert log.next_seq == 1


def test_holder_pid_is_null_when_no_one_holds(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    write_session(path, CRASHED)
    _code, out, _ = cli("inspect", "--json", str(path))
    assert json.loads(out)["holder_pid"] is None


@pytest.mark.parametrize("leftover", [b"", b'{"seq":0,"type":"sess', b"\x00" * 64])
def test_a_crash_during_creation_leaves_an_id_that_can_be_created_again(
    tmp_path: Path, leftover: bytes
) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(leftover)
    assert turnlog.inspect(path).status == "empty"
    assert cli("recover", str(path))[0] == 3
    with pytest.raises(turnlog.errors.UnfinishedSessionError):
        turnlog.open(path, create=False)
    with turnlog.open(path) as log:
        log.user("hello")
    assert [e.type for e in JSONLStore(tmp_path).read("s")] == ["session", "user_message"]
    sidecars = list(tmp_path.glob("s.jsonl.torn-*"))
    assert [p.read_bytes() for p in sidecars] == ([leftover] if leftover else [])
    path.write_bytes(leftover)
    turnlog.open(path, create=True).close()
    assert len(JSONLStore(tmp_path).read("s")) == 1


def test_enospc_while_quarantining_leaves_no_empty_sidecar(tmp_path: Path) -> None:
    import errno

    from fileio_doubles import FaultyIO

    path = tmp_path / "s.jsonl"
    write_session(path, CRASHED)
    with open(path, "ab") as f:
        f.write(b'{"seq":7,"ty')
    for _ in range(3):
        store = JSONLStore(tmp_path, io=FaultyIO("write", 1, forever=True, code=errno.ENOSPC))
        with pytest.raises(turnlog.errors.StoreIOError) as info:
            turnlog.recover(store, "s")
        assert info.value.errno == errno.ENOSPC
    assert [p.name for p in tmp_path.iterdir()] == ["s.jsonl"]


def test_a_short_write_carries_enospc(tmp_path: Path) -> None:
    import errno

    from fileio_doubles import FaultyIO

    turnlog.open(tmp_path / "s.jsonl").close()
    store = JSONLStore(tmp_path, io=FaultyIO("short", 1))
    with turnlog.open(store, "s") as log, pytest.raises(turnlog.errors.StoreIOError) as info:
        log.user("x" * 1000)
    assert info.value.errno == errno.ENOSPC


def test_runaway_and_nul_paths_are_clear_usage_errors(tmp_path: Path) -> None:
    deep_path = tmp_path.joinpath(*["a"] * 3000)
    with pytest.raises(turnlog.UsageError):
        turnlog.open(deep_path / "s.jsonl")
    with pytest.raises(turnlog.UsageError):
        turnlog.open(str(tmp_path / "a\x00b" / "s.jsonl"))
    code, _, err = cli("inspect", str(deep_path / "s.jsonl"))
    assert code in (2, 3) and "error:" in err


def test_a_location_is_printed_once(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    write_session(path, CRASHED)
    damaged = _damaged(path.read_bytes().splitlines(keepends=True), "garbage line")
    path.write_bytes(damaged)
    _, _, err = cli("recover", str(path))
    first = err.splitlines()[0]
    assert first.count("line ") == 1 and first.count("byte ") == 1, first


def test_plan_check_on_a_live_session_says_running(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    with turnlog.open(path) as log:
        log.append(ev.TurnStart(turn=1, revivals=0))
        code, _out, err = cli("plan", "--check", str(path))
    assert code == 4 and "running" in err


@pytest.mark.parametrize("argument", ["directory", "not-jsonl"])
def test_path_misuse_is_a_usage_error(tmp_path: Path, argument: str) -> None:
    (tmp_path / "notes.txt").write_text("hi")
    path = tmp_path if argument == "directory" else tmp_path / "notes.txt"
    for command in (["inspect"], ["recover"], ["show"]):
        assert cli(*command, str(path))[0] == 2
