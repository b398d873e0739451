"""Per-turn cost under the frameworks: what one conversation turn costs the
session layer at 100, 1,000 and 10,000 items, turnlog against the framework's
own persistence, the same items on both sides. Run by bench/run.py.

    python bench/per_turn.py [--lengths 100,1000] [--rounds 3]   # this section alone

Method: for each length N, one session of N items is prepared per side
(outside the clock, the same items, written by one process that then closes
the session as a program does: a TurnlogSession's close leaves the index its
next first read goes through); each measurement is a fresh process on a
fresh copy of it (bytecode compiled, as an install has it; one warm-up
process per side first), sides interleaved round by round (the order
alternating); the ratio is the median of each round's turnlog / peer.
Imports are outside the clock on both sides, and with them what each module
makes at import (turnlog's integration makes what a first open needs; the
SDK's reply classes, which the SDK builds and dumps on either side, are
built before the clock on turnlog's). The process opens the session and
runs a first turn (the "first turn after open" rows: opening and the first
read of the whole session included), then times 10 more turns; its
figure is their mean without the slowest two ("one turn": a turn's syncs
take whole ticks of the disk's clock on some machines, and a median of a
few turns jumps a whole tick). N is the session's length before the
first turn; each turn adds 4 items. A turn is every call the framework makes on its session
layer for one user message answered after one tool call:

- OpenAI Agents SDK: `get_items()`, `add_items([user])`, and, after the
  run, `add_items` of the run's new items (the function call, its output,
  the answer). turnlog's side also gets the hooks' calls (`session.hooks`:
  the model's reply, a durable dispatch before the tool, its result, the turn
  end), as `Runner.run` makes them; the items they wrote are skipped by the
  later `add_items`. A second turnlog side, `bare`, is `TurnlogSession`
  without its hooks (the SDK's calls only, as a program that does not pass
  `session.hooks` makes them). Peer: the SDK's `SQLiteSession` (WAL,
  SQLite's default synchronous=FULL: each `add_items` commit is synced).
- Pydantic AI: the history handed to `agent.run(message_history=...)` and
  what is written after the run. turnlog: `cap.messages()` and the
  capability's hooks for the same run. Peer: the pattern of Pydantic AI's
  chat app example (one SQLite row of `ModelMessagesTypeAdapter` JSON per
  run, every row validated back on load).
- LangGraph: `graph.invoke` of a tool-calling graph (a scripted model node
  and a `ToolNode`) on LangGraph's own `SqliteSaver`, durability "sync".
  turnlog is not a checkpointer: it records the calls beside one, so its
  side is the same graph with `TurnlogToolWrapper` on the tool node and
  `finish` after the run. These rows show what turnlog adds to a LangGraph
  turn; no target compares the two as if one replaced the other.

Growth: the factor (cost at the longest / at the shortest) is shown for each
side, and the target is on the slope (what 1,000 more items add to a turn):
a factor alone rewards a side for a high fixed cost.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
import warnings
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / ".bench-data" / "per_turn"
TURNS = 10  # the method text in the module docstring says 10
ITEMS_PER_TURN = 4  # user, function call, its output, the answer
ANSWER = "The report covers three quarters; revenue rose in each. " * 3
RESULT = "quarter,revenue\n" + "".join(f"Q{q},{1000 + q * 37}\n" for q in range(1, 40))


def prompt(turn: int) -> str:
    return f"Turn {turn}: summarise the attached report and list three follow-ups."


# -- OpenAI Agents SDK -----------------------------------------------------------------


def agents_items(turn: int) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A turn's input item and the items the run adds, as the SDK saves them."""
    call_id = f"call_{turn:06d}"
    user = {"role": "user", "content": prompt(turn)}
    new = [
        {
            "type": "function_call",
            "id": f"fc_{turn:06d}",
            "call_id": call_id,
            "name": "read_report",
            "arguments": json.dumps({"path": f"reports/{turn}.csv"}),
            "status": "completed",
        },
        {"type": "function_call_output", "call_id": call_id, "output": RESULT},
        {
            "type": "message",
            "id": f"msg_{turn:06d}",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": ANSWER, "annotations": []}],
        },
    ]
    return user, new


