"""`turnlog doctor --all`: a folder of Claude Code sessions scanned from the tails,
against a full parse of every file. Target: 1,000 sessions / 2 GB in <= 3 s.

    python bench/rescue_scan.py [--sessions N] [--mb-per-session M] [--rounds R]

Both subjects run as whole processes (the command a user types, and a
process that parses every file in full), interleaved round by round, on
the same files with the page cache warmed by a first untimed pass of
each. Exits 1 when the target is missed.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / ".bench-data" / "rescue"
TARGET_S = 3.0
MARK = "<!-- rescue-scan -->"
FULL_PARSE = """
import sys
from turnlog.formats.rescue import diagnose, session_files
crashed = sum(1 for path in session_files("claude-code", sys.argv[1]) if diagnose(path, "claude-code").needs_repair)
print(crashed)
"""


def line(session: str, number: int, parent: str | None, kind: str, content: object) -> bytes:
    record = {
        "parentUuid": parent,
        "isSidechain": False,
        "userType": "external",
        "cwd": "/home/dev/shop",
        "sessionId": session,
        "version": "2.1.0",
        "gitBranch": "main",
        "type": kind,
        "message": {"role": kind, "content": content},
        "uuid": f"{number:08x}-0000-4000-8000-{session[-12:]}",
        "timestamp": "2026-10-02T00:36:01.000Z",
    }
    if kind == "assistant":
        record["message"]["id"] = f"msg_{number}"  # type: ignore[index]
    return json.dumps(record, separators=(",", ":")).encode() + b"\n"


def make_folder(sessions: int, size_bytes: int) -> Path:
    folder = DATA / f"{sessions}x{size_bytes}" / "-home-dev-shop"
    done = folder.parent / ".done"
    if done.exists():
        return folder.parent
    folder.mkdir(parents=True, exist_ok=True)
    filler = "x" * 1800
    for index in range(sessions):
        session = f"5d1f6a9e-0000-4000-8000-{index:012d}"
        parts: list[bytes] = []
        written = 0
        number = 0
        parent = None
        while written < size_bytes:
            number += 1
            kind = "user" if number % 2 else "assistant"
            content = [{"type": "text", "text": filler}]
            chunk = line(session, number, parent, kind, content)
            parent = f"{number:08x}-0000-4000-8000-{session[-12:]}"
            parts.append(chunk)
            written += len(chunk)
        if index % 10 == 0:  # one in ten crashed mid-tool
            number += 1
            tool = [{"type": "tool_use", "id": f"toolu_{index}", "name": "Bash", "input": {}}]
            parts.append(line(session, number, parent, "assistant", tool))
        path = folder / f"{session}.jsonl"
        path.write_bytes(b"".join(parts))
        past = time.time() - 3600
        os.utime(path, (past, past))
    done.touch()
    return folder.parent


def timed(command: list[str]) -> tuple[float, str]:
    started = time.perf_counter()
    out = subprocess.run(command, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - started
    if out.returncode not in (0, 1):
        sys.exit(f"{command[:4]} failed: {out.stderr}")
    return elapsed, out.stdout


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--mb-per-session", type=float, default=2.0)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    folder = make_folder(args.sessions, int(args.mb_per_session * 1024 * 1024))
    total = sum(p.stat().st_size for p in folder.rglob("*.jsonl"))
    turnlog = [sys.executable, "-m", "turnlog"]
    scan = [*turnlog, "doctor", "claude-code", "--all", str(folder), "--dry-run", "--json"]
    full = [sys.executable, "-c", FULL_PARSE, str(folder)]
    timed(scan)  # warm the page cache the same way for both subjects
    timed(full)
    scans, fulls = [], []
    found_scan = found_full = 0
    for _ in range(args.rounds):
        elapsed, out = timed(scan)
        scans.append(elapsed)
        found_scan = len(json.loads(out)["repairs"])
        elapsed, out = timed(full)
        fulls.append(elapsed)
        found_full = int(out)
    scan_s, full_s = statistics.median(scans), statistics.median(fulls)
    met = scan_s <= TARGET_S and found_scan == found_full
    print(f"folder: {args.sessions} sessions, {total / 1e9:.2f} GB, {found_full} crashed")
    print(
        f"doctor --all (tails):   median {scan_s:.2f} s  (runs {', '.join(f'{s:.2f}' for s in scans)})"
    )
    print(
        f"full parse of each file: median {full_s:.2f} s  (runs {', '.join(f'{s:.2f}' for s in fulls)})"
    )
    print(f"ratio full / tails: {full_s / scan_s:.1f}x; both found {found_scan} and {found_full}")
    print(f"target <= {TARGET_S:g} s: {'met' if met else 'MISSED'}")
    record(args, total, found_full, scans, fulls, met)
    sys.exit(0 if met else 1)


def record(
    args: argparse.Namespace,
    total: int,
    crashed: int,
    scans: list[float],
    fulls: list[float],
    met: bool,
) -> None:
    """Write this run's section into docs/benchmarks.md (bench/run.py keeps it)."""
    scan_s, full_s = statistics.median(scans), statistics.median(fulls)
    section = f"""{MARK}
## Rescue: scanning a folder of Claude Code sessions

Command: `python bench/rescue_scan.py --sessions {args.sessions} --mb-per-session {args.mb_per_session:g} --rounds {args.rounds}` (part of `make bench`).

{args.sessions} sessions, {total / 1e9:.2f} GB, {crashed} of them crashed mid-tool. Both
subjects run as whole processes on the same files, interleaved, after one
untimed pass each (page cache warm): `turnlog doctor claude-code --all DIR
--dry-run --json`, which judges each file from its tail (64 KB, grown until
it holds an assistant line), and a process that parses every file whole.

| subject | median | runs | found |
|---|---|---|---|
| `doctor --all` (tails) | {scan_s:.2f} s | {", ".join(f"{s:.2f}" for s in scans)} | {crashed} |
| full parse of each file | {full_s:.2f} s | {", ".join(f"{s:.2f}" for s in fulls)} | {crashed} |

Full parse / tails: **{full_s / scan_s:.1f}x**. Target: 1,000 sessions / 2 GB in ≤ 3 s: **{"met" if met else "missed"}**.
"""
    doc = ROOT / "docs" / "benchmarks.md"
    text = doc.read_text() if doc.exists() else ""
    start = text.find(MARK)
    # A later section with a mark of its own (the cold start's) is kept.
    end = text.find("<!-- ", start + len(MARK)) if start != -1 else -1
    rest = "\n" + text[end:] if end != -1 else ""
    text = (text[:start] if start != -1 else text.rstrip("\n") + "\n\n") + section + rest
    doc.write_text(text)


if __name__ == "__main__":
    main()
