"""The report: its tables and machine lines, the targets registered on its rows, and what bounds a missed one."""

from __future__ import annotations

import datetime as dt
import os
import platform
from importlib import metadata
from typing import Any

import per_turn
from registry import Target, Verdict
from sessions import ROOT


def version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "not installed"


def fmt(value: float) -> str:
    if value >= 100:
        return f"{value:,.0f}"
    if value >= 1:
        return f"{value:.2f}"
    return f"{value:.3f}"


def table(rows: list[dict[str, Any]]) -> list[str]:
    extras = [
        k
        for k in ("p10", "p90", "read_kb", "written_bytes", "peak_rss_mb")
        if any(k in r for r in rows)
    ]
    header = ["id", "workload", "subject", "median", "min–max", "unit", "ratio", *extras]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for r in rows:
        cells = [
            f"`{r['id']}`",
            r["workload"],
            r["subject"],
            fmt(r["median"]),
            f"{fmt(r['min'])}–{fmt(r['max'])}",
            r["unit"],
            f"{r['ratio']:.3f}×",
        ]
        cells += [
            (f"{r[k]:.3f}×" if k in ("p10", "p90") else fmt(r[k])) if k in r else "" for k in extras
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def machine() -> list[str]:
    import turnlog

    cpu = "unknown"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    mem_gb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    fs, best = "unknown", ""
    with open("/proc/mounts") as f:
        for line in f:
            _, mount, kind = line.split()[:3]
            if str(ROOT).startswith(mount) and len(mount) > len(best):
                best, fs = mount, kind
    return [
        f"- date: {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC",
        f"- machine: {platform.platform()}, {cpu}, {os.cpu_count()} cores, {mem_gb:.0f} GiB RAM, {fs} file system",
        f"- Python {platform.python_version()}; turnlog {turnlog.__version__}, msgspec {version('msgspec')}, orjson {version('orjson')}",
        f"- peers: openai-agents {version('openai-agents')}, pydantic-ai-slim "
        f"{version('pydantic-ai-slim')}, langgraph {version('langgraph')}, "
        f"langgraph-checkpoint-sqlite {version('langgraph-checkpoint-sqlite')}, langchain-community {version('langchain-community')}",
    ]


def register_targets(config: dict[str, Any]) -> list[Target]:
    """Every target of a run, by id, with the row it judges and the baseline,
    floor or peer beside it (by row id). `config` holds the sizes the run
    uses, so the ids name the rows this run makes; a target whose row is
    missing is missed (see registry.check)."""
    largest = config["detect_largest"]
    longest = config["marginal_lengths"][-1]
    targets = [
        # Item 16: the figures that were blocked by their floors are guarded
        # against those floors, measured in the same run.
        Target(
            "load.vs-floor",
            "load + fold within 1.5× checking and decoding each line with no fold",
            "load.turnlog",
            "<=",
            1.5,
            mode="ratio",
            baseline="load.floor",
        ),
        Target(
            "load.vs-sqlite-session",
            "load + fold at least 2× faster than SQLiteSession.get_items, same records",
            "load.turnlog",
            ">=",
            2.0,
            mode="speedup",
            baseline="load.sqlite",
        ),
        Target(
            "load.vs-orjson",
            "load + fold within 1.25× a bare orjson line loop",
            "load.turnlog",
            "<=",
            1.25,
            mode="ratio",
            baseline="load.orjson",
        ),
        Target(
            "durable.always",
            "durable append (always) within 1.2× write + fdatasync, paired median",
            "durable.always",
            "<=",
            1.2,
            field="ratio",
            baseline="durable.raw",
        ),
        Target(
            "durable.barrier",
            "durable append (barrier, a dispatch) within 1.2× write + fdatasync, paired median",
            "durable.barrier",
            "<=",
            1.2,
            field="ratio",
            baseline="durable.raw",
        ),
        Target(
            "nondurable.mix",
            "non-durable append of the reference loop's mix at least 0.4× its "
            "build-encode-write floor (events/s), fold current",
            "nondurable.mix.turnlog",
            ">=",
            0.4,
            mode="ratio",
            baseline="nondurable.mix.floor",
        ),
        Target(
            "detect.unstamped.time",
            f"inspect on {largest} without the revivals stamp, whole process, within 1 s",
            f"detect.{largest.replace(' ', '')}.unstamped.process",
            "<=",
            1000.0,
            unit=" ms",
        ),
        Target(
            "detect.unstamped.memory",
            f"inspect on {largest} without the revivals stamp, whole process, within 64 MB",
            f"detect.{largest.replace(' ', '')}.unstamped.process",
            "<=",
            64.0,
            field="peak_rss_mb",
            unit=" MB",
        ),
        Target(
            "detect.read",
            f"detection on {largest} reads at most 1 MB",
            f"detect.{largest.replace(' ', '')}.stamped.library",
            "<=",
            1024.0,
            field="read_kb",
            unit=" KB",
        ),
        Target(
            "detect.vs-scan",
            f"detection on {largest} at least 100× faster than a forward scan",
            f"detect.{largest.replace(' ', '')}.stamped.library",
            ">=",
            100.0,
            mode="speedup",
            baseline=f"detect.{largest.replace(' ', '')}.stamped.scan",
        ),
        Target(
            "marginal.flat",
            f"marginal append at {longest:,} events within 1.2× at "
            f"{config['marginal_lengths'][0]:,}",
            f"marginal.turnlog@{longest}",
            "<=",
            1.2,
            mode="ratio",
            baseline=f"marginal.turnlog@{config['marginal_lengths'][0]}",
        ),
        Target(
            "store.sqlite.durable",
            "SQLite durable append within 1.3× a bare driver INSERT + commit, paired median",
            "store.sqlite.turnlog",
            "<=",
            1.3,
            field="ratio",
            baseline="store.sqlite.bare",
        ),
        Target(
            "store.postgres.durable",
            "PostgreSQL durable append within 1.3× a bare driver INSERT + commit, paired median",
            "store.postgres.turnlog",
            "<=",
            1.3,
            field="ratio",
            baseline="store.postgres.bare",
        ),
        Target(
            "store.load.sqlite",
            "load + fold from SQLite within 1.5× from JSONL",
            "store.load.sqlite",
            "<=",
            1.5,
            mode="ratio",
            baseline="store.load.jsonl",
        ),
        Target(
            "sweep.find",
            f"sweep finds the crashed among {config['sweep_sessions']:,} PostgreSQL sessions "
            "within 1 s",
            "sweep.find",
            "<=",
            1000.0,
            unit=" ms",
        ),
    ]
    # Per-turn cost under the frameworks, against each one's own persistence,
    # at every length, for each turnlog side (with the framework's hooks, and
    # without them where the rows have both): a later turn, and the first
    # turn after opening (the open and the first read of the whole session
    # included); and the cost added per 1,000 items no steeper than the peer's.
    for framework in per_turn.COMPARABLE:
        title = per_turn.TITLES[framework]
        sides = [side for side in per_turn.FRAMEWORKS[framework]["sides"] if side != "peer"]
        for length in config["turn_lengths"]:
            for side in sides:
                for first in ("", "first."):
                    what = "the first turn after opening" if first else "one turn"
                    how = "" if side == "turnlog" else f" ({per_turn.label(framework, side)})"
                    suffix = "" if side == "turnlog" else f".{side}"
                    targets.append(
                        Target(
                            f"turn.{framework}{'.first' if first else ''}{suffix}@{length}",
                            f"{title}: {what} at {length:,} items costs no more than the "
                            f"peer's{how} (median of the rounds' paired ratios)",
                            f"turn.{framework}.{first}{side}@{length}",
                            "<=",
                            1.0,
                            field="ratio",
                            baseline=f"turn.{framework}.{first}peer@{length}",
                        )
                    )
        targets.append(
            Target(
                f"turn.{framework}.slope",
                f"{title}: per-turn cost grows no steeper than the peer's "
                f"(ms per 1,000 items, {config['turn_lengths'][0]:,} → "
                f"{config['turn_lengths'][-1]:,})",
                f"turn.{framework}.turnlog.slope",
                "<=",
                1.0,
                mode="ratio",
                baseline=f"turn.{framework}.peer.slope",
            )
        )
    return targets


def missed_notes(rows: list[dict[str, Any]], verdicts: list[Verdict]) -> list[str]:
    """For each missed target, what bounds it, from the floor rows of the same run."""
    by_id = {r["id"]: r for r in rows}
    missed = {v.target.id for v in verdicts if not v.met}
    notes = []
    floor, peer = by_id.get("load.floor"), by_id.get("load.sqlite")
    if floor and peer and missed & {"load.vs-floor", "load.vs-sqlite-session"}:
        notes.append(
            f"- Load: checking and decoding each line with no fold at all took "
            f"{floor['median']:,.0f} ms, {peer['median'] / floor['median']:.2f}× faster than "
            f"SQLiteSession.get_items ({peer['median']:,.0f} ms); no reader that checks every "
            "record's checksum and decodes it does better than that floor."
        )
    floor, mix = by_id.get("nondurable.mix.floor"), by_id.get("nondurable.mix.turnlog")
    if floor and mix and "nondurable.mix" in missed:
        spent_us = 1e6 / mix["median"] - 1e6 / floor["median"]
        notes.append(
            f"- The reference loop's mix: building, stamping, encoding and writing each "
            f"event, with nothing else, ran at {floor['median']:,.0f} events/s; the fold, "
            f"the write-order checks, the lock and the loop's context managers took "
            f"{spent_us:.1f} µs per event on top."
        )
    writer = by_id.get("durable.floor.writer")
    if writer and missed & {"durable.always", "durable.barrier"}:
        notes.append(
            f"- Durable append: the same two system calls as the baseline (write, "
            f"fdatasync). The store's writer alone, with no Log layer, measured "
            f"{writer['ratio']:.3f}× the baseline; the Log layer (lock, checks, fold) adds "
            "the rest."
        )
    for v in verdicts:
        if not v.met and v.missing:
            notes.append(f"- `{v.target.id}`: its row was not produced ({', '.join(v.missing)}).")
    return notes


CORRECTIONS = """\
What changed in the method (and why the earlier figures were wrong): the
earlier load row started the clock and then imported the peer, so most of
SQLiteSession's 1.9-3.3 s was its import and the "6.9× faster" was an
artifact; the SQLite side also held 100,000 flat 300-byte items (33 MB)
against turnlog's 23 MB of nested records; and the bare orjson baseline ran
inside the heavy bench process, where the cycle collector took about half
its time. Now every subject imports before the clock, runs in a fresh
process of its own, rounds interleaved, and the peers hold turnlog's own
records (the same count and bytes). Durable appends were timed subject after
subject while fsync latency drifted between 90 µs and 3.4 ms; now they are
interleaved in blocks with a rotating order and reported as the median
paired ratio with its spread. Marginal appends were one sample after 5,000
warm-up appends (its min-max was the median copied); now each length is
several fresh rounds, each timed right after the session reached that
length, every subject warmed by one append to a scratch session, and a
round's figure is its median append (2,000 for turnlog), so one stall of
the disk does not stand for the round. The
non-durable row adds the reference loop's real event mix, `inspect` is also
timed as a whole process, and a 1 GB log without the revivals stamp has its
own rows. A missed target now fails the run. Each section starts after
`os.sync()`: the SQLite pair measured 1.41× right after the 1 GB sections
had written their files and 1.16-1.26× alone, so a section no longer shares
the disk with another's writeback. Rows marked "floor" do part of a
subject's work with nothing around it, to show what bounds a target.

Targets are registered by id (`register_targets` in bench/report.py, checked by
bench/registry.py): each names the row it judges and the baseline, floor or
peer beside it by the rows' ids, not their labels, and a target whose row
the run did not make is missed, so the run exits 1. Three targets that their
own floors showed out of reach are now guards against those floors, measured
in the same run: load + fold within 1.5× checking and decoding each line (the
floor was 3.1× faster than SQLiteSession, so "4× SQLiteSession" could not be
met by any checked reader; it is now ≥ 2×), durable append within 1.2× a bare
write + fdatasync (was 1.1×: the store's writer alone measured 1.14×), and
the reference loop's mix at least 0.4× the events/s of building, stamping,
encoding and writing the same events with nothing else (was 200,000
events/s, above 0.65× of that floor).
"""