class _Context:
    """What the SDK's hooks read from their context: the tool call's id."""

    def __init__(self, call_id: str | None = None) -> None:
        self.tool_call_id = call_id


class _Tool:
    name = "read_report"
    metadata = None


def agents_turn_factory(side: str, path: Path) -> tuple[Any, Any]:
    """(open, turn): open the session; one turn on it (a coroutine)."""
    if side in ("turnlog", "bare"):
        from agents.items import ModelResponse
        from agents.usage import Usage

        from turnlog.integrations.openai_agents import TurnlogSession

        # The SDK builds the replies the hooks are handed, and dumps their
        # items to save them, on either side (its models make them); its
        # classes finish building on first use, which is the SDK's cost, not
        # the session layer's: done here, off the clock.
        _, (asked, _, answer) = agents_items(0)
        reply = ModelResponse(output=[asked, answer], usage=Usage(), response_id=None)
        for item in reply.output:
            if hasattr(item, "model_dump"):
                item.model_dump(mode="json", exclude_none=True)

        def open_session() -> Any:
            return TurnlogSession(str(path.parent), path.stem)

        async def turn(session: Any, number: int) -> int:
            items = await session.get_items()
            if side == "bare":
                await _agents_saves(session, number)
            else:
                await _agents_turnlog_writes(session, number)
            return len(items)

        return open_session, turn

    from agents import SQLiteSession

    def open_peer() -> Any:
        return SQLiteSession("bench", str(path))

    async def peer_turn(session: Any, number: int) -> int:
        items = await session.get_items()
        user, new = agents_items(number)
        await session.add_items([user])
        await session.add_items(new)
        return len(items)

    return open_peer, peer_turn


def agents_prepare(side: str, path: Path, length: int) -> None:
    """A session of `length` items (whole turns), written the way the SDK
    writes it, outside any clock."""
    turns = length // ITEMS_PER_TURN
    if side in ("turnlog", "bare"):
        from turnlog.integrations.openai_agents import TurnlogSession

        async def build() -> None:
            # Built with durability none for speed; the file is the same.
            async with TurnlogSession(str(path.parent), path.stem, durability="none") as s:
                for number in range(1, turns + 1):
                    if side == "bare":
                        await _agents_saves(s, number)
                    else:
                        await _agents_turnlog_writes(s, number)

        asyncio.run(build())
    else:
        from agents import SQLiteSession

        async def build_peer() -> None:
            session = SQLiteSession("bench", str(path))
            items: list[Any] = []
            for number in range(1, turns + 1):
                user, new = agents_items(number)
                items += [user, *new]
            await session.add_items(items)
            session.close()

        asyncio.run(build_peer())


async def _agents_saves(session: Any, number: int) -> None:
    """A turn's writes as the SDK makes them on a session with no hooks."""
    user, new = agents_items(number)
    await session.add_items([user])
    await session.add_items(new)


async def _agents_turnlog_writes(session: Any, number: int) -> None:
    """A turn's writes, as `Runner.run` makes them on a `TurnlogSession` and its hooks."""
    from agents.items import ModelResponse
    from agents.usage import Usage

    user, new = agents_items(number)
    await session.add_items([user])
    hooks, run = session.hooks, _Context()
    await hooks.on_llm_start(run, None, None, None)
    await hooks.on_llm_end(
        run, None, ModelResponse(output=[new[0]], usage=Usage(), response_id=None)
    )
    call = _Context(new[0]["call_id"])
    await hooks.on_tool_start(call, None, _Tool())
    await hooks.on_tool_end(call, None, _Tool(), RESULT)
    await hooks.on_llm_start(run, None, None, None)
    await hooks.on_llm_end(
        run, None, ModelResponse(output=[new[2]], usage=Usage(), response_id=None)
    )
    await hooks.on_agent_end(run, None, ANSWER)
    await session.add_items(new)


# -- Pydantic AI --------------------------------------------------------------------------


