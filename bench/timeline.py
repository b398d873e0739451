"""The HTML timeline of a 10,000-event session: `turnlog show --html` against `turnlog show --json`, whole processes.

    python bench/timeline.py [--events N] [--rounds N] [--record]

Both subjects read and decode every event of the same session and write
all of it out: one as JSON to a pipe, the other as the page to a file. Each
is a fresh process, interleaved round by round in a rotating order after
warm-up rounds. The session is an agent's ordinary work: per turn a
prompt, a model step that calls a tool (dispatched and answered) and a
step that answers.

Targets (issue: a long session renders fast and small): the page's median
time ≤ 2x `show --json`'s, and the page ≤ 2x the log's size. Exits 1 when
either is missed. `--record` writes the run into docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from doc_section import write_section

ROOT = Path(__file__).resolve().parent.parent
MARK = "<!-- timeline -->"
TIME_TARGET = 2.0
SIZE_TARGET = 2.0
# Written by a child, so this process never imports turnlog.
MAKE_SESSION = """
import sys, turnlog
from turnlog import ToolCall
root, wanted = sys.argv[1], int(sys.argv[2])
with turnlog.open(root, "long", durability="none") as log:
    n = 0
    while log.next_seq < wanted:
        with log.turn():
            log.user(f"please handle request {n} for the customer account")
            with log.step():
                call = ToolCall(id=f"c{n}", name="lookup", arguments={"account": n})
                log.assistant("Looking that up.", tool_calls=[call])
                log.begin_dispatch(call, idempotency="read_only").result(
                    f"account {n}: balance {n * 3} USD, status active")
            with log.step():
                log.assistant(f"The balance of account {n} is {n * 3} USD.")
        n += 1
    print(log.next_seq)
"""


def entry_point() -> str:
    beside = Path(sys.executable).parent / "turnlog"
    found = str(beside) if beside.exists() else shutil.which("turnlog")
    if found is None:
        sys.exit("no `turnlog` entry point beside this interpreter or on PATH: pip install -e .")
    return found


def timed(command: list[str]) -> float:
    started = time.perf_counter()
    done = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        sys.exit(f"{' '.join(command)} exited {done.returncode}: {done.stderr.decode()[-2000:]}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--record", action="store_true", help="write docs/benchmarks.md")
    args = parser.parse_args()
    data = ROOT / ".bench-data"
    data.mkdir(exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="timeline-", dir=data))
    try:
        made = subprocess.run(
            [sys.executable, "-c", MAKE_SESSION, str(work), str(args.events)],
            capture_output=True,
            text=True,
            check=True,
        )
        events = int(made.stdout.strip())
        log = work / "long.jsonl"
        page = work / "long.html"
        turnlog = entry_point()
        subjects = {
            "turnlog show --json": [turnlog, "show", str(log), "--json"],
            "turnlog show --html -o FILE": [turnlog, "show", str(log), "--html", "-o", str(page)],
        }
        names = list(subjects)
        for _ in range(args.warmup):
            for name in names:
                timed(subjects[name])
        runs: dict[str, list[float]] = {name: [] for name in names}
        for number in range(args.rounds):
            shift = number % len(names)
            for name in names[shift:] + names[:shift]:
                runs[name].append(timed(subjects[name]))
        log_bytes, page_bytes = log.stat().st_size, page.stat().st_size
    finally:
        shutil.rmtree(work, ignore_errors=True)
    medians = {name: statistics.median(values) for name, values in runs.items()}
    json_s, html_s = medians[names[0]], medians[names[1]]
    time_ratio, size_ratio = html_s / json_s, page_bytes / log_bytes
    lines = [
        f"{events:,} events; {args.rounds} rounds, interleaved in a rotating order, "
        f"after {args.warmup} warm-up rounds",
        f"machine: {platform.platform()}, {os.cpu_count()} cores, load average "
        + " ".join(f"{x:.2f}" for x in os.getloadavg())
        + f"; Python {platform.python_version()}",
        "",
        "| subject | median | min–max | ratio |",
        "|---|---|---|---|",
    ]
    for name in names:
        values = runs[name]
        lines.append(
            f"| {name} | {medians[name] * 1000:,.0f} ms | {min(values) * 1000:,.0f}–"
            f"{max(values) * 1000:,.0f} ms | {medians[name] / json_s:.2f}× |"
        )
    met_time, met_size = time_ratio <= TIME_TARGET, size_ratio <= SIZE_TARGET
    lines += [
        "",
        f"sizes: the log {log_bytes:,} bytes, the page {page_bytes:,} bytes ({size_ratio:.2f}×)",
        f"target: page ≤ {TIME_TARGET:g}× show --json: {time_ratio:.2f}× "
        + ("met" if met_time else "MISSED"),
        f"target: page ≤ {SIZE_TARGET:g}× the log's size: {size_ratio:.2f}× "
        + ("met" if met_size else "MISSED"),
    ]
    print("\n".join(lines))
    if args.record:
        record(args, lines)
    sys.exit(0 if met_time and met_size else 1)


def record(args: argparse.Namespace, lines: list[str]) -> None:
    """Write this run into its section of docs/benchmarks.md, leaving the rest."""
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    section = f"""{MARK}
## The HTML timeline of a long session, as a whole process

Command: `python bench/timeline.py --events {args.events} --rounds {args.rounds} --record`
(part of `make bench`). Date: {when}.

Both subjects are the installed `turnlog` command, each run a fresh
process on the same session: `show --json` streams every event to a pipe,
`show --html -o FILE` writes the page. Collapsed turns' content is in the
page, in templates the browser renders only when a turn is opened.

""" + "\n".join(lines)
    write_section(MARK, section)


if __name__ == "__main__":
    main()
