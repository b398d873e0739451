"""turnlog benchmarks: every figure a ratio against a baseline measured in the same run.

    python bench/run.py [--quick] [--out docs/benchmarks.md] [--sections load,detect]

This file is the entry point: the command line, the sections in the order
they run, and the report it writes. Each table is a module of bench/sections/;
every child measurement re-runs this file with --child (bench/children.py).

Method, for every row: imports happen before the clock; each load, append
and detection subject runs in a fresh interpreter of its own, subjects
interleaved round by round; peers are given the same records turnlog holds
(its own events, as items or message texts); durable subjects are paired
block by block in one process and reported as the median paired ratio with
its 10th-90th percentile spread. A missed target makes the run exit 1.
Data lives under `.bench-data/` on the disk the repository is on.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import traceback
from pathlib import Path
from typing import Any

import per_turn
from children import child_main
from registry import check, table as registry_table
from report import CORRECTIONS, machine, missed_notes, register_targets, table

# Importing the sections registers their child tasks, which a child run of
# this file looks up by name.
from sections import detect, durable, load, marginal, nondurable, recover, stores
from sessions import GB, ROOT

KEPT_START = "<!-- rescue-scan -->"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick", action="store_true", help="Small sizes, few rounds (a smoke run)."
    )
    parser.add_argument("--out", default=str(ROOT / "docs" / "benchmarks.md"))
    parser.add_argument(
        "--sections",
        help="Only these sections (comma-separated keys, e.g. per-turn,load); the "
        "targets of the others are then missed and the run exits 1.",
    )
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child_main(args.child[0], args.child[1:])
        return
    quick = args.quick
    rounds = 3 if quick else 5
    started = time.perf_counter()
    sizes = {"1 MB": 1 << 20} if quick else {"1 MB": 1 << 20, "100 MB": 100 << 20, "1 GB": GB}
    config = {
        "detect_largest": list(sizes)[-1],
        "marginal_lengths": [100, 1_000] if quick else [100, 10_000, 100_000],
        "turn_lengths": [100, 1_000, 10_000],
        "sweep_sessions": 1_000 if quick else 10_000,
    }
    sections = [
        (
            "durable",
            "Durable append",
            lambda: durable.bench(20 if quick else 150, 10 if quick else 20),
        ),
        (
            "nondurable",
            "Non-durable append",
            lambda: nondurable.bench(rounds, 13_000 if quick else 130_000),
        ),
        (
            "marginal",
            "Append cost vs session length",
            lambda: marginal.bench(config["marginal_lengths"], 2 if quick else 3),
        ),
        # As many rounds as the other sections: the peers' loads are whole
        # processes of up to 4 s each, and make bench keeps to about 10 minutes.
        ("load", "Load + fold", lambda: load.bench(10_000 if quick else 100_000, rounds)),
        (
            "per-turn",
            "Per-turn cost under the frameworks",
            lambda: per_turn.bench(config["turn_lengths"], 2 if quick else 3),
        ),
        ("detect", "Crash detection", lambda: detect.bench(sizes, 3)),
        (
            "recover",
            "Recover",
            lambda: recover.bench("1 MB" if quick else "1 GB", 1 << 20 if quick else GB, 3),
        ),
        ("stores", "Stores", lambda: stores.bench(quick, rounds)),
    ]
    if args.sections:
        wanted = set(args.sections.split(","))
        unknown = wanted - {key for key, _, _ in sections}
        if unknown:
            parser.error(f"unknown sections: {', '.join(sorted(unknown))}")
        sections = [s for s in sections if s[0] in wanted]
    command = "python bench/run.py" + (" --quick" if quick else "")
    if args.sections:
        command += f" --sections {args.sections}"
    report = [
        "# Benchmarks",
        "",
        f"Produced by `make bench`, which runs `{command}` for every table down to",
        "the targets (each section below names its own command otherwise). Every",
        "ratio is against a baseline measured in the same run; medians over",
        "rounds, min–max beside them. Each row has a stable id; the targets name",
        "their rows, and the baseline, floor or peer beside them, by id.",
        "",
        *machine(),
        "",
        CORRECTIONS,
    ]
    all_rows: list[dict[str, Any]] = []
    failed: list[str] = []
    timings: list[str] = []
    for key, title, run in sections:
        # The gigabytes an earlier section wrote are flushed before the next
        # one starts, so no section shares the disk with another's writeback.
        os.sync()
        print(f"== {title}", flush=True)
        section_start = time.perf_counter()
        try:
            rows = run()
        except Exception:
            # The run goes on; this section's targets are missed below.
            traceback.print_exc()
            failed.append(key)
            report += [
                f"## {title}",
                "",
                f"The section failed (`{key}`); see the run's output.",
                "",
            ]
            continue
        all_rows += rows
        lines = table(rows)
        print("\n".join(lines), flush=True)
        seconds = time.perf_counter() - section_start
        timings.append(f"{key} {seconds:.0f} s")
        print(f"({key}: {seconds:.0f} s)", flush=True)
        report += [f"## {title}", "", *lines, ""]
        if key == "per-turn":
            report += [per_turn.METHOD, ""]
    report += [
        "Page cache warm for every read: the files were just written or read.",
        "",
    ]
    verdicts = check(register_targets(config), all_rows)
    target_lines = registry_table(verdicts)
    report += ["## Targets", "", *target_lines, ""]
    notes = missed_notes(all_rows, verdicts)
    if notes:
        report += ["What bounds the missed targets, from the floors of this run:", "", *notes, ""]
    report += [
        f"Total run time: {time.perf_counter() - started:.0f} s ({', '.join(timings)}).",
        "",
    ]
    print("\n".join(target_lines))
    out_path = Path(args.out)
    # Sections other benchmarks keep in the same file (bench/rescue_scan.py)
    # survive a re-run of this one.
    kept = ""
    if out_path.exists():
        previous = out_path.read_text()
        start = previous.find(KEPT_START)
        if start != -1:
            kept = "\n" + previous[start:].rstrip("\n") + "\n"
    out_path.write_text("\n".join(report) + kept)
    print(f"wrote {args.out}")
    missed = [v.target.id for v in verdicts if not v.met]
    if failed:
        print(f"FAILED sections: {', '.join(failed)}", file=sys.stderr)
    if missed:
        print(
            f"MISSED {len(missed)} of {len(verdicts)} targets: " + ", ".join(missed),
            file=sys.stderr,
        )
    if missed or failed:
        sys.exit(1)


if __name__ == "__main__":
    main()