def pydantic_messages(turn: int) -> list[Any]:
    """The four messages one run adds: the prompt, the model's call, the
    tool's return, the answer."""
    from pydantic_ai import messages as pm

    call_id = f"call_{turn:06d}"
    return [
        pm.ModelRequest(parts=[pm.UserPromptPart(content=prompt(turn))]),
        pm.ModelResponse(
            parts=[
                pm.ToolCallPart(
                    tool_name="read_report",
                    args={"path": f"reports/{turn}.csv"},
                    tool_call_id=call_id,
                )
            ]
        ),
        pm.ModelRequest(
            parts=[pm.ToolReturnPart(tool_name="read_report", content=RESULT, tool_call_id=call_id)]
        ),
        pm.ModelResponse(parts=[pm.TextPart(content=ANSWER)]),
    ]


class _RunContext:
    """What the capability's hooks read from Pydantic AI's run context."""

    def __init__(self, run_id: str, prompt_text: str, messages: list[Any]) -> None:
        self.run_id = run_id
        self.prompt = prompt_text
        self.messages = messages


class _Result:
    def __init__(self, messages: list[Any]) -> None:
        self._messages = messages

    def all_messages(self) -> list[Any]:
        return self._messages


class _ToolDef:
    name = "read_report"
    metadata = None


async def _pydantic_turnlog_turn(cap: Any, number: int, *, build: bool = False) -> int:
    """A run's calls on the capability, in `agent.run`'s order, after
    `cap.messages()` gave it its history. `build`: the same writes without
    reading the history back (a session is prepared in linear time; the
    capability is opened with history="off" then)."""
    history = [] if build else cap.messages()
    request, asked, answered, answer = pydantic_messages(number)
    call = asked.parts[0]
    ctx = _RunContext(f"run-{number}", prompt(number), list(history))
    await cap.before_run(ctx)
    ctx.messages = [*history, request]
    await cap.before_model_request(ctx, None)
    await cap.after_model_request(ctx, request_context=None, response=asked)
    args = call.args_as_dict()
    await cap.before_tool_execute(ctx, call=call, tool_def=_ToolDef(), args=args)
    await cap.after_tool_execute(ctx, call=call, tool_def=_ToolDef(), args=args, result=RESULT)
    ctx.messages = [*history, request, asked, answered]
    await cap.before_model_request(ctx, None)
    await cap.after_model_request(ctx, request_context=None, response=answer)
    await cap.after_run(ctx, result=_Result([*ctx.messages, answer]))
    return len(history)


class ChatAppHistory:
    """Pydantic AI's chat app example's persistence: one SQLite row of
    `ModelMessagesTypeAdapter` JSON per run, every row validated on load
    (examples/pydantic_ai_examples/chat_app.py in the pydantic-ai repository)."""

    def __init__(self, path: Path) -> None:
        import sqlite3

        self.con = sqlite3.connect(str(path), check_same_thread=False)
        self.con.execute(
            "CREATE TABLE IF NOT EXISTS messages (id INTEGER PRIMARY KEY, message_list TEXT);"
        )
        self.con.commit()

    def get_messages(self) -> list[Any]:
        from pydantic_ai.messages import ModelMessagesTypeAdapter

        rows = self.con.execute("SELECT message_list FROM messages order by id").fetchall()
        messages: list[Any] = []
        for row in rows:
            messages.extend(ModelMessagesTypeAdapter.validate_json(row[0]))
        return messages

    def add_messages(self, messages: bytes) -> None:
        self.con.execute("INSERT INTO messages (message_list) VALUES (?);", (messages,))
        self.con.commit()

    def close(self) -> None:
        self.con.close()


def pydantic_turn_factory(side: str, path: Path) -> tuple[Any, Any]:
    if side == "turnlog":
        from turnlog.integrations.pydantic_ai import TurnlogCapability

        def open_cap() -> Any:
            return TurnlogCapability(str(path.parent), path.stem)

        return open_cap, _pydantic_turnlog_turn

    from pydantic_ai.messages import ModelMessagesTypeAdapter

    def open_peer() -> Any:
        return ChatAppHistory(path)

    async def peer_turn(history: Any, number: int) -> int:
        # The example runs its database calls on a thread, as turnlog does.
        messages = await asyncio.to_thread(history.get_messages)
        new = pydantic_messages(number)
        await asyncio.to_thread(history.add_messages, ModelMessagesTypeAdapter.dump_json(new))
        return len(messages)

    return open_peer, peer_turn


