"""The recover table: turnlog recovering a crashed session, timed and its reads and writes counted."""

from __future__ import annotations

import os
import statistics
import time
from typing import Any

from children import child, child_task
from sections import summary
from sessions import DATA, write_session


def bench(label: str, size: int, rounds: int) -> list[dict[str, Any]]:
    path = DATA / "detect" / f"crash-{label.replace(' ', '')}.jsonl"
    if not path.exists():
        write_session(path, size_bytes=size)
    original = path.stat().st_size
    runs = []
    for _ in range(rounds):
        runs.append(child("recover", str(path)))
        os.truncate(path, original)  # back to the crashed state for the next round
    assert all(r["appended"] == 4 for r in runs)
    seconds = [r["seconds"] for r in runs]
    return [
        {
            "id": "recover.turnlog",
            "workload": f"recover, {label} crashed session",
            "subject": "turnlog recover (library)",
            **summary([s * 1e3 for s in seconds]),
            "unit": "ms",
            "ratio": 1.0,
            "read_kb": statistics.median(r["read_bytes"] for r in runs) / 1024,
            "written_bytes": statistics.median(r["written_bytes"] for r in runs),
            "peak_rss_mb": max(r["peak_rss_bytes"] for r in runs) / 2**20,
        }
    ]


@child_task("recover")
def recover_child(task: str, args: list[str]) -> dict[str, Any]:
    import turnlog

    store, session_id = turnlog.open_store(args[0])
    assert session_id is not None
    start = time.perf_counter()
    recovery = turnlog.recover(store, session_id)
    return {"seconds": time.perf_counter() - start, "appended": len(recovery.plan.events)}
