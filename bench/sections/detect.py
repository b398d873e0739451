"""The crash detection table: turnlog inspect, in the library and as a whole process, against a forward scan."""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from typing import Any

from children import child, child_task
from sections import summary
from sessions import DATA, write_session

CLI_MEASURE = """
import sys, time
start = time.perf_counter()
import turnlog.cli
code = 0
try:
    turnlog.cli.main(sys.argv[1:], standalone_mode=False)
except SystemExit as exc:
    code = exc.code or 0
hwm = 0
with open("/proc/self/status") as f:
    for line in f:
        if line.startswith("VmHWM:"):
            hwm = int(line.split()[1]) * 1024
print(hwm, code, file=sys.stderr)
"""


def cli_process(*args: str) -> dict[str, Any]:
    """A whole `turnlog` command as a user runs it: wall time from before the
    interpreter starts to its exit, and the process's own peak RSS."""
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", CLI_MEASURE, *args], capture_output=True, text=True, check=False
    )
    seconds = time.perf_counter() - start
    hwm, code = done.stderr.strip().splitlines()[-1].split()
    if code not in ("0", "None"):
        raise RuntimeError(f"turnlog {' '.join(args)} exited {code}: {done.stderr[-2000:]}")
    return {"seconds": seconds, "peak_rss_bytes": int(hwm)}


def bench(sizes: dict[str, int], rounds: int) -> list[dict[str, Any]]:
    base = DATA / "detect"
    base.mkdir(parents=True, exist_ok=True)
    rows = []
    for label, size in sizes.items():
        for stamp in (True, False):
            name = f"crash-{label.replace(' ', '')}{'' if stamp else '-unstamped'}.jsonl"
            path = base / name
            if not path.exists() or path.stat().st_size < size * 0.9:
                write_session(path, size_bytes=size, stamp=stamp)
            runs: dict[str, list[dict[str, Any]]] = {"inspect": [], "process": [], "scan": []}
            for _ in range(rounds):
                runs["inspect"].append(child("inspect", str(path)))
                runs["process"].append(cli_process("inspect", "--json", str(path)))
                if stamp:
                    runs["scan"].append(child("forward-scan", str(path)))
            assert all(r["status"] == "interrupted" and r["owed"] == 2 for r in runs["inspect"])
            reference = runs["scan"] or runs["inspect"]
            scan_median = statistics.median(r["seconds"] for r in reference)
            kind = "stamped" if stamp else "without the revivals stamp"
            subjects = [
                ("library", "turnlog inspect (library, tail)", runs["inspect"]),
                ("process", "turnlog inspect --json (whole process)", runs["process"]),
            ]
            if stamp:
                subjects.append(("scan", "forward scan (read + decode)", runs["scan"]))
            for role, subject, measured in subjects:
                seconds = [r["seconds"] for r in measured]
                row = {
                    "id": f"detect.{label.replace(' ', '')}.{'stamped' if stamp else 'unstamped'}.{role}",
                    "workload": f"crash detection, {label}, {kind}",
                    "subject": subject,
                    **summary([s * 1e3 for s in seconds]),
                    "unit": "ms",
                    "ratio": statistics.median(seconds) / scan_median,
                    "peak_rss_mb": max(r["peak_rss_bytes"] for r in measured) / 2**20,
                }
                if "read_bytes" in measured[0]:
                    row["read_kb"] = statistics.median(r["read_bytes"] for r in measured) / 1024
                rows.append(row)
    return rows


@child_task("inspect")
def inspect_child(task: str, args: list[str]) -> dict[str, Any]:
    import turnlog

    start = time.perf_counter()
    found = turnlog.inspect(args[0])
    return {
        "seconds": time.perf_counter() - start,
        "status": found.status,
        "owed": len(found.owed_calls),
        "revivals": found.revivals,
    }


@child_task("forward-scan")
def forward_scan(task: str, args: list[str]) -> dict[str, Any]:
    from turnlog import events as ev

    # The least a forward reader must do: read and decode every line.
    start = time.perf_counter()
    count = 0
    decode = ev.decode_event
    with open(args[0], "rb") as f:
        for line in f:
            decode(line)
            count += 1
    return {"seconds": time.perf_counter() - start, "events": count}
