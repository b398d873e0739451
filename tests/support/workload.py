"""A scripted agent workload that drives the writer the way a harness does."""

from __future__ import annotations

import random

import turnlog
from turnlog.events import ToolCall


def drive(log: turnlog.Log, rng: random.Random, turns: int) -> None:
    """Turns of 1-3 steps, each asking for 0-2 tools that are dispatched and answered."""
    for _ in range(turns):
        log.user(f"request at seq {log.next_seq}")
        with log.turn():
            for step in range(rng.randint(1, 3)):
                with log.step():
                    calls = [
                        ToolCall(id=f"call_{log.next_seq}_{k}", name=rng.choice(["read", "pay"]))
                        for k in range(rng.randint(0, 2))
                    ]
                    log.assistant(f"step {step}", calls)
                    for call in calls:
                        idempotency = "read_only" if call.name == "read" else "destructive"
                        with log.dispatch(call, idempotency=idempotency) as running:
                            running.result("x" * rng.randint(10, 300))
