"""The non-durable append table: turnlog with durability none against os.write of the same lines, and its floor."""

from __future__ import annotations

import os
import shutil
import statistics
import time
from pathlib import Path
from typing import Any

from children import child, child_task
from sections import summary
from sessions import DATA, TS

MIX_TURNS_WARMUP = 50


def _mix_turn(log: Any, turn: int, turnlog: Any) -> None:
    calls = [
        turnlog.ToolCall(id=f"call_{turn}_a", name="read_file", arguments={"path": f"{turn}.py"}),
        turnlog.ToolCall(id=f"call_{turn}_b", name="run_tests", arguments={"k": "fast"}),
    ]
    log.user(f"Request {turn}: please look into this.")
    with log.turn():
        with log.step():
            log.assistant("Looking.", calls)
            for call in calls:
                with log.dispatch(call, idempotency="read_only") as running:
                    running.result("x" * 200)
        with log.step():
            log.assistant("All tests pass.")


def _mix_payloads(turn: int, ev: Any) -> list[Any]:
    """The payloads `_mix_turn` appends, built the same way, for the floor."""
    calls = [
        ev.ToolCall(id=f"call_{turn}_a", name="read_file", arguments={"path": f"{turn}.py"}),
        ev.ToolCall(id=f"call_{turn}_b", name="run_tests", arguments={"k": "fast"}),
    ]
    step = [
        ev.StepStart(turn=turn, step=1),
        ev.AssistantMessage(content="Looking.", tool_calls=calls),
    ]
    for call in calls:
        step.append(ev.ToolDispatch(call_id=call.id, name=call.name, idempotency="read_only"))
        step.append(ev.ToolResult(call_id=call.id, name=call.name, content="x" * 200))
    return [
        ev.UserMessage(content=f"Request {turn}: please look into this."),
        ev.TurnStart(turn=turn, revivals=0),
        *step,
        ev.StepEnd(turn=turn, step=1, outcome="ok"),
        ev.StepStart(turn=turn, step=2),
        ev.AssistantMessage(content="All tests pass."),
        ev.StepEnd(turn=turn, step=2, outcome="ok"),
        ev.TurnEnd(reason="complete", turn=turn, steps=2),
    ]


def bench(rounds: int, count: int) -> list[dict[str, Any]]:
    import turnlog
    from turnlog import events as ev
    from turnlog.stores.record import encode_line

    base = DATA / "nondurable"
    shutil.rmtree(base, ignore_errors=True)
    base.mkdir(parents=True)
    # The raw side writes exactly the lines turnlog writes: record one run of
    # each workload through turnlog once, and keep its lines.
    user = ev.UserMessage(content="Please summarise the attached report. " * 3)
    with open(base / "user.lines", "wb") as f:
        for seq in range(1, count + 1):
            f.write(encode_line(ev.Event(seq=seq, data=user, ts=TS)))
    with turnlog.open(base / "mix-source.jsonl", durability="none") as log:
        for turn in range(1, count // 13 + 1):
            _mix_turn(log, turn, turnlog)
    lines = (base / "mix-source.jsonl").read_bytes().splitlines(keepends=True)[1:]
    (base / "mix.lines").write_bytes(b"".join(lines))
    rows = []
    for kind, label in (("user", "user_message only"), ("mix", "reference loop's mix")):
        rates: dict[str, list[float]] = {"raw": [], "turnlog": []}
        for r in range(rounds):
            run_dir = base / f"{kind}{r}"
            run_dir.mkdir()
            rates["raw"].append(
                child("append-raw", str(base / f"{kind}.lines"), str(run_dir / "raw"))[
                    "events_per_s"
                ]
            )
            rates["turnlog"].append(
                child("append-turnlog", kind, str(count), str(run_dir))["events_per_s"]
            )
            if kind == "mix":
                rates.setdefault("floor", []).append(
                    child("append-floor", str(count), str(run_dir / "floor"))["events_per_s"]
                )
            shutil.rmtree(run_dir)
        raw = statistics.median(rates["raw"])
        for name, subject in (
            ("raw", "os.write of the same lines"),
            ("turnlog", "turnlog none, fold current"),
            ("floor", "floor: build, stamp, encode, write; no fold, no checks"),
        ):
            if name not in rates:
                continue
            rows.append(
                {
                    "id": f"nondurable.{kind}.{name}",
                    "workload": f"non-durable append, {label}",
                    "subject": subject,
                    **summary(rates[name]),
                    "unit": "events/s",
                    "ratio": statistics.median(rates[name]) / raw,
                }
            )
    return rows


# Each child task binds the names it uses as locals of its own, before its
# clock starts; `child_main` has loaded their modules already, so binding
# them only looks them up.


@child_task("append-raw")
def append_raw(task: str, args: list[str]) -> dict[str, Any]:
    lines = Path(args[0]).read_bytes().splitlines(keepends=True)
    fd = os.open(args[1], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    for line in lines[:1000]:  # warm-up, as the turnlog subject warms up
        os.write(fd, line)
    start = time.perf_counter()
    for line in lines:
        os.write(fd, line)
    elapsed = time.perf_counter() - start
    return {"events_per_s": len(lines) / elapsed}


@child_task("append-turnlog")
def append_turnlog(task: str, args: list[str]) -> dict[str, Any]:
    import turnlog
    from turnlog import events as ev

    kind, count, directory = args[0], int(args[1]), args[2]
    with turnlog.open(Path(directory) / "warm.jsonl", durability="none") as log:
        for turn in range(1, MIX_TURNS_WARMUP + 1):
            _mix_turn(log, turn, turnlog)
    with turnlog.open(Path(directory) / "timed.jsonl", durability="none") as log:
        user = ev.UserMessage(content="Please summarise the attached report. " * 3)
        first = log.next_seq
        start = time.perf_counter()
        if kind == "user":
            for _ in range(count):
                log.append(user)
        else:
            for turn in range(1, count // 13 + 1):
                _mix_turn(log, turn, turnlog)
        elapsed = time.perf_counter() - start
        appended = log.next_seq - first
        assert log.state.next_seq == log.next_seq  # the fold is current
    return {"events_per_s": appended / elapsed, "events": appended}


@child_task("append-floor")
def append_floor(task: str, args: list[str]) -> dict[str, Any]:
    from turnlog import events as ev
    from turnlog.handle.log import utc_now
    from turnlog.stores.record import encode_line_into

    # The least a Python writer of the same lines does per event: build
    # the payload, stamp it, encode it with its checksum, write it. No
    # fold, no checks, no lock, no context managers.
    count, path = int(args[0]), args[1]
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    buffer = bytearray()
    seq = 0
    for turn in range(1, MIX_TURNS_WARMUP + 1):
        for data in _mix_payloads(turn, ev):
            encode_line_into(ev.Event(seq=seq, data=data, ts=utc_now()), buffer)
            os.write(fd, buffer)
            seq += 1
    first = seq
    start = time.perf_counter()
    for turn in range(1, count // 13 + 1):
        for data in _mix_payloads(turn, ev):
            encode_line_into(ev.Event(seq=seq, data=data, ts=utc_now()), buffer)
            os.write(fd, buffer)
            seq += 1
    elapsed = time.perf_counter() - start
    os.close(fd)
    return {"events_per_s": (seq - first) / elapsed, "events": seq - first}
