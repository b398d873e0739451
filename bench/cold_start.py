"""Cold start: `turnlog inspect --json` on a tiny session, as a whole process,
against a process that only imports turnlog's two runtime dependencies.

    python bench/cold_start.py [--rounds N] [--record]

A supervisor or a shell hook runs `turnlog inspect --json` once per session,
so the start-up is the command's cost. Each subject is a fresh process,
interleaved round by round in a rotating order (so a drift of the machine's
load falls on all of them alike), after untimed warm-up rounds:

- floor: `python -c pass`, the bare interpreter;
- baseline: `python -c "import msgspec, click"`, what any command must load;
- turnlog: the installed `turnlog` entry point, `inspect --json tiny.jsonl`,
  which freezes the objects its imports made (`gc.freeze`) before it runs;
- the same command through `turnlog.cli.main`, which does not: the
  difference is what the freeze saves.

Two more floors show what bounds the target: the baseline plus turnlog's
event types, and plus the library's whole inspect path (`turnlog.triage`);
what the command adds past that is the command line being built and run.

Target: the turnlog median ≤ 1.15x the baseline median. Exits 1 when missed.
`--record` writes the run into docs/benchmarks.md, in its own section.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET = 1.15
MARK = "<!-- cold-start -->"
FLOOR = "floor: python -c pass"
BASELINE = "baseline: python -c 'import msgspec, click'"
EVENTS = "floor: baseline + import turnlog.events"
LIBRARY = "floor: baseline + import turnlog.triage (the library's inspect path)"
TURNLOG = "turnlog inspect --json tiny.jsonl"
UNFROZEN = "the same through `turnlog.cli.main`, the collector left as is"
# Any later section of the page starts with a mark of its own.
NEXT_MARK = "<!-- "
# Two records, written as bytes: the bench process never imports turnlog,
# so nothing it measures depends on this process's state.
TINY_SESSION = (
    b'{"seq":0,"type":"session","ts":"2026-12-01T00:00:00.000000Z",'
    b'"data":{"session_id":"tiny","created_at":"2026-12-01T00:00:00.000000Z"}}\n'
    b'{"seq":1,"type":"user_message","ts":"2026-12-01T00:00:00.000001Z",'
    b'"data":{"content":"hi"}}\n'
)


# A user's install has its bytecode compiled (pip compiles it; a first run
# writes it): without it every run would compile turnlog from source, a cost
# the baseline's packages never pay. The warm-up rounds write it if missing.
ENV = {name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"}


def entry_point() -> str:
    """The `turnlog` script installed beside this interpreter, as a user runs it."""
    beside = Path(sys.executable).parent / "turnlog"
    if beside.exists():
        return str(beside)
    found = shutil.which("turnlog")
    if found is None:
        sys.exit("no `turnlog` entry point beside this interpreter or on PATH: pip install -e .")
    return found


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(command: list[str]) -> tuple[float, float]:
    """Wall time from before the process starts to its exit, and the CPU time
    it used: on a shared machine the CPU time is what another load disturbs
    least, so it is shown beside the wall time the target is set on."""
    cpu = _children_cpu()
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, check=False, env=ENV)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        sys.exit(f"{' '.join(command)} exited {done.returncode}: {done.stderr.decode()[-2000:]}")
    return elapsed, _children_cpu() - cpu


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--record", action="store_true", help="write docs/benchmarks.md")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as directory:
        tiny = Path(directory) / "tiny.jsonl"
        tiny.write_bytes(TINY_SESSION)
        python = sys.executable
        subjects = {
            FLOOR: [python, "-c", "pass"],
            BASELINE: [python, "-c", "import msgspec, click"],
            EVENTS: [python, "-c", "import msgspec, click, turnlog.events"],
            LIBRARY: [python, "-c", "import msgspec, click, turnlog.triage"],
            TURNLOG: [entry_point(), "inspect", "--json", str(tiny)],
            UNFROZEN: [
                python,
                "-c",
                "from turnlog.cli import main; main()",
                *("inspect", "--json", str(tiny)),
            ],
        }
        out = subprocess.run(subjects[TURNLOG], capture_output=True, check=True, env=ENV)
        assert json.loads(out.stdout)["status"] == "idle", out.stdout
        names = list(subjects)
        for _ in range(args.warmup):
            for name in names:
                timed(subjects[name])
        runs: dict[str, list[float]] = {name: [] for name in names}
        cpus: dict[str, list[float]] = {name: [] for name in names}
        for number in range(args.rounds):
            shift = number % len(names)
            for name in names[shift:] + names[:shift]:
                wall, cpu = timed(subjects[name])
                runs[name].append(wall)
                cpus[name].append(cpu)

    medians = {name: statistics.median(seconds) for name, seconds in runs.items()}
    cpu_medians = {name: statistics.median(seconds) for name, seconds in cpus.items()}
    floor, baseline, turnlog = medians[FLOOR], medians[BASELINE], medians[TURNLOG]
    ratio = turnlog / baseline
    cpu = cpu_medians
    cpu_ratio = cpu_medians[TURNLOG] / cpu_medians[BASELINE]
    # Above the bare interpreter: what the imports and the work cost.
    above = (turnlog - floor) / (baseline - floor)
    met = ratio <= TARGET
    loadavg = os.getloadavg()
    lines = [
        f"{args.rounds} rounds, interleaved in a rotating order, after {args.warmup} warm-up rounds",
        f"machine: {platform.platform()}, {os.cpu_count()} cores, "
        f"load average {loadavg[0]:.2f} {loadavg[1]:.2f} {loadavg[2]:.2f}; "
        f"Python {platform.python_version()}",
        "",
        "| subject | wall median | min–max | ratio to baseline | CPU median | CPU ratio |",
        "|---|---|---|---|---|---|",
    ]
    for name in names:
        seconds = runs[name]
        lines.append(
            f"| {name} | {medians[name] * 1e3:.1f} ms | "
            f"{min(seconds) * 1e3:.1f}–{max(seconds) * 1e3:.1f} ms | "
            f"{medians[name] / baseline:.3f}× | {cpu_medians[name] * 1e3:.1f} ms | "
            f"{cpu_medians[name] / cpu_medians[BASELINE]:.3f}× |"
        )
    lines += [
        "",
        f"above the bare interpreter: turnlog {(turnlog - floor) * 1e3:.1f} ms, "
        f"baseline {(baseline - floor) * 1e3:.1f} ms ({above:.2f}×)",
        "CPU time past the baseline: the event types "
        f"{(cpu[EVENTS] - cpu[BASELINE]) * 1e3:+.1f} ms, the rest of the library's inspect path "
        f"{(cpu[LIBRARY] - cpu[EVENTS]) * 1e3:+.1f} ms, the command line built and run "
        f"{(cpu[UNFROZEN] - cpu[LIBRARY]) * 1e3:+.1f} ms, the imports' objects frozen "
        f"{(cpu[TURNLOG] - cpu[UNFROZEN]) * 1e3:+.1f} ms; the target would allow "
        f"{(TARGET - 1) * cpu[BASELINE] * 1e3:+.1f} ms (CPU ratio {cpu_ratio:.3f}×)",
        f"target: cold start ≤ {TARGET:g}× import msgspec, click: {ratio:.3f}× "
        f"{'met' if met else 'MISSED'}",
    ]
    print("\n".join(lines))
    if args.record:
        record(args, lines)
    sys.exit(0 if met else 1)


def record(args: argparse.Namespace, lines: list[str]) -> None:
    """Write this run into its section of docs/benchmarks.md, leaving the rest."""
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    section = f"""{MARK}
## Cold start: `turnlog inspect --json` as a whole process

