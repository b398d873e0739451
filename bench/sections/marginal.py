"""The marginal append table: one append's cost as the session grows, turnlog against the peers' stores."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from children import child, child_task
from sections import summary
from sessions import DATA, TS, langgraph_app


def bench(lengths: list[int], rounds: int) -> list[dict[str, Any]]:
    base = DATA / "marginal"
    shutil.rmtree(base, ignore_errors=True)
    base.mkdir(parents=True)
    text = "Please summarise the attached report and list three follow-ups. " * 2
    # The keys of `subjects` are display labels; row ids come from the task names.
    subjects = {
        "turnlog (barrier), reopened": ("marginal-turnlog", ".jsonl", 2_000, 5.0),
        # A batch (`append_many`, as the peers' add_items takes a list) is
        # checked on a scratch fold: its cost must not grow with the session.
        "turnlog append_many of 2, reopened": ("marginal-turnlog-batch", ".jsonl", 2_000, 5.0),
        "openai-agents SQLiteSession.add_items": ("marginal-sqlite", ".db", 50, 5.0),
        "LangGraph SqliteSaver (checkpoint per message)": ("marginal-langgraph", ".db", 20, 6.0),
        "LangChain FileChatMessageHistory": ("marginal-langchain", ".json", 20, 6.0),
    }
    prepared: dict[tuple[str, int], Path] = {}
    for length in lengths:
        for subject, (task, suffix, _, _) in subjects.items():
            path = base / f"{task}-{length}{suffix}"
            prepare_marginal(task, path, length, text)
            prepared[(subject, length)] = path
    per: dict[tuple[str, int], list[float]] = {key: [] for key in prepared}
    for _ in range(rounds):
        for length in lengths:
            for subject, (task, suffix, count, budget) in subjects.items():
                # A fresh copy of the prepared session each round, so every
                # round times appends to a session of exactly this length.
                source = prepared[(subject, length)]
                run_dir = base / "run"
                shutil.rmtree(run_dir, ignore_errors=True)
                run_dir.mkdir()
                target = run_dir / source.name
                shutil.copy(source, target)
                os.sync()
                scratch = run_dir / f"scratch{suffix}"
                result = child(task, str(target), str(scratch), str(count), str(budget))
                per[(subject, length)].append(result["seconds"])
                shutil.rmtree(run_dir)
    rows = []
    for subject in subjects:
        first = statistics.median(per[(subject, lengths[0])])
        for length in lengths:
            seconds = per[(subject, length)]
            rows.append(
                {
                    "id": f"marginal.{subjects[subject][0].removeprefix('marginal-')}@{length}",
                    "workload": "marginal append vs session length (median append)",
                    "subject": f"{subject} @ {length:,}",
                    **summary([s * 1e6 for s in seconds]),
                    # The batch subject writes two events per call.
                    "unit": "µs/call" if subject.startswith("turnlog append_many") else "µs/append",
                    "ratio": statistics.median(seconds) / first,
                }
            )
    return rows


def prepare_marginal(task: str, path: Path, length: int, text: str) -> None:
    """A session of exactly `length` messages for one subject, made outside the clock."""
    if task in ("marginal-turnlog", "marginal-turnlog-batch"):
        import turnlog
        from turnlog import events as ev
        from turnlog.stores.record import encode_line

        user = ev.UserMessage(content=text)
        lines = [encode_line(ev.Event(seq=0, data=ev.Session(session_id=path.stem), ts=TS))]
        lines += [encode_line(ev.Event(seq=i, data=user, ts=TS)) for i in range(1, length + 1)]
        path.write_bytes(b"".join(lines))
        assert turnlog.inspect(path).events == length + 1
    elif task == "marginal-sqlite":
        from agents import SQLiteSession

        asyncio.run(
            SQLiteSession("bench", str(path)).add_items(
                [{"role": "user", "content": text}] * length
            )
        )
    elif task == "marginal-langgraph":
        from langchain_core.messages import HumanMessage

        langgraph_app(str(path)).update_state(
            {"configurable": {"thread_id": "bench"}},
            {"messages": [HumanMessage(content=text, id=str(i)) for i in range(length)]},
        )
    else:
        from langchain_core.messages import HumanMessage, messages_to_dict

        # Written at once: its own add_messages rewrites the file per message.
        path.write_text(json.dumps(messages_to_dict([HumanMessage(content=text)] * length)))


@child_task(
    "marginal-turnlog",
    "marginal-turnlog-batch",
    "marginal-sqlite",
    "marginal-langgraph",
    "marginal-langchain",
)
def marginal_child(task: str, args: list[str]) -> dict[str, Any]:
    """Time `count` appends to a session that already holds its length, after
    one warm-up append to a scratch session of the same kind; the figure is
    the median append, so one stall of the disk does not stand for the round."""
    target, scratch, count, budget_s = args[0], args[1], int(args[2]), float(args[3])
    text = "Please summarise the attached report and list three follow-ups. " * 2

    def timed(append: Callable[[int], None]) -> float:
        clock = time.perf_counter
        each: list[float] = []
        start = clock()
        while len(each) < count:
            before = clock()
            append(len(each))
            each.append(clock() - before)
            if len(each) >= 2 and clock() - start > budget_s:
                break
        return statistics.median(each)

    if task == "marginal-turnlog":
        import turnlog
        from turnlog import events as ev

        user = ev.UserMessage(content=text)
        with turnlog.open(scratch) as warm:
            warm.append(user)
        with turnlog.open(target) as log:
            seconds = timed(lambda i: log.append(user) and None)
    elif task == "marginal-turnlog-batch":
        import turnlog
        from turnlog import events as ev

        user = ev.UserMessage(content=text)
        with turnlog.open(scratch) as warm:
            warm.append_many([user, user])
        with turnlog.open(target) as log:
            seconds = timed(lambda i: log.append_many([user, user]) and None)
    elif task == "marginal-sqlite":
        from agents import SQLiteSession

        item = {"role": "user", "content": text}
        loop = asyncio.new_event_loop()
        loop.run_until_complete(SQLiteSession("bench", scratch).add_items([item]))
        session = SQLiteSession("bench", target)
        seconds = timed(lambda i: loop.run_until_complete(session.add_items([item])))
    elif task == "marginal-langgraph":
        from langchain_core.messages import HumanMessage

        config = {"configurable": {"thread_id": "bench"}}
        langgraph_app(scratch).update_state(
            config, {"messages": [HumanMessage(content=text, id="w")]}
        )
        app = langgraph_app(target)
        seconds = timed(
            lambda i: app.update_state(
                config, {"messages": [HumanMessage(content=text, id=f"n{i}")]}
            )
        )
    else:
        from langchain_community.chat_message_histories import FileChatMessageHistory
        from langchain_core.messages import HumanMessage

        FileChatMessageHistory(scratch).add_message(HumanMessage(content=text))
        history = FileChatMessageHistory(target)
        seconds = timed(lambda i: history.add_message(HumanMessage(content=text)))
    return {"seconds": seconds}
