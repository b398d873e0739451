"""The store contract's multi-process part: a long-lived process holding the store open
while writer processes come and go, crash with SIGKILL, revive and carry on."""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import msgspec
import pytest

from turnlog.stores.base import Store
from turnlog.testing.support import ContractBase

# A writer: opens (or creates) one session, revives it first if an earlier
# writer crashed in it, then runs ROUNDS turns of one dispatched call each.
# After every call that returned it prints "ack <last seq> <type>": what the
# store acknowledged. A tool body sleeps a little, so a kill lands inside a
# call as often as between events.
_WRITER = """
import random, sys, time, turnlog
from turnlog import events as ev
url, session_id, rounds, seed = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
rng = random.Random(seed)
store, _ = turnlog.open_store(url)

def ack(log):
    print("ack", log.next_seq - 1, flush=True)

with turnlog.open(store, session_id) as log:
    ack(log)
    if log.verdict().open_turn is not None:
        turnlog.revive(log, max_revivals=1_000_000)
        ack(log)
    for i in range(rounds):
        log.user(f"{session_id} round {i}")
        ack(log)
        with log.turn():
            ack(log)
            with log.step():
                call = turnlog.ToolCall(id=f"{seed}-{i}", name="pay", arguments={"n": i})
                log.assistant("paying", [call])
                ack(log)
                with log.dispatch(call, idempotency="destructive") as running:
                    ack(log)
                    time.sleep(rng.random() * 0.004)
                    running.result("paid")
                ack(log)
            ack(log)
            log.assistant("done")
        ack(log)
print("exit", flush=True)
"""

# A fresh process's view of one session: how many events, and the type of each.
_READER = """
import sys, turnlog
store, _ = turnlog.open_store(sys.argv[1])
print(" ".join(type(e.data).__name__ for e in store.read(sys.argv[2])), flush=True)
"""


class ProcessTally(msgspec.Struct, kw_only=True):
    """What a run of writers beside a long-lived process saw."""

    writers: int = 0
    kills: int = 0
    acknowledged_checked: int = 0
    lost: int = 0
    stale_reads: int = 0


class ProcessContract(ContractBase):
    """A supervisor's shape: this test process holds the store open (two store
    objects, a writer handle on a session of its own, reads between) while
    writers come and go in other processes. After every writer exit, this
    process and a fresh one see every event a writer's call acknowledged, and
    no read here after an acknowledgement misses it."""

    #: Writers per contract test; the slow campaign runs many more.
    writer_processes = 6

    def process_url(self, store: Store) -> str:
        """The URL another process opens this store by."""
        return store.url if ":" in store.url else f"jsonl:{store.url}"

    def reopen(self, store: Store) -> Store:
        """A second store object on the same store, in this process."""
        import turnlog

        reopened, _ = turnlog.open_store(self.process_url(store))
        return reopened

    def test_a_long_lived_process_sees_every_write_of_writers_that_come_and_go(
        self, store: Store
    ) -> None:
        if not self.process_safe:
            pytest.skip("the store lives in this process only")
        tally = run_writers_beside(self, store, writers=self.writer_processes, seed=1)
        assert tally.lost == 0 and tally.stale_reads == 0, tally
        assert tally.kills > 0 and tally.acknowledged_checked > 0, tally

    def test_a_sweeper_in_a_long_lived_process_beside_writers(self, store: Store) -> None:
        if not self.process_safe:
            pytest.skip("the store lives in this process only")
        tally = run_writers_beside(
            self, store, writers=self.writer_processes, seed=2, sessions=2, sweeper=True
        )
        assert tally.lost == 0 and tally.stale_reads == 0, tally


