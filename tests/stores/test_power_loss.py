"""Power-loss model: crash images that keep synced bytes and mangle the rest.

A recording I/O layer logs every write, fsync and truncate the store makes.
Replaying that log gives, at every point, what was durable (as of the last
fsync of each file) and what was only written. A crash image keeps the
durable bytes and drops, cuts, zeroes or garbles the unsynced suffix, as
filesystems do after a power cut. Every image must load with every event
whose durability was promised, or be refused as corrupt: never wrong.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

import turnlog
from fileio_doubles import RecordingIO
from turnlog.events import Event, encode_event
from turnlog.stores import JSONLStore
from turnlog.stores.jsonl import scan_lines
from workload import drive

SESSION = "power"
FILE = SESSION + ".jsonl"


def record_run(
    tmp_path: Path, durability: str, seed: int
) -> tuple[RecordingIO, list[Event], list[tuple[int, int]]]:
    """Run a workload, crash it with a torn tail, reopen and go on; return the
    op log, every acknowledged event, and (ops done, seq promised durable) pairs."""
    rng = random.Random(seed)
    io = RecordingIO()
    store = JSONLStore(tmp_path, io=io)
    acked: list[Event] = []
    promises: list[tuple[int, int]] = []

    def on_append(batch: Sequence[Event], durable: bool) -> None:
        acked.extend(batch)
        if durable:
            promises.append((len(io.ops), batch[-1].seq))

    with turnlog.open(store, SESSION, create=True, durability=durability) as log:  # type: ignore[arg-type]
        promises.append((len(io.ops), 0))
        log.subscribe(on_append)
        drive(log, rng, turns=4)
        # Leave a turn open, as a crash would.
        log.append(turnlog.events.TurnStart(turn=99))
        log.append(turnlog.AssistantMessage(tool_calls=[turnlog.ToolCall(id="open", name="pay")]))
        log.append(turnlog.events.ToolDispatch(call_id="open", name="pay"))
    promises.append((len(io.ops), acked[-1].seq))
    # A torn record left by the crash, durable on disk as garbage.
    garbage = b'{"seq":%d,"type":"user_mes\x00\x00\x00' % (acked[-1].seq + 1)
    with open(tmp_path / FILE, "ab") as f:
        f.write(garbage)
    io.ops += [("write", FILE, garbage), ("fsync", FILE)]
    with turnlog.open(store, SESSION, durability=durability) as log:  # type: ignore[arg-type]
        assert log.torn_tail is not None
        log.subscribe(on_append)
        log.recover()
        drive(log, rng, turns=3)
    header = store.read(SESSION)[0]
    return io, [header, *acked], promises


def images(io: RecordingIO, rng: random.Random) -> Iterator[tuple[int, bytes, bytes]]:
    """(ops done, image of the session file, what was synced) for a crash after every op."""
    current = bytearray()
    durable = b""
    for done, op in enumerate(io.ops, start=1):
        kind, name = op[0], op[1]
        if name != FILE:
            continue
        if kind == "write":
            current += op[2]  # type: ignore[operator]
        elif kind == "truncate":
            del current[op[2] :]  # type: ignore[misc]
        elif kind == "fsync":
            durable = bytes(current)
        now = bytes(current)
        bases = [durable] if now.startswith(durable) else [durable, now]
        for base in bases:
            suffix = now[len(base) :] if now.startswith(base) else b""
            yield done, base, durable
            if not suffix:
                continue
            n = len(suffix)
            yield done, base + suffix, durable
            for _ in range(3):
                yield done, base + suffix[: rng.randrange(1, n + 1)], durable
            yield done, base + b"\x00" * n, durable
            k = rng.randrange(n)
            yield done, base + suffix[:k] + b"\x00" * (n - k), durable
            mangled = bytearray(suffix)
            mangled[rng.randrange(n)] ^= 1 << rng.randrange(8)
            yield done, base + bytes(mangled), durable
            yield done, base + bytes(rng.randrange(256) for _ in range(min(n, 64))), durable


def _common_prefix_bytes(a: bytes, b: bytes) -> int:
    n = min(len(a), len(b))
    for i in range(n):
        if a[i] != b[i]:
            return i
    return n


@pytest.mark.parametrize("durability", ["barrier", "always"])
def test_crash_images_keep_every_durable_event(tmp_path: Path, durability: str) -> None:
    figures = {"images": 0, "loaded": 0, "refused_corrupt": 0, "opened_for_write": 0}
    for seed in range(12):
        run_dir = tmp_path / f"{durability}-{seed}"
        io, truth, promises = record_run(run_dir, durability, seed)
        truth_bytes = [encode_event(e) for e in truth]
        rng = random.Random(seed)
        image_dir = run_dir / "images"
        for done, image, synced in images(io, rng):
            figures["images"] += 1
            promised = max((seq for ops, seq in promises if ops <= done), default=-1)
            scan = scan_lines(iter(image.splitlines(keepends=True)), checksummed=True)
            if scan.corrupt:
                figures["refused_corrupt"] += 1
                # The refusal points at bytes that were never synced: every
                # line before it is byte for byte what was made durable.
                assert scan.refusal is not None and scan.refusal.offset is not None
                intact = _common_prefix_bytes(image, synced)
                assert scan.refusal.offset >= image.rfind(b"\n", 0, intact) + 1, (
                    done,
                    scan.refusal,
                )
                if figures["refused_corrupt"] % 10 == 1:
                    # Refused clearly, with where, and the file left as it was.
                    image_dir.mkdir(exist_ok=True)
                    (image_dir / FILE).write_bytes(image)
                    # Reopening reads the tail: damage inside it refuses at
                    # once, damage before it as soon as the whole log is read.
                    with (
                        pytest.raises(turnlog.CorruptLogError) as info,
                        turnlog.open(JSONLStore(image_dir), SESSION) as log,
                    ):
                        assert log.messages is not None
                    assert info.value.line is not None and info.value.offset is not None
                    assert (image_dir / FILE).read_bytes() == image
                continue
            figures["loaded"] += 1
            loaded = [encode_event(e) for e in scan.events]
            assert len(loaded) > promised, f"durable seq {promised} lost after op {done}"
            assert loaded == truth_bytes[: len(loaded)], f"wrong events after op {done}"
            if figures["images"] % 97 == 0:
                # Through the real store: the writer quarantines and reopens.
                image_dir.mkdir(exist_ok=True)
                (image_dir / FILE).write_bytes(image)
                for old in image_dir.glob(FILE + ".torn-*"):
                    old.unlink()
                with turnlog.open(JSONLStore(image_dir), SESSION) as log:
                    assert log.next_seq == len(loaded)
                    log.recover()
                figures["opened_for_write"] += 1
    print(f"power-loss model ({durability}):", figures)
    assert figures["images"] >= 5000
    assert figures["loaded"] > figures["refused_corrupt"]
