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

from per_turn_workloads import (
    DATA,
    ITEMS_PER_TURN,
    TURNS,
    agents_prepare,
    agents_turn_factory,
    langgraph_prepare,
    langgraph_turn_factory,
    pydantic_prepare,
    pydantic_turn_factory,
)

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
