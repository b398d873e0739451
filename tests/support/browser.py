"""Headless Chromium for the page tests: a page's rendered DOM, its console, and a screenshot.

Debian's `chromium` package, started as a user's machine would have it; on
a machine without it the tests skip, and under TURNLOG_REQUIRE_CHROMIUM=1
(CI, which installs it) they fail instead.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

REQUIRE_ENV = "TURNLOG_REQUIRE_CHROMIUM"
# Without the networking flags a closed network refuses Chromium's own
# background connections, many at a time; the page itself loads nothing.
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--enable-logging=stderr",
    "--v=0",
]


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        if os.environ.get(REQUIRE_ENV) == "1":
            pytest.fail(f"{REQUIRE_ENV}=1 but no chromium on PATH (apt-get install chromium)")
        pytest.skip("no chromium on PATH: the browser tests need Debian's chromium package")
    return found


@dataclass
class Rendered:
    dom: str
    console: list[str]


def render(url: str, *, screenshot: Path | None = None, timeout_s: float = 60) -> Rendered:
    """The DOM after the page's script ran (or a screenshot of it), and every
    line the page wrote to its console."""
    with tempfile.TemporaryDirectory() as profile:
        args = [chromium(), *FLAGS, f"--user-data-dir={profile}"]
        if screenshot is not None:
            args += ["--window-size=1280,1000", f"--screenshot={screenshot}"]
        else:
            args.append("--dump-dom")
        done = subprocess.run(
            [*args, url], capture_output=True, text=True, timeout=timeout_s, check=False
        )
    assert done.returncode == 0, done.stderr[-3000:]
    console = [line for line in done.stderr.splitlines() if ":CONSOLE" in line]
    return Rendered(dom=done.stdout, console=console)