def pydantic_prepare(side: str, path: Path, length: int) -> None:
    turns = length // ITEMS_PER_TURN
    if side == "turnlog":
        from turnlog.integrations.pydantic_ai import TurnlogCapability

        async def build() -> None:
            async with TurnlogCapability(
                str(path.parent), path.stem, durability="none", history="off"
            ) as cap:
                for number in range(1, turns + 1):
                    await _pydantic_turnlog_turn(cap, number, build=True)

        asyncio.run(build())
    else:
        from pydantic_ai.messages import ModelMessagesTypeAdapter

        history = ChatAppHistory(path)
        for number in range(1, turns + 1):
            history.add_messages(ModelMessagesTypeAdapter.dump_json(pydantic_messages(number)))
        history.close()


# -- LangGraph ------------------------------------------------------------------------------


def langgraph_messages(turn: int) -> list[Any]:
    """The four thread messages one turn adds, with the ids LangGraph keeps."""
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    call_id = f"call_{turn:06d}"
    call = {"id": call_id, "name": "read_report", "args": {"path": f"reports/{turn}.csv"}}
    return [
        HumanMessage(content=prompt(turn), id=f"h{turn}"),
        AIMessage(content="", tool_calls=[call], id=f"a{turn}"),
        ToolMessage(content=RESULT, tool_call_id=call_id, name="read_report", id=f"t{turn}"),
        AIMessage(content=ANSWER, id=f"f{turn}"),
    ]


def langgraph_app(db: Path, wrapper: Any) -> Any:
    """A tool-calling graph on LangGraph's SqliteSaver: a scripted model that
    asks for one tool call, then answers; the tool node wrapped by turnlog on
    turnlog's side, bare on the peer's."""
    import sqlite3
    from typing import Annotated, TypedDict

    from langchain_core.messages import AIMessage, ToolMessage
    from langchain_core.tools import tool
    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.graph import START, StateGraph
    from langgraph.graph.message import add_messages
    from langgraph.prebuilt import ToolNode, tools_condition

    @tool
    def read_report(path: str) -> str:
        """Read a report."""
        return RESULT

    # The functional form: the class form's annotations would be strings here.
    State = TypedDict("State", {"messages": Annotated[list[Any], add_messages]})  # noqa: UP013

    def model(state: Any) -> dict[str, Any]:
        last = state["messages"][-1]
        human = next(m for m in reversed(state["messages"]) if m.type == "human")
        turn = int(str(human.id).removeprefix("h"))
        if isinstance(last, ToolMessage):
            return {"messages": [AIMessage(content=ANSWER, id=f"f{turn}")]}
        call = {"id": f"call_{turn:06d}", "name": "read_report", "args": {"path": f"{turn}.csv"}}
        return {"messages": [AIMessage(content="", tool_calls=[call], id=f"a{turn}")]}

    graph = StateGraph(State)
    graph.add_node("agent", model)
    graph.add_node("tools", ToolNode([read_report], wrap_tool_call=wrapper))
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition)
    graph.add_edge("tools", "agent")
    connection = sqlite3.connect(str(db), check_same_thread=False)
    return graph.compile(checkpointer=SqliteSaver(connection))


_THREAD = {"configurable": {"thread_id": "bench"}}


