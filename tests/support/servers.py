"""Servers the tests start on loopback (a Prefect server, a Temporal dev server): a free port, and waiting for one to answer."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def serving(
    args: list[str],
    answers: Callable[[], bool],
    *,
    env: dict[str, str] | None = None,
    what: str,
    timeout_s: float = 120,
) -> Iterator[subprocess.Popen[bytes]]:
    """Start a server in a session of its own, wait until `answers()`, and
    stop it (and whatever it started) at the end."""
    server = subprocess.Popen(
        args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    try:
        deadline = time.monotonic() + timeout_s
        while not answers():
            if server.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the {what} did not start")
            time.sleep(0.2)
        yield server
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)