def run_writers_beside(
    contract: ProcessContract,
    store: Store,
    *,
    writers: int,
    seed: int,
    sessions: int = 1,
    sweeper: bool = False,
) -> ProcessTally:
    """Run `writers` writer processes one after another on `sessions` sessions,
    killing about half with SIGKILL at a random acknowledgement, while this
    process holds the store open (and, with `sweeper`, sweeps it in a loop on
    a thread). Checks every acknowledged event after each writer and returns
    the counts; a malformed or failed write raises at once."""
    import turnlog
    from turnlog.ops.sweep import sweep

    rng = random.Random(seed)
    url = contract.process_url(store)
    second = contract.reopen(store)
    tally = ProcessTally()
    acked: dict[str, int] = {}
    stop = threading.Event()
    swept_errors: list[BaseException] = []

    def sweep_loop() -> None:
        while not stop.is_set():
            try:
                sweep(store)
            except BaseException as exc:  # reported by the caller
                swept_errors.append(exc)
                return
            stop.wait(0.005)

    sweeping = threading.Thread(target=sweep_loop, daemon=True) if sweeper else None
    try:
        with turnlog.open(second, "supervisor") as own:
            own.user("watching")
            if sweeping is not None:
                sweeping.start()
            for index in range(writers):
                session_id = f"w{index % sessions}"
                kill_after = rng.randrange(1, 24) if rng.random() < 0.5 else None
                known = _run_writer(
                    url, session_id, seed * 1000 + index, kill_after, (store, second), tally
                )
                tally.writers += 1
                tally.kills += int(known.killed)
                acked[session_id] = max(acked.get(session_id, -1), known.last_acked)
                own.user(f"writer {index} ended")
                for view in (store, second, None):
                    _check(view, url, session_id, known.last_acked, tally)
            stop.set()
            if sweeping is not None:
                sweeping.join(timeout=120)
        assert not swept_errors, swept_errors
    finally:
        stop.set()
        second.close()
    # With this process's second store object dropped, a fresh process still
    # sees everything (closing the last connection here must remove nothing).
    for session_id, last in acked.items():
        _check(None, url, session_id, last, tally)
    return tally


def _check(view: Store | None, url: str, session_id: str, last: int, tally: ProcessTally) -> None:
    """Count the acknowledged events 0..`last` that `view` (None: a fresh
    process) does not hold."""
    held = len(_types(view, url, session_id))
    tally.acknowledged_checked += last + 1
    tally.lost += max(0, last + 1 - held)


class _Writer(msgspec.Struct):
    last_acked: int = -1
    killed: bool = False


def _run_writer(
    url: str,
    session_id: str,
    seed: int,
    kill_after: int | None,
    views: tuple[Store, Store],
    tally: ProcessTally,
) -> _Writer:
    """One writer process, read while it runs: after each acknowledgement, a
    read in this process must already hold that event."""
    rounds = 3
    known = _Writer()
    with _process(_WRITER, url, session_id, str(rounds), str(seed)) as proc:
        assert proc.stdout is not None
        acks = 0
        for line in proc.stdout:
            word, *rest = line.split()
            if word != "ack":
                continue
            known.last_acked = int(rest[0])
            acks += 1
            if acks % 3 == 0:
                view = views[acks % 2]
                if len(view.read(session_id)) <= known.last_acked:
                    tally.stale_reads += 1
            if kill_after is not None and acks >= kill_after:
                proc.send_signal(signal.SIGKILL)
                known.killed = True
                break
        proc.wait(timeout=120)
        assert proc.stderr is not None
        errors = proc.stderr.read()
    assert "malformed" not in errors, errors
    if known.killed:
        assert proc.returncode in (-signal.SIGKILL, 0), (proc.returncode, errors)
    else:
        assert proc.returncode == 0, errors
    return known


def _types(view: Store | None, url: str, session_id: str) -> list[str]:
    if view is not None:
        return [type(event.data).__name__ for event in view.read(session_id)]
    with _process(_READER, url, session_id) as proc:
        out, errors = proc.communicate(timeout=120)
    assert proc.returncode == 0 and "malformed" not in errors, errors
    return out.split()


@contextmanager
def _process(script: str, *args: str) -> Iterator[subprocess.Popen[str]]:
    proc = subprocess.Popen(
        [sys.executable, "-c", script, *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=60)
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