def langgraph_turn_factory(side: str, path: Path) -> tuple[Any, Any]:
    from langchain_core.messages import HumanMessage

    if side == "turnlog":
        from turnlog.integrations.langgraph import TurnlogToolWrapper

        def open_session() -> Any:
            wrapper = TurnlogToolWrapper(str(path.parent), path.stem)
            return wrapper, langgraph_app(path.with_suffix(".db"), wrapper)

        async def turn(opened: Any, number: int) -> int:
            wrapper, app = opened
            start = {"messages": [HumanMessage(content=prompt(number), id=f"h{number}")]}
            out = app.invoke(start, _THREAD, durability="sync")
            wrapper.finish(out)
            return len(out["messages"]) - ITEMS_PER_TURN

        return open_session, turn

    def open_peer() -> Any:
        return None, langgraph_app(path, None)

    async def peer_turn(opened: Any, number: int) -> int:
        _, app = opened
        start = {"messages": [HumanMessage(content=prompt(number), id=f"h{number}")]}
        out = app.invoke(start, _THREAD, durability="sync")
        return len(out["messages"]) - ITEMS_PER_TURN

    return open_peer, peer_turn


class _ToolRequest:
    """What the wrapper reads from LangGraph's ToolCallRequest."""

    def __init__(self, call: dict[str, Any], state: Any) -> None:
        self.tool_call = call
        self.state = state
        self.tool = None


def langgraph_prepare(side: str, path: Path, length: int) -> None:
    """The thread of `length` messages in the checkpointer (one update, as
    LangGraph's own `update_state` writes it); on turnlog's side also the
    session the wrapper would have written for those turns."""
    turns = length // ITEMS_PER_TURN
    messages = [m for number in range(1, turns + 1) for m in langgraph_messages(number)]
    db = path.with_suffix(".db") if side == "turnlog" else path
    langgraph_app(db, None).update_state(_THREAD, {"messages": messages}, as_node="agent")
    if side != "turnlog":
        return
    from turnlog.integrations.langgraph import TurnlogToolWrapper

    # The wrapper's own calls for each turn, given that turn's messages only
    # (history="off": the session is prepared in linear time).
    with TurnlogToolWrapper(
        str(path.parent), path.stem, durability="none", history="off"
    ) as wrapper:
        for number in range(1, turns + 1):
            human, asked, answered, answer = langgraph_messages(number)
            request = _ToolRequest(asked.tool_calls[0], {"messages": [human, asked]})
            wrapper(request, lambda _request, answered=answered: answered)
            wrapper.finish({"messages": [human, asked, answered, answer]})


# -- children ---------------------------------------------------------------------------


def child_main(framework: str, side: str, path: Path, length: int) -> None:
    warnings.simplefilter("ignore")
    if framework == "agents":
        open_session, turn = agents_turn_factory(side, path)
    elif framework == "pydantic":
        open_session, turn = pydantic_turn_factory(side, path)
    elif framework == "langgraph":
        open_session, turn = langgraph_turn_factory(side, path)
    else:
        raise SystemExit(f"unknown framework {framework}")
    first_turn = length // ITEMS_PER_TURN + 1

    async def main() -> dict[str, Any]:
        start = time.perf_counter()
        session = open_session()
        seen = await turn(session, first_turn)
        first = time.perf_counter() - start
        assert seen == length, (side, seen, length)
        each = []
        for number in range(first_turn + 1, first_turn + 1 + TURNS):
            start = time.perf_counter()
            await turn(session, number)
            each.append(time.perf_counter() - start)
        close = getattr(session, "close", None)
        if close is not None:
            result = close()
            if asyncio.iscoroutine(result):
                await result
        return {"first_s": first, "turn_s": _trimmed_mean(each)}

    print(json.dumps(asyncio.run(main())))


