"""kill -9 campaign: real writer processes killed at random instants lose nothing acknowledged."""

from __future__ import annotations

import os
import random
import signal
import struct
import time
import zlib
from collections.abc import Sequence
from pathlib import Path

import pytest

import turnlog
from turnlog.events import Event, encode_event
from turnlog.stores import JSONLStore
from workload import drive

ACK = struct.Struct("<qI")  # seq, crc32 of the encoded event


def _child(path: Path, seed: int, durability: str, ack_fd: int) -> None:
    try:
        rng = random.Random(seed)
        with turnlog.open(path, durability=durability) as log:  # type: ignore[arg-type]

            def ack(batch: Sequence[Event], durable: bool) -> None:
                os.write(
                    ack_fd, b"".join(ACK.pack(e.seq, zlib.crc32(encode_event(e))) for e in batch)
                )

            log.subscribe(ack)
            log.recover()
            drive(log, rng, turns=10_000)
    finally:
        os._exit(0)


def _read_all(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, 65536):
        chunks.append(chunk)
    return b"".join(chunks)


def campaign(tmp_path: Path, kills: int, per_session: int, seed: int) -> dict[str, int]:
    rng = random.Random(seed)
    figures = {"kills": 0, "acked": 0, "torn_tails": 0, "repairs": 0}
    store = JSONLStore(tmp_path)
    for session_index in range((kills + per_session - 1) // per_session):
        path = tmp_path / f"kill{session_index}.jsonl"
        turnlog.open(path, create=True).close()
        for _ in range(min(per_session, kills - figures["kills"])):
            durability = rng.choice(["always", "barrier", "none"])
            read_fd, write_fd = os.pipe()
            pid = os.fork()
            if pid == 0:  # pragma: no cover - runs in the child
                os.close(read_fd)
                _child(path, rng.randrange(2**32), durability, write_fd)
            os.close(write_fd)
            time.sleep(rng.uniform(0, 0.015))
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            figures["kills"] += 1
            data = _read_all(read_fd)
            os.close(read_fd)
            acks = [ACK.unpack_from(data, i) for i in range(0, len(data) - ACK.size + 1, ACK.size)]
            figures["acked"] += len(acks)
            # Recovery reads the tail; one full read then checks every
            # acknowledged event (the next child's open checks the whole file
            # again, through the writer's full path).
            recovery = turnlog.recover(store, path.stem)
            figures["torn_tails"] += recovery.torn_tail is not None
            figures["repairs"] += bool(recovery.plan)
            events = store.read(path.stem)
            for seq, crc in acks:
                assert seq < len(events), f"acknowledged seq {seq} lost"
                assert zlib.crc32(encode_event(events[seq])) == crc, f"seq {seq} differs"
            # Idempotent, and the full verdict agrees: nothing left to plan.
            assert turnlog.recover(store, path.stem).plan.events == ()
            assert turnlog.plan(events).events == ()
    return figures


# `make test` kills 100 writers; the thousand (and the ten thousand below)
# are campaigns, run under `-m slow`.
@pytest.mark.parametrize(
    "kills", [100, pytest.param(1000, marks=pytest.mark.slow(reason="a campaign"))]
)
def test_hundreds_of_kills_lose_nothing(tmp_path: Path, kills: int) -> None:
    figures = campaign(tmp_path, kills=kills, per_session=20, seed=1)
    print("kill -9 campaign:", figures)
    assert figures["kills"] == kills
    # The campaign must really crash writers mid-work, not only idle ones.
    assert figures["acked"] > kills
    assert figures["repairs"] > kills // 10


@pytest.mark.slow
@pytest.mark.timeout(3600)
def test_ten_thousand_kills_lose_nothing(tmp_path: Path) -> None:
    figures = campaign(tmp_path, kills=10_000, per_session=100, seed=2)
    print("kill -9 campaign:", figures)
    assert figures["kills"] == 10_000
