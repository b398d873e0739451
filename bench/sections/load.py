"""The load + fold table: turnlog reading and folding a session against orjson, its floor and the peers, same records."""

from __future__ import annotations

import asyncio
import json
import shutil
import statistics
import time
from typing import Any

from children import child, child_task
from sections import summary
from sessions import DATA, langgraph_app, record_texts, write_session


def bench(events: int, rounds: int) -> list[dict[str, Any]]:
    base = DATA / "load"
    shutil.rmtree(base, ignore_errors=True)
    base.mkdir(parents=True)
    path = base / "load.jsonl"
    count = write_session(path, events=events, result_bytes=400, crashed=False)
    # Display label -> (task, argument); row ids are the task names.
    subjects = {
        "bare orjson line loop": ("load-orjson", str(path)),
        "turnlog read + fold": ("load-turnlog", str(path)),
        "floor: checksum + decode each line, no fold": ("load-floor", str(path)),
    }
    # The peers hold the same records: turnlog's own events, as items (the
    # event's JSON object) or as message texts (its line).
    from turnlog.stores import JSONLStore

    records = JSONLStore(base).read("load")
    try:
        from agents import SQLiteSession

        import turnlog.events as tev

        items = [tev.to_builtins(e) for e in records]
        asyncio.run(SQLiteSession("bench", str(base / "s.db")).add_items(items))
        subjects["openai-agents SQLiteSession.get_items"] = ("load-sqlite", str(base / "s.db"))
    except ImportError:
        pass
    try:
        from langchain_core.messages import HumanMessage, messages_to_dict

        texts = list(record_texts(path))
        langgraph_app(str(base / "g.db")).update_state(
            {"configurable": {"thread_id": "bench"}},
            {"messages": [HumanMessage(content=t, id=str(i)) for i, t in enumerate(texts)]},
        )
        subjects["LangGraph get_state"] = ("load-langgraph", str(base / "g.db"))
        (base / "h.json").write_text(
            json.dumps(messages_to_dict([HumanMessage(content=t) for t in texts]))
        )
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
    for name, runs in results.items():
        assert all(r["events"] == count for r in runs), (name, runs[0]["events"], count)
    turnlog_median = statistics.median(r["seconds"] for r in results["turnlog read + fold"])
    rows = []
    for name, runs in results.items():
        seconds = [r["seconds"] for r in runs]
        rows.append(
            {
                "id": subjects[name][0].replace("-", ".", 1),
                "workload": f"load + fold, the same {count:,} records, {path.stat().st_size / 1e6:.0f} MB",
                "subject": name,
                **summary([s * 1e3 for s in seconds]),
                "unit": "ms",
                "ratio": statistics.median(seconds) / turnlog_median,
                "peak_rss_mb": max(r["peak_rss_bytes"] for r in runs) / 2**20,
            }
        )
    return rows


@child_task(
    "load-turnlog", "load-orjson", "load-floor", "load-sqlite", "load-langgraph", "load-langchain"
)
def load_child(task: str, args: list[str]) -> dict[str, Any]:
    # The names this task uses, bound as locals before the clock starts;
    # `child_main` has loaded their modules already.
    import turnlog
    from turnlog.core.fold import Fold
    from turnlog.stores.record import decode_line, decode_sound_line

    peer = task.rsplit("-", 1)[-1]
    if peer in ("sqlite",):
        from agents import SQLiteSession
    if peer in ("langchain",):
        from langchain_community.chat_message_histories import FileChatMessageHistory
    if peer in ("langgraph",):
        # Imported before the clock: `langgraph_app` then finds them loaded.
        from langgraph.checkpoint.sqlite import SqliteSaver  # noqa: F401
        from langgraph.graph import StateGraph  # noqa: F401
    if task == "load-orjson":
        import orjson

    start = time.perf_counter()
    if task == "load-turnlog":
        store, session_id = turnlog.open_store(args[0])
        assert session_id is not None
        count = Fold(store.iter_events(session_id)).state.next_seq
    elif task == "load-orjson":
        with open(args[0], "rb") as f:
            count = len([orjson.loads(line) for line in f])
    elif task == "load-floor":
        # What every checked read must do per line: verify the checksum
        # and decode the record. No fold, no seq or damage bookkeeping.
        # A process's first lines take the careful path, as in every
        # reader (`events.FAST_DECODER_AFTER_RECORDS`).
        with open(args[0], "rb") as f:
            decoded = [
                decode_sound_line(line[:-1]) or decode_line(line[:-1], checksummed=True)[0]
                for line in f
            ]
        count = len(decoded)
    elif peer == "sqlite":
        items = asyncio.run(SQLiteSession("bench", args[0]).get_items())
        count = len(items)
    elif peer == "langgraph":
        graph = langgraph_app(args[0])
        snapshot = graph.get_state({"configurable": {"thread_id": "bench"}})
        count = len(snapshot.values["messages"])
    else:
        count = len(FileChatMessageHistory(args[0]).messages)
    elapsed = time.perf_counter() - start
    return {"seconds": elapsed, "events": count}