def _trimmed_mean(samples: list[float]) -> float:
    """The mean without the slowest fifth. A turn's two syncs take whole
    ticks of the disk's clock on some machines (4 ms steps here), so a
    median of a few turns jumps a whole step; a mean of the turns left after
    the stalls are dropped does not."""
    kept = sorted(samples)[: max(1, len(samples) - len(samples) // 5)]
    return statistics.fmean(kept)


# A user's install has its bytecode compiled: without it, what a first turn
# imports late (the JSONL writer, say) would be compiled on the clock, a cost
# the peer's packages never pay. The children write it if missing.
CHILD_ENV = {name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"}


def run_child(framework: str, side: str, path: Path, length: int) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, __file__, "--child", framework, side, str(path), str(length)],
        capture_output=True,
        text=True,
        check=False,
        env=CHILD_ENV,
    )
    if done.returncode != 0:
        raise RuntimeError(f"per-turn child {framework} {side} failed: {done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


# -- the section ------------------------------------------------------------------------

FRAMEWORKS = {
    "agents": {
        "title": "OpenAI Agents SDK",
        "sides": {
            "turnlog": ("TurnlogSession (+ its hooks)", ".jsonl", agents_prepare),
            "bare": ("TurnlogSession, no hooks", ".jsonl", agents_prepare),
            # The peer is the last side: the slope ratios divide by its slope.
            "peer": ("SQLiteSession", ".db", agents_prepare),
        },
    },
    # turnlog is not a LangGraph checkpointer (it records the calls beside
    # one): its rows show what it adds to a turn on LangGraph's SqliteSaver,
    # and no target compares the two as if one replaced the other.
    "langgraph": {
        "title": "LangGraph",
        "comparable": False,
        "sides": {
            "turnlog": (
                "SqliteSaver + TurnlogToolWrapper (wrap_tool_call, finish)",
                ".jsonl",
                langgraph_prepare,
            ),
            "peer": ("SqliteSaver alone", ".db", langgraph_prepare),
        },
    },
    "pydantic": {
        "title": "Pydantic AI",
        "sides": {
            "turnlog": (
                "TurnlogCapability: cap.messages() + its hooks",
                ".jsonl",
                pydantic_prepare,
            ),
            "peer": (
                "chat app example: SQLite rows of ModelMessagesTypeAdapter JSON",
                ".db",
                pydantic_prepare,
            ),
        },
    },
}


TITLES = {framework: str(spec["title"]) for framework, spec in FRAMEWORKS.items()}


def label(framework: str, side: str) -> str:
    """What a side of a framework's rows runs, as its rows name it."""
    return str(FRAMEWORKS[framework]["sides"][side][0])


# The frameworks whose peer turnlog's side replaces (the targets compare those).
COMPARABLE = [framework for framework, spec in FRAMEWORKS.items() if spec.get("comparable", True)]
METHOD = (
    "Per-turn method (`bench/per_turn.py`, run by `make bench`). "
    + __doc__.split("\n\n", 2)[2].strip()
    if __doc__
    else ""
)


def bench(
    lengths: list[int],
    rounds: int,
    frameworks: list[str] | None = None,
    *,
    without_index: bool = False,
) -> list[dict[str, Any]]:
    shutil.rmtree(DATA, ignore_errors=True)
    DATA.mkdir(parents=True)
    rows: list[dict[str, Any]] = []
    for framework in frameworks or list(FRAMEWORKS):
        spec = FRAMEWORKS[framework]
        prepared: dict[tuple[str, int], Path] = {}
        for length in lengths:
            for side, (_, suffix, prepare) in spec["sides"].items():
                path = DATA / framework / f"{side}-{length}" / f"s{length}{suffix}"
                path.parent.mkdir(parents=True)
                prepare(side, path, length)
                if without_index:
                    # As a writer killed before its close leaves it: no index.
                    for index in path.parent.glob("*.index-*"):
                        index.unlink()
                prepared[(side, length)] = path
        per: dict[tuple[str, int], list[dict[str, Any]]] = {key: [] for key in prepared}
        for side in spec["sides"]:
            # A warm-up, not kept: it writes the bytecode.
            _measure(framework, side, prepared[(side, lengths[0])], lengths[0])
        for r in range(rounds):
            for length in lengths:
                sides = list(spec["sides"])
                if r % 2:
                    sides.reverse()
                for side in sides:
                    result = _measure(framework, side, prepared[(side, length)], length)
                    per[(side, length)].append(result)
        rows += _rows(framework, spec, lengths, per)
    return rows


def _measure(framework: str, side: str, source: Path, length: int) -> dict[str, Any]:
    """One fresh process on a fresh copy of a prepared session."""
    run_dir = DATA / "run"
    shutil.rmtree(run_dir, ignore_errors=True)
    shutil.copytree(source.parent, run_dir)
    os.sync()
    try:
        return run_child(framework, side, run_dir / source.name, length)
    finally:
        shutil.rmtree(run_dir)


def _spread(samples: list[float]) -> tuple[float, float]:
    """The 10th and 90th percentiles (min and max below three samples)."""
    if len(samples) < 3:
        return min(samples), max(samples)
    deciles = statistics.quantiles(samples, n=10, method="inclusive")
    return deciles[0], deciles[-1]


def _rows(
    framework: str,
    spec: dict[str, Any],
    lengths: list[int],
    per: dict[tuple[str, int], list[dict[str, Any]]],
) -> list[dict[str, Any]]:
    rows = []
    title = spec["title"]
    for key, what in (("turn_s", "one turn"), ("first_s", "first turn after open")):
        for length in lengths:
            peer = [r[key] for r in per[("peer", length)]]
            for side, (label, _, _) in spec["sides"].items():
                mine = [r[key] for r in per[(side, length)]]
                # Paired by round: the two sides ran one after the other, so a
                # round's ratio shares the disk's mood of the moment.
                ratios = [m / p for m, p in zip(mine, peer, strict=True)]
                low, high = _spread(ratios)
                row_id = f"turn.{framework}.{'first.' if key == 'first_s' else ''}{side}@{length}"
                rows.append(
                    {
                        "id": row_id,
                        "workload": f"{title}, {what}, {length:,} items",
                        "subject": label,
                        "median": statistics.median(mine) * 1e3,
                        "min": min(mine) * 1e3,
                        "max": max(mine) * 1e3,
                        "unit": "ms/turn",
                        "ratio": statistics.median(ratios),
                        **({"p10": low, "p90": high} if side != "peer" else {}),
                    }
                )
    # Growth from the shortest to the longest session, each side on its own:
    # the factor (long / short), and the slope (what 1,000 more items add to
    # a turn). The factor alone favours a side with a high fixed cost: the
    # target is on the slope, the factor is shown beside it.
    short_n, long_n = lengths[0], lengths[-1]
    if short_n == long_n:
        return rows  # one length (--lengths 100): no growth to measure
    for side, (label, _, _) in spec["sides"].items():
        short = statistics.median(r["turn_s"] for r in per[(side, short_n)]) * 1e3
        long = statistics.median(r["turn_s"] for r in per[(side, long_n)]) * 1e3
        workload = f"{title}, one turn, {short_n:,} → {long_n:,} items"
        rows.append(
            {
                "id": f"turn.{framework}.{side}.growth",
                "workload": workload,
                "subject": f"{label}: growth factor",
                "median": long / short,
                "min": long / short,
                "max": long / short,
                "unit": "× (long / short)",
                "ratio": long / short,
            }
        )
        slope = (long - short) / (long_n - short_n) * 1000
        rows.append(
            {
                "id": f"turn.{framework}.{side}.slope",
                "workload": workload,
                "subject": f"{label}: slope",
                "median": slope,
                "min": slope,
                "max": slope,
                "unit": "ms per 1,000 items",
                "ratio": 1.0,
            }
        )
    # Ratios of the slope rows: turnlog's over the peer's.
    peer_slope = rows[-1]["median"]
    for row in rows:
        if row["id"].endswith(".slope"):
            row["ratio"] = row["median"] / peer_slope if peer_slope else float("inf")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    parser.add_argument("--lengths", default="100,1000,10000")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--frameworks", default=",".join(FRAMEWORKS))
    parser.add_argument(
        "--without-index",
        action="store_true",
        help="Measure sessions with no index beside them (a writer killed before its close).",
    )
    args = parser.parse_args()
    if args.child:
        framework, side, path, length = args.child
        child_main(framework, side, Path(path), int(length))
        return
    lengths = [int(n) for n in args.lengths.split(",")]
    rows = bench(lengths, args.rounds, args.frameworks.split(","), without_index=args.without_index)
    for row in rows:
        print(
            f"{row['id']:40} {row['median']:10.3f} {row['unit']:16} "
            f"ratio {row['ratio']:.3f}  ({row['min']:.3f}–{row['max']:.3f})"
        )


if __name__ == "__main__":
    main()
