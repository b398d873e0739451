"""Background children of the asyncio loop: run as tasks, settled on the parent, waited for."""

from __future__ import annotations

import asyncio
import contextlib
import weakref
from collections.abc import Awaitable, Callable

from turnlog import events as ev
from turnlog.core.fold import SessionState
from turnlog.errors import TurnlogError
from turnlog.events import Content
from turnlog.handle.async_log import AsyncLog
from turnlog.runtime import background
from turnlog.text import display_text

# Background children running as tasks of this event loop, by parent handle.
_CHILD_TASKS: weakref.WeakKeyDictionary[AsyncLog, dict[str, asyncio.Task[None]]] = (
    weakref.WeakKeyDictionary()
)


def child_tasks(log: AsyncLog) -> dict[str, asyncio.Task[None]]:
    """The tasks of `log`'s background children running here, by agent id."""
    tasks = _CHILD_TASKS.get(log)
    if tasks is None:
        tasks = _CHILD_TASKS[log] = {}
    return tasks


def start_background(
    parent: AsyncLog,
    spawned: ev.SubagentSpawned,
    child: str,
    body: Callable[[], Awaitable[Content]],
) -> asyncio.Task[None]:
    """Run a child's loop as a task; its end is recorded on the parent."""

    async def run() -> None:
        # A cancelled child (its event loop shutting down) records nothing:
        # like a child whose process died, it is adopted by the parent's next
        # loop, which revives it from its own log.
        try:
            text = display_text(await body())
            outcome = "complete"
        except Exception as exc:  # a failing child is a report, not a crash of the parent
            outcome, text = "error", f"{type(exc).__name__}: {exc}"
        record = background.settled_record(spawned, child, outcome, text)
        # The parent's handle may be closed by then: the child's own log
        # holds the report, and the parent's next loop delivers it.
        with contextlib.suppress(TurnlogError, RuntimeError):
            # RuntimeError: the closed handle's writer thread is gone.
            await asyncio.shield(parent.append(record, sync=True))

    task = asyncio.get_running_loop().create_task(run(), name=f"turnlog-bg-{spawned.agent_id}")
    tasks = child_tasks(parent)
    tasks[spawned.agent_id] = task
    task.add_done_callback(lambda _: tasks.pop(spawned.agent_id, None))
    return task


async def session_state(log: AsyncLog) -> SessionState:
    """The state, read on the writer thread in order with the appends before it."""
    return await log.call(lambda: log.log.state)


async def await_report(
    log: AsyncLog, agent_id: str | None = None, *, timeout_s: float | None = None
) -> bool:
    """Wait until a child running here (or `agent_id`) settles, for at most
    `timeout_s` seconds: True when a report is ready, False when nothing this
    loop runs could bring one or the time passed first."""
    loop = asyncio.get_running_loop()
    deadline = None if timeout_s is None else loop.time() + timeout_s
    while True:
        ready = [c.agent_id for c in background.deliverable(await session_state(log))]
        if (agent_id in ready) if agent_id is not None else ready:
            return True
        tasks = child_tasks(log)
        waiting = (
            [tasks[agent_id]] if agent_id in tasks else [] if agent_id else list(tasks.values())
        )
        if not waiting:
            return False
        left = None if deadline is None else deadline - loop.time()
        if left is not None and left <= 0:
            return False
        await asyncio.wait(waiting, timeout=left, return_when=asyncio.FIRST_COMPLETED)
