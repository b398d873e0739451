"""A test that kills its worker fails once, and the run still ends with every other test run."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from paths import SUPPORT

CONFTEST = f"""
import sys
sys.path.insert(0, {str(SUPPORT)!r})
import pytest
from worker_schedule import grouped_load

def group_of(nodeid):
    return "together" if "together" in nodeid else None

@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    return grouped_load(config, log, group_of)
"""

TESTS = """
import os, signal, time
import pytest

@pytest.mark.parametrize("n", range(30))
def test_alone(n):
    if n == 4:
        os.kill(os.getpid(), signal.SIGKILL)
    time.sleep(0.02)

@pytest.mark.parametrize("n", range(6))
def test_together(n):
    time.sleep(0.02)
"""


def test_a_killed_worker_is_one_failure_and_the_run_ends(tmp_path: Path) -> None:
    (tmp_path / "conftest.py").write_text(CONFTEST)
    (tmp_path / "test_many.py").write_text(TESTS)
    # pytest-xdist 3.8 as it ships hangs here until the timeout.
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-n",
            "2",
            "--dist",
            "loadgroup",
            "-p",
            "no:cacheprovider",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    summary = done.stdout.strip().splitlines()[-1]
    assert done.returncode == 1, done.stdout[-3000:]
    assert "1 failed, 35 passed" in summary, done.stdout[-3000:]
    assert "test_alone[4]" in done.stdout
