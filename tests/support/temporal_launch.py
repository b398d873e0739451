"""The Temporal test programs' main: a worker that starts the workflow, or takes over one a dead worker left."""

from __future__ import annotations

import asyncio
import os
import sys
from datetime import timedelta
from typing import Any

from temporalio.client import Client
from temporalio.worker import Worker


def start_or_take_over(
    run: Any,
    args: list[Any],
    *,
    task_queue: str,
    client_plugins: list[Any] | None = None,
    **worker: Any,
) -> None:
    """`python PROGRAM START|WORK ADDRESS WORKFLOW_ID`: START starts the
    workflow `run(*args)` and serves it until it ends; WORK serves the task
    queue until that workflow ends (a new worker after a kill). Prints the
    workflow's result, then leaves at once: the SDK's core threads can still
    be winding down at interpreter exit (seen: a fatal PyGILState_Release
    after the result was printed)."""
    mode, address, workflow_id = sys.argv[1:4]

    async def main() -> None:
        client = await Client.connect(address, plugins=client_plugins or [])
        # A dead worker's sticky tasks move on to the new one soon.
        options = {"sticky_queue_schedule_to_start_timeout": timedelta(seconds=1), **worker}
        async with Worker(client, task_queue=task_queue, **options):
            if mode == "START":
                handle = await client.start_workflow(
                    run,
                    args=args,
                    id=workflow_id,
                    task_queue=task_queue,
                    task_timeout=timedelta(seconds=2),
                )
            else:
                handle = client.get_workflow_handle(workflow_id)
            print(await handle.result())

    asyncio.run(main())
    sys.stdout.flush()
    os._exit(0)
