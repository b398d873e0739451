"""Writers for the SQL stores' concurrency tests: one script, any store URL, and the
stale-writer check both stores share."""

from __future__ import annotations

import subprocess
import sys
import time
from typing import Any

# argv: URL SESSION DURABILITY COUNT [hold]. Appends COUNT user messages; with
# "hold", opens a turn, says "ready" and holds the writer until a line on stdin.
WORKER = """
import sys, turnlog
store, _ = turnlog.open_store(sys.argv[1])
with turnlog.open(store, sys.argv[2], durability=sys.argv[3]) as log:
    for i in range(int(sys.argv[4])):
        log.user(f"{sys.argv[2]} {i}")
    if len(sys.argv) > 5:
        log.append(turnlog.TurnStart(turn=1, revivals=0))
        print("ready", flush=True)
        sys.stdin.readline()
"""


def worker(
    url: str, session_id: str, durability: str, count: int, *, hold: bool = False
) -> subprocess.Popen[str]:
    args = [sys.executable, "-c", WORKER, url, session_id, durability, str(count)]
    return subprocess.Popen(
        [*args, "hold"] if hold else args,
        stdin=subprocess.PIPE if hold else None,
        stdout=subprocess.PIPE if hold else None,
        stderr=subprocess.PIPE if hold else None,
        text=True,
    )


def race_for_one_session(url: str, session_id: str, count: int, racers: int = 8) -> None:
    """`racers` processes open one session at once: exactly one gets the writer
    (and says "ready"), every other one exits refused with SessionLockedError.
    Waits on the processes, not on a clock, so a slow machine cannot fail it."""
    procs = [worker(url, session_id, "none", count, hold=True) for _ in range(racers)]
    deadline = time.monotonic() + 120
    while sum(p.poll() is not None for p in procs) < racers - 1:
        assert time.monotonic() < deadline, [p.poll() for p in procs]
        time.sleep(0.05)
    (holder,) = [p for p in procs if p.poll() is None]
    assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
    assert holder.stdin is not None
    holder.stdin.write("\n")
    holder.stdin.close()
    assert holder.wait(timeout=60) == 0
    for loser in procs:
        if loser is holder:
            continue
        assert loser.returncode != 0
        assert loser.stderr is not None
        refusal = loser.stderr.read()
        assert "SessionLockedError" in refusal
        # Another process holds it, and is not mistaken for the loser itself.
        assert "being written by" in refusal and "this process" not in refusal, refusal


def stale_writers_conflict_and_change_nothing(store: Any) -> None:
    """Two writers forced past the lock: whichever appends second, with a seq
    the other took, is refused whole, by the one-event path (no tail fact
    moves) and by the batch path (a turn boundary moves one) alike."""
    import pytest

    import turnlog
    from turnlog import events as ev
    from turnlog.events import Event

    items: list[ev.EventData] = [
        ev.Session(session_id="stale"),
        ev.UserMessage(content="pay"),
        ev.TurnStart(turn=1, revivals=0),
        ev.StepStart(turn=1, step=1),
        ev.StepEnd(turn=1, step=1, outcome="ok"),
        ev.TurnEnd(turn=1, steps=1),
    ]
    log = [Event(seq=seq, data=data) for seq, data in enumerate(items)]
    with store.create(log[0]) as writer:
        writer.append(log[1:3], expected_seq=1, sync=True)
    stale = store.writer("stale", force=True)
    with store.writer("stale", force=True) as fresh:
        fresh.append(log[3:4], expected_seq=3, sync=True)
    try:
        with pytest.raises(turnlog.errors.SeqConflictError) as one:
            stale.append(log[3:4], expected_seq=3, sync=True)
        assert (one.value.expected, one.value.actual) == (3, 4)
        with pytest.raises(turnlog.errors.SeqConflictError) as batch:
            stale.append(log[3:6], expected_seq=3, sync=True)
        assert (batch.value.expected, batch.value.actual) == (3, 4)
    finally:
        stale.close()
    assert store.read("stale") == log[:4]
    assert turnlog.inspect(store, "stale").status == "interrupted"  # the turn is still open
    # A writer opened mid-turn continues from the events, not from the tail
    # facts stored at the last boundary.
    with store.writer("stale") as writer:
        assert writer.next_seq == 4
        writer.append(log[4:6], expected_seq=4, sync=True)
    assert store.read("stale") == log