Command: `python bench/cold_start.py --rounds {args.rounds} --record` (part of
`make bench`). Date: {when}.

Each subject is a fresh process, started and waited for, with its
bytecode compiled as an installed package has it; the rounds rotate the
order of the subjects. The ratio that counts is turnlog's wall-time median
over the baseline's: a process that imports turnlog's two runtime
dependencies and does nothing else. The CPU columns are the same processes'
user + system time, which another load on a shared machine disturbs least;
the load average below says how shared it was. The floors in between split
the cost: the event types, the rest of the library's inspect path, and the
command line (the group and the invoked command's module, which click
builds, then parses the arguments and runs the command). The `turnlog`
script then freezes what its imports made (`gc.freeze`), so no collection
walks those objects again, the one at exit included; the floors, the
baseline and the row through `turnlog.cli.main` leave the collector as it
is, and their difference is what the freeze saves.

{chr(10).join(lines)}
"""
    doc = ROOT / "docs" / "benchmarks.md"
    text = doc.read_text() if doc.exists() else ""
    start = text.find(MARK)
    if start == -1:
        text = text.rstrip("\n") + "\n\n" + section
    else:
        end = text.find(NEXT_MARK, start + len(MARK))
        rest = text[end:] if end != -1 else ""
        text = text[:start] + section + ("\n" + rest if rest else "")
    doc.write_text(text)


if __name__ == "__main__":
    main()
