"""The DBOS test programs' main: launch DBOS on a system database, then start the workflow or let DBOS recover it."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from dbos import DBOS, SetWorkflowID

WORKFLOW_ID = "agent-1"


def start_or_recover(name: str, sysdb: str, mode: str, start: Callable[[], Awaitable[Any]]) -> None:
    """START runs `start()` as workflow `agent-1`; any other mode waits for
    DBOS, launched again, to recover it. Prints the workflow's result."""

    async def main() -> None:
        # The version is pinned, so a relaunch recovers the workflow whatever
        # the code's hash.
        config: Any = {
            "name": name,
            "system_database_url": sysdb,
            "application_version": "1",
            "log_level": "ERROR",
        }
        DBOS(config=config)
        DBOS.launch()
        try:
            if mode == "START":
                with SetWorkflowID(WORKFLOW_ID):
                    print(await start())
            else:
                handle = await DBOS.retrieve_workflow_async(WORKFLOW_ID)
                print(await handle.get_result(polling_interval_sec=0.05))
        finally:
            DBOS.destroy()

    asyncio.run(main())
