"""The guard's cost per tool call under DBOS: `turnlog.at_most_once` inside a
DBOS step, beside the bare DBOS step, in the same process and the same run.

    python bench/engine_guard.py [--calls N] [--rounds N] [--record]

A DBOS step already costs a committed row in DBOS's system database (here
SQLite, on the repository's disk). The guard adds what makes the call at
most once: the model's call written to the session (in the workflow), the
dispatch synced before the body, the result after it. Subjects, each a
workflow of N calls, rounds interleaved in a rotating order after a warm-up
round, one DBOS launch for all:

- baseline: a bare `@DBOS.step()` per call, the body returning a string;
- turnlog: the same step with the body under `at_most_once`, and the
  model's call written in the workflow first, as a real agent writes it;
- floor: the guard's writes with no engine (the same turnlog calls,
  outside DBOS), and one `os.write` + `fsync` per call, what the dispatch's
  durability costs at least.

The figure is per call: a round's workflow time over its calls. There is no
target: the row says what the guard costs, beside what the engine costs.
`--record` writes the run into docs/benchmarks.md, in its own section.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from dbos import DBOS, SetWorkflowID

import turnlog
from doc_section import write_section
from turnlog import EngineRun, ToolCall

ROOT = Path(__file__).resolve().parent.parent
MARK = "<!-- engine-guard -->"
BARE = "baseline: bare DBOS step"
GUARDED = "turnlog: DBOS step with at_most_once, the call written first"
ALONE = "floor: the same turnlog writes and guard, no engine"
FSYNC = "floor: os.write + fsync"
HANDLES: dict[str, turnlog.Log] = {}


def body(number: int) -> str:
    return f"done {number}"


@DBOS.step()
def bare_step(number: int) -> str:
    return body(number)


@DBOS.step()
def guarded_step(call_id: str, number: int) -> str:
    log = HANDLES[DBOS.workflow_id or ""]
    answer = turnlog.at_most_once(
        log, ToolCall(id=call_id, name="work"), lambda: body(number), idempotency="destructive"
    )
    return answer.content


@DBOS.workflow()
def bare_workflow(calls: int) -> float:
    started = time.perf_counter()
    for number in range(calls):
        bare_step(number)
    return time.perf_counter() - started


def converse(log: turnlog.Log, calls: int, step: Callable[[str, int], Any]) -> None:
    """One turn, one model step per call: the call written, then the guarded body run."""
    with log.turn():
        log.user("work")
        for number in range(calls):
            call_id = f"c{number}"
            with log.step():
                log.assistant("", tool_calls=[ToolCall(id=call_id, name="work")])
                step(call_id, number)


@DBOS.workflow()
def guarded_workflow(target: str, session_id: str, calls: int) -> float:
    run = EngineRun(engine="dbos", run_id=DBOS.workflow_id or "")
    with turnlog.open(target, session_id, engine_run=run) as log:
        HANDLES[run.run_id] = log
        started = time.perf_counter()
        converse(log, calls, guarded_step)
        elapsed = time.perf_counter() - started
        del HANDLES[run.run_id]
    return elapsed


def alone(target: str, session_id: str, calls: int) -> float:
    with turnlog.open(target, session_id) as log:

        def step(call_id: str, number: int) -> None:
            turnlog.at_most_once(
                log,
                ToolCall(id=call_id, name="work"),
                lambda: body(number),
                idempotency="destructive",
            )

        started = time.perf_counter()
        converse(log, calls, step)
        return time.perf_counter() - started


def fsync_floor(path: Path, calls: int) -> float:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    line = b'{"seq":1,"type":"tool_dispatch","data":{"call_id":"c1"}}\n'
    try:
        started = time.perf_counter()
        for _ in range(calls):
            os.write(fd, line)
            os.fsync(fd)
        return time.perf_counter() - started
    finally:
        os.close(fd)


def measure(calls: int, rounds: int, work: Path) -> dict[str, list[float]]:
    """Seconds per call of each subject, one figure per round."""
    sysdb = f"sqlite:///{work / 'dbos.sqlite'}"
    config: Any = {
        "name": "turnlog-bench-guard",
        "system_database_url": sysdb,
        "application_version": "1",
        "log_level": "ERROR",
    }
    DBOS(config=config)
    DBOS.launch()
    counter = [0]

    def fresh(prefix: str) -> str:
        counter[0] += 1
        return f"{prefix}-{counter[0]}"

    def run_bare() -> float:
        with SetWorkflowID(fresh("bare")):
            return float(bare_workflow(calls))

    def run_guarded() -> float:
        with SetWorkflowID(fresh("guarded")):
            return float(guarded_workflow(str(work / "sessions"), fresh("s"), calls))

    def run_alone() -> float:
        return alone(str(work / "sessions"), fresh("alone"), calls)

    def run_fsync() -> float:
        return fsync_floor(work / f"{fresh('fsync')}.log", calls)

    subjects = {BARE: run_bare, GUARDED: run_guarded, ALONE: run_alone, FSYNC: run_fsync}
    names = list(subjects)
    try:
        for name in names:  # warm-up: tables, caches, first imports
            subjects[name]()
        per_call: dict[str, list[float]] = {name: [] for name in names}
        for number in range(rounds):
            shift = number % len(names)
            for name in names[shift:] + names[:shift]:
                os.sync()
                per_call[name].append(subjects[name]() / calls)
    finally:
        DBOS.destroy()
    return per_call


def report(per_call: dict[str, list[float]], args: argparse.Namespace) -> list[str]:
    medians = {name: statistics.median(values) for name, values in per_call.items()}
    bare = medians[BARE]
    lines = [
        f"{args.rounds} rounds of {args.calls:,} calls each, interleaved in a rotating "
        "order, after a warm-up round",
        f"machine: {platform.platform()}, {os.cpu_count()} cores; Python "
        f"{platform.python_version()}; dbos {_version('dbos')}, turnlog {_version('turnlog')}",
        "",
        "| subject | median | min–max | ratio to the bare step |",
        "|---|---|---|---|",
    ]
    for name, values in per_call.items():
        lines.append(
            f"| {name} | {medians[name] * 1e6:,.0f} µs/call | {min(values) * 1e6:,.0f}–"
            f"{max(values) * 1e6:,.0f} µs | {medians[name] / bare:.2f}× |"
        )
    added = (medians[GUARDED] - bare) * 1e6
    lines += [
        "",
        f"the guard adds {added:,.0f} µs per call to a DBOS step of {bare * 1e6:,.0f} µs; "
        f"its writes alone take {medians[ALONE] * 1e6:,.0f} µs per call, "
        f"{medians[ALONE] / medians[FSYNC]:.2f}× one write + fsync",
    ]
    return lines


def _version(name: str) -> str:
    from importlib import metadata

    return metadata.version(name)


def record(args: argparse.Namespace, lines: list[str]) -> None:
    """Write this run into its section of docs/benchmarks.md, leaving the rest."""
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    section = f"""{MARK}
## Durable engines: the guard's cost per tool call beside a DBOS step

Command: `python bench/engine_guard.py --calls {args.calls} --rounds {args.rounds} --record`
(part of `make bench`). Date: {when}.

One process launches DBOS once, on a SQLite system database on the
repository's disk, and runs each subject as a workflow of the same calls.
The bare DBOS step commits its output to DBOS's system database; the
guarded one runs the same body under `turnlog.at_most_once`, after the
workflow wrote the model's call to a JSONL session (barrier durability: the
dispatch is synced before the body, docs/engines.md). The floors are the
same turnlog writes with no engine, and one `os.write` + `fsync` per call.

""" + "\n".join(lines)
    write_section(MARK, section)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--record", action="store_true", help="write docs/benchmarks.md")
    args = parser.parse_args()
    data = ROOT / ".bench-data"
    data.mkdir(exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="engine-guard-", dir=data))
    try:
        per_call = measure(args.calls, args.rounds, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    lines = report(per_call, args)
    print("\n".join(lines))
    if args.record:
        record(args, lines)
    sys.exit(0)


if __name__ == "__main__":
    main()
