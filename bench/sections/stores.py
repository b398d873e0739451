"""The stores table: SQLite and PostgreSQL against bare drivers, loads by store, a fleet sweep (the work is in bench/stores.py)."""

from __future__ import annotations

import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from children import child, child_task
from sections import spread, summary
from sessions import DATA, write_session

# bench/stores.py is imported only where it is used: a child that measures
# something else never loads it (nor the sqlite3 it imports), so the modules
# a child starts with, and the memory and reads they cost, stay the same.


def bench(quick: bool, rounds: int) -> list[dict[str, Any]]:
    import stores
    from turnlog.ops.transfer import copy_session
    from turnlog.stores import JSONLStore, SQLiteStore

    base = DATA / "stores"
    shutil.rmtree(base, ignore_errors=True)
    base.mkdir(parents=True)
    blocks, per_block = (10, 10) if quick else (150, 20)
    rows = _paired_rows(
        "SQLite",
        child("durable-sqlite", str(base / "durable"), str(blocks), str(per_block)),
        "bare INSERT in autocommit (WAL, synchronous=FULL)",
    )
    # Load + fold from SQLite against the same session in JSONL.
    events = 10_000 if quick else 100_000
    jsonl_dir = base / "jsonl"
    count = write_session(jsonl_dir / "load.jsonl", events=events, result_bytes=400, crashed=False)
    database = base / "load.db"
    copy_session(JSONLStore(jsonl_dir), "load", SQLiteStore(database))
    subjects = {
        "turnlog JSONL store": f"jsonl:{jsonl_dir}",
        "turnlog SQLite store": f"sqlite:///{database}",
    }
    ids = {"turnlog JSONL store": "store.load.jsonl", "turnlog SQLite store": "store.load.sqlite"}
    seconds: dict[str, list[float]] = {name: [] for name in subjects}
    for _ in range(rounds):
        for name, store_url in subjects.items():
            result = child("load-store", store_url, "load")
            assert result["events"] == count
            seconds[name].append(result["seconds"])
    jsonl_median = statistics.median(seconds["turnlog JSONL store"])
    for name, values in seconds.items():
        rows.append(
            {
                "id": ids[name],
                "workload": f"load + fold, {count:,} events, by store",
                "subject": name,
                **summary([v * 1e3 for v in values]),
                "unit": "ms",
                "ratio": statistics.median(values) / jsonl_median,
            }
        )
    with stores.postgres() as dsn:
        if dsn is None:
            print("no PostgreSQL server: its rows are left out", file=sys.stderr)
            return rows
        rows += _paired_rows(
            "PostgreSQL",
            child("durable-postgres", dsn, str(blocks), str(per_block)),
            "bare psycopg INSERT in autocommit",
        )
        sessions, crashed = (1_000, 20) if quick else (10_000, 100)
        fleet = child("sweep-fleet", dsn, str(sessions), str(crashed))
        workload = f"sweep, PostgreSQL, {sessions:,} sessions, {crashed} crashed"
        rows.append(
            {
                "id": "sweep.find",
                "workload": workload,
                "subject": "find the crashed (index)",
                **summary([v * 1e3 for v in fleet["find_s"]]),
                "unit": "ms",
                "ratio": 1.0,
            }
        )
        repair_ms = fleet["repair_s"] * 1e3
        rows.append(
            {
                "id": "sweep.recover-all",
                "workload": workload,
                "subject": f"recover all {crashed}",
                "median": repair_ms,
                "min": repair_ms,
                "max": repair_ms,
                "unit": "ms",
                "ratio": fleet["repair_s"] / statistics.median(fleet["find_s"]),
            }
        )
    return rows


def _paired_rows(name: str, result: dict[str, Any], bare_label: str) -> list[dict[str, Any]]:
    workload = f"{name} durable append, {result['ops']:,} ops each, paired blocks"
    store = {"SQLite": "sqlite", "PostgreSQL": "postgres"}[name]
    ratios = result["ratios"]["turnlog"]
    low, high = spread(ratios)
    return [
        {
            "id": f"store.{store}.bare",
            "workload": workload,
            "subject": bare_label,
            **summary([s * 1e6 for s in result["per_op"]["bare"]]),
            "unit": "µs/append",
            "ratio": 1.0,
        },
        {
            "id": f"store.{store}.turnlog",
            "workload": workload,
            "subject": f"turnlog {name} store, always",
            **summary([s * 1e6 for s in result["per_op"]["turnlog"]]),
            "unit": "µs/append",
            "ratio": statistics.median(ratios),
            "p10": low,
            "p90": high,
        },
    ]


@child_task("durable-sqlite")
def durable_sqlite(task: str, args: list[str]) -> dict[str, Any]:
    import stores

    return stores.durable_sqlite(Path(args[0]), int(args[1]), int(args[2]))


@child_task("durable-postgres")
def durable_postgres(task: str, args: list[str]) -> dict[str, Any]:
    import stores

    return stores.durable_postgres(args[0], int(args[1]), int(args[2]))


@child_task("sweep-fleet")
def sweep_fleet(task: str, args: list[str]) -> dict[str, Any]:
    import stores

    return stores.sweep_fleet(args[0], int(args[1]), int(args[2]))


@child_task("load-store")
def load_store(task: str, args: list[str]) -> dict[str, Any]:
    import turnlog
    from turnlog.core.fold import Fold

    store, _ = turnlog.open_store(args[0])
    start = time.perf_counter()
    count = Fold(store.iter_events(args[1])).state.next_seq
    return {"seconds": time.perf_counter() - start, "events": count}
