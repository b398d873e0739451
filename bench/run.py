"""turnlog benchmarks: every figure is a ratio against a baseline measured in the same run.

    python bench/run.py [--quick] [--out docs/benchmarks.md]

Each workload runs several rounds, subjects interleaved, and reports the
median with the min-max. Memory and I/O figures come from child processes
(`ru_maxrss`, `/proc/self/io`), so one measurement never inherits another's
heap. Data lives under `.bench-data/` on the disk the repository is on.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import time
import warnings
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

import turnlog
from turnlog import events as ev
from turnlog.stores.jsonl_record import encode_line

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / ".bench-data"
SIZES_BYTES = {"1 MB": 1 << 20, "100 MB": 100 << 20, "1 GB": 1 << 30}
# About 200 bytes on disk, like a typical tool_dispatch record.
DISPATCH = ev.ToolDispatch(
    call_id="call_0123456789abcdef", name="write_file", idempotency="destructive"
)
USER = ev.UserMessage(
    content="Please summarise the attached report and list three follow-ups. " * 2
)


# -- measurement helpers -----------------------------------------------------------


def summary(samples: list[float]) -> dict[str, float]:
    return {"median": statistics.median(samples), "min": min(samples), "max": max(samples)}


def proc_io() -> dict[str, int]:
    out = {}
    with open("/proc/self/io") as f:
        for line in f:
            key, value = line.split(":")
            out[key] = int(value)
    return out


def peak_rss_bytes() -> int:
    """This process's resident-set high-water mark. VmHWM, not ru_maxrss:
    Linux carries ru_maxrss across fork and exec, so a child would report
    its parent's peak."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def child(task: str, *args: str) -> dict[str, Any]:
    """Run one measurement in a fresh interpreter; it prints one JSON object."""
    result = subprocess.run(
        [sys.executable, __file__, "--child", task, *args],
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        raise RuntimeError(f"child {task} failed: {result.stderr[-2000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "not installed"


# -- data ---------------------------------------------------------------------------


def turn_events(seq: int, turn: int, result_bytes: int) -> list[ev.Event]:
    """One realistic turn: a request, two tool calls with outputs, an answer."""
    ts = "2026-11-29T12:00:00.000000Z"
    a, b = f"call_{turn}_a", f"call_{turn}_b"
    payloads: list[ev.EventData] = [
        ev.UserMessage(content=f"Request {turn}: " + "please look into this. " * 6),
        ev.TurnStart(turn=turn, revivals=0),
        ev.StepStart(turn=turn, step=1),
        ev.AssistantMessage(
            content="Looking.",
            tool_calls=[
                ev.ToolCall(id=a, name="read_file", arguments={"path": f"src/{turn}.py"}),
                ev.ToolCall(id=b, name="run_tests", arguments={"k": "fast"}),
            ],
        ),
        ev.ToolDispatch(call_id=a, name="read_file", idempotency="read_only"),
        ev.ToolResult(call_id=a, name="read_file", content="x" * result_bytes),
        ev.ToolDispatch(call_id=b, name="run_tests", idempotency="idempotent"),
        ev.ToolResult(call_id=b, name="run_tests", content="y" * result_bytes),
        ev.StepEnd(turn=turn, step=1, outcome="ok"),
        ev.StepStart(turn=turn, step=2),
        ev.AssistantMessage(content="All tests pass; the file looks fine. " * 4),
        ev.StepEnd(turn=turn, step=2, outcome="ok"),
        ev.TurnEnd(reason="complete", turn=turn, steps=2),
    ]
    return [ev.Event(seq=seq + i, data=data, ts=ts) for i, data in enumerate(payloads)]


def crashed_tail(seq: int, turn: int) -> list[ev.Event]:
    ts = "2026-11-29T12:00:00.000000Z"
    payloads: list[ev.EventData] = [
        ev.UserMessage(content="Deploy it."),
        ev.TurnStart(turn=turn, revivals=0),
        ev.StepStart(turn=turn, step=1),
        ev.AssistantMessage(
            tool_calls=[
                ev.ToolCall(id="deploy", name="deploy", arguments={}),
                ev.ToolCall(id="notify", name="notify", arguments={}),
            ]
        ),
        ev.ToolDispatch(call_id="deploy", name="deploy", idempotency="destructive"),
    ]
    return [ev.Event(seq=seq + i, data=data, ts=ts) for i, data in enumerate(payloads)]


def write_session(
    path: Path,
    *,
    size_bytes: int | None = None,
    events: int | None = None,
    result_bytes: int = 4000,
    crashed: bool = True,
) -> int:
    """A session of whole turns up to a size or an event count; returns its event count."""
    path.parent.mkdir(parents=True, exist_ok=True)
    header = ev.Event(
        seq=0, data=ev.Session(session_id=path.stem, created_at="2026-11-29T12:00:00Z")
    )
    written, seq, turn = 0, 1, 0
    with open(path, "wb") as f:
        f.write(encode_line(header))
        while True:
            turn += 1
            batch = turn_events(seq, turn, result_bytes)
            if events is not None and seq + len(batch) > events - (6 if crashed else 0):
                break
            chunk = b"".join(encode_line(e) for e in batch)
            if size_bytes is not None and written + len(chunk) > size_bytes:
                break
            f.write(chunk)
            written += len(chunk)
            seq += len(batch)
        if crashed:
            tail = crashed_tail(seq, turn)
            f.write(b"".join(encode_line(e) for e in tail))
            seq += len(tail)
    return seq


# -- children: one measurement each -----------------------------------------------------


def child_main(task: str, args: list[str]) -> None:
    warnings.simplefilter("ignore")
    io_before = proc_io()
    start = time.perf_counter()
    extra: dict[str, Any] = {}
    if task == "inspect":
        found = turnlog.inspect(args[0])
        extra = {"status": found.status, "owed": len(found.owed_calls)}
    elif task == "forward-scan":
        # The least a forward reader must do: read and decode every line.
        count = 0
        decode = ev.decode_event
        with open(args[0], "rb") as f:
            for line in f:
                decode(line)
                count += 1
        extra = {"events": count}
    elif task == "recover":
        store, session_id = turnlog.open_store(args[0])
        assert session_id is not None
        recovery = turnlog.recover(store, session_id)
        extra = {"appended": len(recovery.plan.events)}
    elif task == "load-turnlog":
        store, session_id = turnlog.open_store(args[0])
        assert session_id is not None
        state = turnlog.fold(store.read(session_id))
        extra = {"events": state.next_seq}
    elif task == "load-orjson":
        import orjson

        with open(args[0], "rb") as f:
            rows = [orjson.loads(line) for line in f]
        extra = {"events": len(rows)}
    elif task == "load-sqlitesession":
        from agents import SQLiteSession

        session = SQLiteSession("bench", args[0])
        items = asyncio.run(session.get_items())
        extra = {"events": len(items)}
    elif task == "load-langgraph":
        graph = langgraph_app(args[0])
        snapshot = graph.get_state({"configurable": {"thread_id": "bench"}})
        extra = {"events": len(snapshot.values["messages"])}
    elif task == "load-langchain":
        from langchain_community.chat_message_histories import FileChatMessageHistory

        extra = {"events": len(FileChatMessageHistory(args[0]).messages)}
    else:
        raise SystemExit(f"unknown task {task}")
    elapsed = time.perf_counter() - start
    io_after = proc_io()
    print(
        json.dumps(
            {
                "seconds": elapsed,
                "read_bytes": io_after["rchar"] - io_before["rchar"],
                "written_bytes": io_after["wchar"] - io_before["wchar"],
                "peak_rss_bytes": peak_rss_bytes(),
                **extra,
            }
        )
    )


def write_langchain_history(path: Path, count: int, text: str) -> None:
    """The file FileChatMessageHistory keeps, written at once: its own
    add_messages rewrites the whole file per message, which takes hours at 100k."""
    from langchain_core.messages import HumanMessage, messages_to_dict

    path.write_text(json.dumps(messages_to_dict([HumanMessage(content=text)] * count)))


def langgraph_app(db_path: str) -> Any:
    import sqlite3

    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.graph import END, START, MessagesState, StateGraph

    conn = sqlite3.connect(db_path, check_same_thread=False)
    graph = StateGraph(MessagesState)
    graph.add_node("noop", lambda state: {})
    graph.add_edge(START, "noop")
    graph.add_edge("noop", END)
    return graph.compile(checkpointer=SqliteSaver(conn))


# -- workloads -------------------------------------------------------------------------------


def bench_durable(rounds: int, ops: int) -> list[dict[str, Any]]:
    base = DATA / "durable"
    shutil.rmtree(base, ignore_errors=True)
    base.mkdir(parents=True)
    line = encode_line(ev.Event(seq=1, data=DISPATCH, ts="2026-11-29T12:00:00.000000Z"))
    samples: dict[str, list[float]] = {"raw": [], "always": [], "barrier": []}
    for r in range(rounds):
        fd = os.open(base / f"raw{r}", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        t = time.perf_counter()
        for _ in range(ops):
            os.write(fd, line)
            os.fdatasync(fd)
        samples["raw"].append((time.perf_counter() - t) / ops)
        os.close(fd)
        for mode in ("always", "barrier"):
            with turnlog.open(base / f"{mode}{r}.jsonl", durability=mode) as log:  # type: ignore[arg-type]
                with log.turn():
                    pass
                t = time.perf_counter()
                for _ in range(ops):
                    log.append(DISPATCH)
                samples[mode].append((time.perf_counter() - t) / ops)
    raw = statistics.median(samples["raw"])
    return [
        {
            "workload": "durable append (~200 B)",
            "subject": name,
            **summary([s * 1e6 for s in values]),
            "unit": "µs/append",
            "ratio": statistics.median(values) / raw,
        }
        for name, values in (
            ("os.write + fdatasync", samples["raw"]),
            ("turnlog always", samples["always"]),
            ("turnlog barrier (dispatch)", samples["barrier"]),
        )
    ]


def bench_nondurable(rounds: int, n: int) -> list[dict[str, Any]]:
    base = DATA / "nondurable"
    shutil.rmtree(base, ignore_errors=True)
    base.mkdir(parents=True)
    line = encode_line(ev.Event(seq=1, data=USER, ts="2026-11-29T12:00:00.000000Z"))
    raw_rates, turnlog_rates = [], []
    for r in range(rounds):
        fd = os.open(base / f"raw{r}", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        t = time.perf_counter()
        for _ in range(n):
            os.write(fd, line)
        raw_rates.append(n / (time.perf_counter() - t))
        os.close(fd)
        with turnlog.open(base / f"t{r}.jsonl", durability="none") as log:
            t = time.perf_counter()
            for _ in range(n):
                log.append(USER)
            turnlog_rates.append(n / (time.perf_counter() - t))
            assert log.state.next_seq == n + 1  # the fold is current
    raw = statistics.median(raw_rates)
    return [
        {
            "workload": f"non-durable append ({len(line)} B)",
            "subject": name,
            **summary(rates),
            "unit": "events/s",
            "ratio": statistics.median(rates) / raw,
        }
        for name, rates in (
            ("os.write of encoded lines", raw_rates),
            ("turnlog none, fold current", turnlog_rates),
        )
    ]


def _time_appends(append: Callable[[int], None], count: int, budget_s: float) -> float:
    """Mean seconds per append over `count` appends, or fewer if the budget runs out."""
    done, start = 0, time.perf_counter()
    while done < count:
        append(done)
        done += 1
        if done >= 2 and time.perf_counter() - start > budget_s:
            break
    return (time.perf_counter() - start) / done


def bench_marginal(lengths: list[int], appends: int) -> list[dict[str, Any]]:
    base = DATA / "marginal"
    shutil.rmtree(base, ignore_errors=True)
    base.mkdir(parents=True)
    warnings.simplefilter("ignore")
    per_subject: dict[str, dict[int, float]] = {}
    for length in lengths:
        # turnlog, barrier mode: the append of a message is written, not synced.
        path = base / f"t{length}.jsonl"
        write_session(path, events=length, result_bytes=100, crashed=False)
        # Flush the prepared data first, so the kernel's writeback of it does
        # not land in the middle of the appends being timed.
        os.sync()
        with turnlog.open(path) as log:
            # Appends cost microseconds: time many, in rounds, and keep the median.
            _time_appends(lambda i, log=log: log.append(USER), 5_000, 5.0)  # warm-up, discarded
            per_subject.setdefault("turnlog (barrier)", {})[length] = statistics.median(
                _time_appends(lambda i, log=log: log.append(USER), 5_000, 5.0) for _ in range(5)
            )
        try:
            from agents import SQLiteSession

            session = SQLiteSession("bench", str(base / f"s{length}.db"))
            item = {"role": "user", "content": USER.content}
            loop = asyncio.new_event_loop()
            loop.run_until_complete(session.add_items([item] * length))
            os.sync()
            per_subject.setdefault("openai-agents SQLiteSession.add_items", {})[length] = (
                _time_appends(
                    lambda i, loop=loop, session=session, item=item: loop.run_until_complete(
                        session.add_items([item])
                    ),
                    appends,
                    5.0,
                )
            )
            loop.close()
        except ImportError:
            pass
        try:
            from langchain_core.messages import HumanMessage

            app = langgraph_app(str(base / f"g{length}.db"))
            config = {"configurable": {"thread_id": "bench"}}
            app.update_state(
                config,
                {
                    "messages": [
                        HumanMessage(content=str(USER.content), id=str(i)) for i in range(length)
                    ]
                },
            )
            os.sync()
            per_subject.setdefault("LangGraph SqliteSaver (checkpoint per message)", {})[length] = (
                _time_appends(
                    lambda i, app=app, config=config: app.update_state(
                        config, {"messages": [HumanMessage(content="next", id=f"n{i}")]}
                    ),
                    appends,
                    8.0,
                )
            )
        except ImportError:
            pass
        try:
            from langchain_community.chat_message_histories import FileChatMessageHistory
            from langchain_core.messages import HumanMessage

            history_path = base / f"h{length}.json"
            write_langchain_history(history_path, length, str(USER.content))
            os.sync()
            history = FileChatMessageHistory(str(history_path))
            per_subject.setdefault("LangChain FileChatMessageHistory", {})[length] = _time_appends(
                lambda i, history=history: history.add_message(HumanMessage(content="next")),
                appends,
                8.0,
            )
        except ImportError:
            pass
    rows = []
    for subject, by_length in per_subject.items():
        first = by_length[lengths[0]]
        for length, seconds in by_length.items():
            rows.append(
                {
                    "workload": "marginal append vs session length",
                    "subject": f"{subject} @ {length:,}",
                    "median": seconds * 1e6,
                    "min": seconds * 1e6,
                    "max": seconds * 1e6,
                    "unit": "µs/append",
                    "ratio": seconds / first,
                }
            )
    return rows


def bench_load(events: int, rounds: int) -> list[dict[str, Any]]:
    base = DATA / "load"
    shutil.rmtree(base, ignore_errors=True)
    base.mkdir(parents=True)
    warnings.simplefilter("ignore")
    path = base / "load.jsonl"
    count = write_session(path, events=events, result_bytes=400, crashed=False)
    subjects = {
        "bare orjson line loop": ("load-orjson", str(path)),
        "turnlog read + fold": ("load-turnlog", str(path)),
    }
    try:
        from agents import SQLiteSession

        session = SQLiteSession("bench", str(base / "s.db"))
        asyncio.run(session.add_items([{"role": "user", "content": "x" * 300}] * count))
        subjects["openai-agents SQLiteSession.get_items"] = (
            "load-sqlitesession",
            str(base / "s.db"),
        )
    except ImportError:
        pass
    try:
        from langchain_core.messages import HumanMessage

        app = langgraph_app(str(base / "g.db"))
        app.update_state(
            {"configurable": {"thread_id": "bench"}},
            {"messages": [HumanMessage(content="x" * 300, id=str(i)) for i in range(count)]},
        )
        subjects["LangGraph get_state"] = ("load-langgraph", str(base / "g.db"))
    except ImportError:
        pass
    try:
        import langchain_community.chat_message_histories  # noqa: F401 - the loader needs it

        write_langchain_history(base / "h.json", count, "x" * 300)
        subjects["LangChain FileChatMessageHistory.messages"] = (
            "load-langchain",
            str(base / "h.json"),
        )
    except ImportError:
        pass
    results: dict[str, list[dict[str, Any]]] = {name: [] for name in subjects}
    for _ in range(rounds):
        for name, (task, arg) in subjects.items():
            results[name].append(child(task, arg))
    turnlog_median = statistics.median(r["seconds"] for r in results["turnlog read + fold"])
    rows = []
    for name, runs in results.items():
        seconds = [r["seconds"] for r in runs]
        rows.append(
            {
                "workload": f"load + fold, {count:,} events",
                "subject": name,
                **summary([s * 1e3 for s in seconds]),
                "unit": "ms",
                "ratio": statistics.median(seconds) / turnlog_median,
                "peak_rss_mb": max(r["peak_rss_bytes"] for r in runs) / 2**20,
            }
        )
    return rows


def bench_detection(sizes: list[str], rounds: int) -> list[dict[str, Any]]:
    base = DATA / "detect"
    base.mkdir(parents=True, exist_ok=True)
    rows = []
    for label in sizes:
        path = base / f"crash-{label.replace(' ', '')}.jsonl"
        if not path.exists() or path.stat().st_size < SIZES_BYTES[label] * 0.9:
            write_session(path, size_bytes=SIZES_BYTES[label])
        inspect_runs, scan_runs = [], []
        for _ in range(rounds):
            inspect_runs.append(child("inspect", str(path)))
            scan_runs.append(child("forward-scan", str(path)))
        assert all(r["status"] == "interrupted" and r["owed"] == 2 for r in inspect_runs)
        scan_median = statistics.median(r["seconds"] for r in scan_runs)
        for name, runs in (
            ("turnlog inspect (tail)", inspect_runs),
            ("forward scan (read + decode)", scan_runs),
        ):
            seconds = [r["seconds"] for r in runs]
            rows.append(
                {
                    "workload": f"crash detection, {label}",
                    "subject": name,
                    **summary([s * 1e3 for s in seconds]),
                    "unit": "ms",
                    "ratio": statistics.median(seconds) / scan_median,
                    "read_kb": statistics.median(r["read_bytes"] for r in runs) / 1024,
                    "peak_rss_mb": max(r["peak_rss_bytes"] for r in runs) / 2**20,
                }
            )
    return rows


def bench_recover(label: str, rounds: int) -> list[dict[str, Any]]:
    path = DATA / "detect" / f"crash-{label.replace(' ', '')}.jsonl"
    if not path.exists():
        write_session(path, size_bytes=SIZES_BYTES[label])
    size = path.stat().st_size
    runs = []
    for _ in range(rounds):
        runs.append(child("recover", str(path)))
        os.truncate(path, size)  # back to the crashed state for the next round
    assert all(r["appended"] == 4 for r in runs)
    seconds = [r["seconds"] for r in runs]
    return [
        {
            "workload": f"recover, {label} crashed session",
            "subject": "turnlog recover",
            **summary([s * 1e3 for s in seconds]),
            "unit": "ms",
            "ratio": 1.0,
            "read_kb": statistics.median(r["read_bytes"] for r in runs) / 1024,
            "written_bytes": statistics.median(r["written_bytes"] for r in runs),
            "peak_rss_mb": max(r["peak_rss_bytes"] for r in runs) / 2**20,
        }
    ]


# -- report ---------------------------------------------------------------------------------


def fmt(value: float) -> str:
    if value >= 100:
        return f"{value:,.0f}"
    if value >= 1:
        return f"{value:.2f}"
    return f"{value:.3f}"


def table(rows: list[dict[str, Any]]) -> list[str]:
    extras = [k for k in ("read_kb", "written_bytes", "peak_rss_mb") if any(k in r for r in rows)]
    header = ["workload", "subject", "median", "min–max", "unit", "ratio", *extras]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for r in rows:
        cells = [
            r["workload"],
            r["subject"],
            fmt(r["median"]),
            f"{fmt(r['min'])}–{fmt(r['max'])}",
            r["unit"],
            f"{r['ratio']:.3f}×",
        ]
        cells += [fmt(r[k]) if k in r else "" for k in extras]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def machine() -> list[str]:
    cpu = "unknown"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    mem_gb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    fs = "unknown"
    best = ""
    with open("/proc/mounts") as f:
        for line in f:
            _, mount, kind = line.split()[:3]
            if str(ROOT).startswith(mount) and len(mount) > len(best):
                best, fs = mount, kind
    return [
        f"- date: {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC",
        f"- machine: {platform.platform()}, {cpu}, {os.cpu_count()} cores, {mem_gb:.0f} GiB RAM, {fs} file system",
        f"- Python {platform.python_version()}; turnlog {turnlog.__version__}, msgspec {version('msgspec')}, orjson {version('orjson')}",
        f"- peers: openai-agents {version('openai-agents')}, langgraph {version('langgraph')}, "
        f"langgraph-checkpoint-sqlite {version('langgraph-checkpoint-sqlite')}, langchain-community {version('langchain-community')}",
    ]


def targets(rows: list[dict[str, Any]]) -> list[str]:
    def find(workload: str, subject: str) -> dict[str, Any] | None:
        return next(
            (
                r
                for r in rows
                if r["workload"].startswith(workload) and r["subject"].startswith(subject)
            ),
            None,
        )

    out = []

    def check(name: str, ok: bool, detail: str) -> None:
        out.append(f"| {name} | {detail} | {'met' if ok else 'MISSED'} |")

    for mode in ("turnlog always", "turnlog barrier"):
        r = find("durable append", mode)
        if r:
            check(
                f"durable append ({mode}) ≤ 1.25× write + fdatasync",
                r["ratio"] <= 1.25,
                f"{r['ratio']:.3f}×",
            )
    r = find("non-durable append", "turnlog")
    if r:
        check(
            "non-durable append ≥ 150,000 events/s, fold current",
            r["median"] >= 150_000,
            f"{r['median']:,.0f} events/s",
        )
    marginal = [
        x
        for x in rows
        if x["workload"].startswith("marginal") and x["subject"].startswith("turnlog")
    ]
    if marginal:
        last = marginal[-1]
        check(
            "marginal append at 100,000 ≤ 1.2× at 100",
            last["ratio"] <= 1.2,
            f"{last['ratio']:.3f}×",
        )
    t = find("load + fold", "turnlog")
    s = find("load + fold", "openai-agents")
    o = find("load + fold", "bare orjson")
    if t and s:
        speedup = s["median"] / t["median"]
        check(
            "load + fold ≥ 3× faster than SQLiteSession.get_items",
            speedup >= 3,
            f"{speedup:.2f}× faster",
        )
    if t and o:
        check(
            "load + fold within 1.5× of a bare orjson loop",
            t["median"] / o["median"] <= 1.5,
            f"{t['median'] / o['median']:.3f}×",
        )
    for label in ("1 GB",):
        i = find(f"crash detection, {label}", "turnlog")
        f = find(f"crash detection, {label}", "forward")
        if i and f:
            check(
                f"detection on {label} reads ≤ 1 MB",
                i["read_kb"] <= 1024,
                f"{i['read_kb']:,.0f} KB read",
            )
            check(
                f"detection on {label} ≥ 100× faster than a forward scan",
                f["median"] / i["median"] >= 100,
                f"{f['median'] / i['median']:,.0f}× faster",
            )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick", action="store_true", help="Small sizes and few rounds (a smoke run)."
    )
    parser.add_argument("--out", default=str(ROOT / "docs" / "benchmarks.md"))
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child_main(args.child[0], args.child[1:])
        return
    quick = args.quick
    rounds = 3 if quick else 5
    started = time.perf_counter()
    sections = [
        ("Durable append", lambda: bench_durable(rounds, 50 if quick else 200)),
        ("Non-durable append", lambda: bench_nondurable(rounds, 10_000 if quick else 50_000)),
        (
            "Append cost vs session length",
            lambda: bench_marginal([100, 1_000] if quick else [100, 10_000, 100_000], 200),
        ),
        ("Load + fold", lambda: bench_load(10_000 if quick else 100_000, 3)),
        ("Crash detection", lambda: bench_detection(["1 MB"] if quick else list(SIZES_BYTES), 3)),
        ("Recover", lambda: bench_recover("1 MB" if quick else "1 GB", 3)),
    ]
    report = [
        "# Benchmarks",
        "",
        "Produced by `make bench` (`python bench/run.py`"
        + (" --quick" if quick else "")
        + "). Every ratio is against a baseline measured in the same run;",
        "medians over rounds, min–max beside them. The machine is shared and noisy: read ratios, not absolutes.",
        "",
    ]
    report += machine() + [""]
    all_rows = []
    for title, run in sections:
        print(f"== {title}", flush=True)
        rows = run()
        all_rows += rows
        lines = table(rows)
        print("\n".join(lines), flush=True)
        report += [f"## {title}", "", *lines, ""]
    report += [
        "SQLite and PostgreSQL stores have not landed yet; their append and load rows come with them.",
        "Page cache warm for every read: the files were just written or read.",
        "",
    ]
    report += ["## Targets", "", "| target | measured | |", "|---|---|---|", *targets(all_rows), ""]
    report += [f"Total run time: {time.perf_counter() - started:.0f} s.", ""]
    print("\n".join(report[-(len(targets(all_rows)) + 6) :]))
    Path(args.out).write_text("\n".join(report))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
