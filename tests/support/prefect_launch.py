"""The Prefect test programs' main: run the flow, mark the killed run crashed (as Prefect does for a run whose process vanished), or retry it."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

from prefect import get_client
from prefect.flow_engine import run_flow
from prefect.states import Crashed, Scheduled


async def mark_crashed(work: Path) -> None:
    """The flow run whose id the flow wrote to WORK/flow_run_id, marked crashed."""
    async with get_client() as client:
        flow_run_id = (work / "flow_run_id").read_text()
        await client.set_flow_run_state(
            flow_run_id, Crashed(message="the worker process vanished"), force=True
        )


async def retry(work: Path, flow: Any, parameters: dict[str, Any]) -> Any:
    """What `prefect flow-run retry --entrypoint` does: the same flow run
    scheduled again, then run here from the top."""
    async with get_client() as client:
        flow_run_id = (work / "flow_run_id").read_text()
        await client.set_flow_run_state(flow_run_id, Scheduled(), force=True)
        flow_run = await client.read_flow_run(flow_run_id)
    result = run_flow(flow, flow_run=flow_run, parameters=parameters)
    return await result if asyncio.iscoroutine(result) else result


def start_or_mark_crashed(work: Path, flow: Any, **parameters: Any) -> None:
    """START runs the flow and prints its result; CRASHED marks the run
    crashed; RETRY runs it again and prints its result."""
    mode = sys.argv[1]
    if mode == "CRASHED":
        asyncio.run(mark_crashed(work))
        return
    if mode == "RETRY":
        print(asyncio.run(retry(work, flow, parameters)))
        return
    result = flow(**parameters)
    print(asyncio.run(result) if asyncio.iscoroutine(result) else result)
