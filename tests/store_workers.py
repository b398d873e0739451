"""Writer processes for the SQL stores' concurrency tests: one script, any store URL."""

from __future__ import annotations

import subprocess
import sys
import time

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
        assert loser.stderr is not None and "SessionLockedError" in loser.stderr.read()
