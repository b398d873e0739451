"""The durable append table: raw write + fdatasync against turnlog's `always` and `barrier`, paired block by block."""

from __future__ import annotations

import os
import shutil
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from children import child, child_task
from sections import spread, summary
from sessions import DATA, TS


def bench(blocks: int, per_block: int) -> list[dict[str, Any]]:
    result = child("durable", str(DATA / "durable"), str(blocks), str(per_block))
    rows = []
    raw_us = [s * 1e6 for s in result["per_op"]["raw"]]
    rows.append(
        {
            "id": "durable.raw",
            "workload": f"durable append, {result['ops']:,} ops each, paired blocks",
            "subject": "os.write + fdatasync",
            **summary(raw_us),
            "unit": "µs/append",
            "ratio": 1.0,
        }
    )
    for name, row_id, label in (
        ("always", "durable.always", "turnlog always"),
        ("barrier", "durable.barrier", "turnlog barrier (dispatch)"),
        ("barrier/always", "durable.barrier-over-always", "barrier over always (same work)"),
        ("writer", "durable.floor.writer", "floor: the store's writer alone, no Log layer"),
    ):
        ratios = result["ratios"][name]
        low, high = spread(ratios)
        per_op = result["per_op"].get(name)
        row = {
            "id": row_id,
            "workload": f"durable append, {result['ops']:,} ops each, paired blocks",
            "subject": label,
            "unit": "µs/append" if per_op else "ratio",
            "ratio": statistics.median(ratios),
            "p10": low,
            "p90": high,
        }
        row.update(summary([s * 1e6 for s in per_op]) if per_op else summary(ratios))
        rows.append(row)
    return rows


@child_task("durable")
def durable_child(task: str, args: list[str]) -> dict[str, Any]:
    return durable_pairs(Path(args[0]), int(args[1]), int(args[2]))


def durable_pairs(directory: Path, blocks: int, per_block: int) -> dict[str, Any]:
    """raw write+fdatasync, turnlog `always` and `barrier` appending the same
    dispatch record, interleaved in blocks with the order rotating; the
    figure is each block's per-op time over raw's in the same block."""
    import turnlog
    from turnlog import events as ev
    from turnlog.handle.log import utc_now
    from turnlog.stores import JSONLStore
    from turnlog.stores.record import encode_line

    dispatch = ev.ToolDispatch(call_id="call_0123456789abcdef", name="write_file")
    line = encode_line(ev.Event(seq=2, data=dispatch, ts=TS))
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    fd = os.open(directory / "raw", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    logs = {
        mode: turnlog.open(directory / f"{mode}.jsonl", durability=mode)  # type: ignore[arg-type]
        for mode in ("always", "barrier")
    }
    # Each append dispatches a call of its own (the write order refuses a
    # call dispatched twice, or one no assistant message asked for): one
    # assistant message asks for all of them first. The ids have the width of
    # the raw side's, so every subject writes lines of the same length.
    calls = per_block + blocks * per_block
    ids = {mode: iter(f"call_{i:016x}" for i in range(calls)) for mode in logs}
    for log in logs.values():
        log.append(ev.TurnStart(turn=1, revivals=0))
        log.append(ev.UserMessage(content="Write the files."))
        log.append(
            ev.AssistantMessage(
                tool_calls=[
                    ev.ToolCall(id=f"call_{i:016x}", name="write_file") for i in range(calls)
                ]
            )
        )

    def dispatch_next(mode: str) -> None:
        logs[mode].append(ev.ToolDispatch(call_id=next(ids[mode]), name="write_file"))

    # The store's writer alone, without the Log above it (no lock, checks or
    # fold): what the durable append costs below the API, for the notes.
    writer = JSONLStore(directory).create(
        ev.Event(seq=0, data=ev.Session(session_id="writer"), ts=utc_now())
    )

    def raw() -> None:
        os.write(fd, line)
        os.fdatasync(fd)

    def writer_alone() -> None:
        writer.append_one(ev.Event(seq=writer.next_seq, data=dispatch, ts=utc_now()), True)

    subjects: dict[str, Callable[[], Any]] = {
        "raw": raw,
        "always": lambda: dispatch_next("always"),
        "barrier": lambda: dispatch_next("barrier"),
        "writer": writer_alone,
    }
    for run in subjects.values():  # warm every subject the same
        for _ in range(per_block):
            run()
    per_op: dict[str, list[float]] = {name: [] for name in subjects}
    names = list(subjects)
    for block in range(blocks):
        shift = block % len(names)
        order = names[shift:] + names[:shift]
        for name in order:
            run = subjects[name]
            start = time.perf_counter()
            for _ in range(per_block):
                run()
            per_op[name].append((time.perf_counter() - start) / per_block)
    for log in logs.values():
        log.close()
    writer.close()
    os.close(fd)
    ratios = {
        name: [s / r for s, r in zip(per_op[name], per_op["raw"], strict=True)]
        for name in ("always", "barrier", "writer")
    }
    ratios["barrier/always"] = [
        b / a for b, a in zip(per_op["barrier"], per_op["always"], strict=True)
    ]
    return {"per_op": per_op, "ratios": ratios, "ops": blocks * per_block}
