"""Child processes: `child` starts a measurement in a fresh interpreter, `child_main` runs it.

A child re-runs `bench/run.py --child TASK ARGS`. That file imports every
section, so every task is registered, and it gives every child, whatever its
task, the same modules before `child_main` adds the ones any subject needs.
The I/O counters are read after those imports; the task runs, and the child
prints one JSON object with its figures.
"""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

# The entry point a child re-runs: it imports every section, so each task is
# registered by the time `child_main` looks it up.
RUN = Path(__file__).resolve().with_name("run.py")

Task = Callable[[str, list[str]], dict[str, Any]]
TASKS: dict[str, Task] = {}


def child_task(*names: str) -> Callable[[Task], Task]:
    """Register a child task under these names; it is called with its name and arguments."""

    def register(run: Task) -> Task:
        for name in names:
            if name in TASKS:
                raise ValueError(f"two child tasks share the name {name}")
            TASKS[name] = run
        return run

    return register


def proc_io() -> dict[str, int]:
    out = {}
    with open("/proc/self/io") as f:
        for line in f:
            key, value = line.split(":")
            out[key] = int(value)
    return out


def peak_rss_bytes() -> int:
    """This process's resident-set high-water mark (VmHWM)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return 0


def child(task: str, *args: str) -> dict[str, Any]:
    """One measurement in a fresh interpreter; it prints one JSON object."""
    result = subprocess.run(
        [sys.executable, str(RUN), "--child", task, *args],
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        raise RuntimeError(f"child {task} failed: {result.stderr[-3000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def child_main(task: str, args: list[str]) -> None:
    warnings.simplefilter("ignore")
    # Every import a subject needs happens here, before any clock starts and
    # before the I/O counters are first read, so neither counts the reading
    # of modules. The tasks import the same names again and only find them
    # loaded; the names bound here go unused, hence the noqa.
    import turnlog  # noqa: F401
    from turnlog import events as ev  # noqa: F401
    from turnlog.core.fold import Fold  # noqa: F401

    peer = task.rsplit("-", 1)[-1] if task.startswith(("load-", "marginal-")) else ""
    if peer in ("sqlite",):
        from agents import SQLiteSession  # noqa: F401
    if peer in ("langgraph",):
        # The peer's modules load before any clock, as every other subject's do.
        from langgraph.checkpoint.sqlite import SqliteSaver  # noqa: F401
        from langgraph.graph import StateGraph  # noqa: F401
    if peer in ("langchain",):
        from langchain_community.chat_message_histories import FileChatMessageHistory  # noqa: F401
    if task == "load-orjson":
        import orjson  # noqa: F401
    from turnlog.handle.log import utc_now  # noqa: F401
    from turnlog.stores.record import decode_line, decode_sound_line, encode_line_into  # noqa: F401

    io_before = proc_io()
    run = TASKS.get(task)
    if run is None:
        raise SystemExit(f"unknown task {task}")
    extra = run(task, args)
    io_after = proc_io()
    print(
        json.dumps(
            {
                "read_bytes": io_after["rchar"] - io_before["rchar"],
                "written_bytes": io_after["wchar"] - io_before["wchar"],
                "peak_rss_bytes": peak_rss_bytes(),
                **extra,
            }
        )
    )
