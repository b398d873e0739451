"""The turnlog command line as a user runs it: a process, never a traceback."""

from __future__ import annotations

import subprocess
import sys

import forkserver


def cli(*args: str, timeout_s: float = 120) -> tuple[int, str, str]:
    """Run `turnlog ARGS...` in a fresh process; (exit code, stdout, stderr)."""
    done = forkserver.run(
        [sys.executable, "-m", "turnlog", *args],
        capture_output=True,
        text=True,
        timeout=timeout_s,
        stdin=subprocess.DEVNULL,
    )
    assert "Traceback" not in done.stderr, done.stderr
    return done.returncode, done.stdout, done.stderr
