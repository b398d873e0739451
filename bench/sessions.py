"""The sessions and peer stores the sections measure, written under .bench-data/ outside the clock."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / ".bench-data"
TS = "2026-11-29T12:00:00.000000Z"
GB = 1 << 30


def turn_payloads(turn: int, result_bytes: int, *, stamp: bool = True) -> list[Any]:
    """One realistic turn, as the reference loop writes it: a request, a step
    asking for two tools, each dispatched and answered, a final answer."""
    from turnlog import events as ev

    a, b = f"call_{turn}_a", f"call_{turn}_b"
    return [
        ev.UserMessage(content=f"Request {turn}: " + "please look into this. " * 6),
        ev.TurnStart(turn=turn, revivals=0 if stamp else None),
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


def crashed_payloads(turn: int, *, stamp: bool = True) -> list[Any]:
    from turnlog import events as ev

    return [
        ev.UserMessage(content="Deploy it."),
        ev.TurnStart(turn=turn, revivals=0 if stamp else None),
        ev.StepStart(turn=turn, step=1),
        ev.AssistantMessage(
            tool_calls=[
                ev.ToolCall(id="deploy", name="deploy", arguments={}),
                ev.ToolCall(id="notify", name="notify", arguments={}),
            ]
        ),
        ev.ToolDispatch(call_id="deploy", name="deploy", idempotency="destructive"),
    ]


def write_session(
    path: Path,
    *,
    size_bytes: int | None = None,
    events: int | None = None,
    result_bytes: int = 4000,
    crashed: bool = True,
    stamp: bool = True,
) -> int:
    """A session of whole turns up to a size or an event count; returns its event count."""
    from turnlog import events as ev
    from turnlog.stores.record import encode_line

    path.parent.mkdir(parents=True, exist_ok=True)
    written, seq, turn = 0, 1, 0
    with open(path, "wb") as f:
        f.write(encode_line(ev.Event(seq=0, data=ev.Session(session_id=path.stem), ts=TS)))
        while True:
            turn += 1
            payloads = turn_payloads(turn, result_bytes, stamp=stamp)
            if events is not None and seq + len(payloads) > events - (5 if crashed else 0):
                break
            chunk = b"".join(
                encode_line(ev.Event(seq=seq + i, data=p, ts=TS)) for i, p in enumerate(payloads)
            )
            if size_bytes is not None and written + len(chunk) > size_bytes:
                break
            f.write(chunk)
            written += len(chunk)
            seq += len(payloads)
        if crashed:
            tail = crashed_payloads(turn, stamp=stamp)
            f.write(
                b"".join(
                    encode_line(ev.Event(seq=seq + i, data=p, ts=TS)) for i, p in enumerate(tail)
                )
            )
            seq += len(tail)
    return seq


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


def record_texts(path: Path) -> Iterator[str]:
    """turnlog's own records, as the texts peers store (same count, same bytes)."""
    with open(path, encoding="utf-8") as f:
        for line in f:
            yield line.rstrip("\n")
