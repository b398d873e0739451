"""The fork server runs a program as `python` would: argv, environment, folder, streams, exit."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import forkserver

PROGRAM = """
import json, os, sys
print(json.dumps({"argv": sys.argv, "cwd": os.getcwd(), "flag": os.environ.get("FLAG"),
                  "stdin": sys.stdin.read(), "main": __name__, "path0": sys.path[0]}))
print("to stderr", file=sys.stderr)
sys.exit(int(sys.argv[-1]))
"""

RUNNERS = {"subprocess": subprocess.run, "forkserver": forkserver.run}


def python_c(runner: str, code: str) -> subprocess.CompletedProcess[str]:
    """`python -c CODE` by `runner`, its output captured as text."""
    return RUNNERS[runner]([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("runner", RUNNERS)
@pytest.mark.parametrize("how", ["-c", "script", "-m"])
def test_a_program_sees_what_python_would_give_it(tmp_path: Path, runner: str, how: str) -> None:
    (tmp_path / "prog.py").write_text(PROGRAM)
    head = {"-c": ["-c", PROGRAM], "script": [str(tmp_path / "prog.py")], "-m": ["-m", "prog"]}[how]
    done = RUNNERS[runner](
        [sys.executable, *head, "a b", "3"],
        cwd=tmp_path,
        env={**os.environ, "FLAG": "on"},
        input="in",
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 3, done.stderr
    seen = __import__("json").loads(done.stdout)
    assert seen["argv"][1:] == ["a b", "3"]
    assert (
        seen["argv"][0]
        == {"-c": "-c", "script": str(tmp_path / "prog.py"), "-m": str(tmp_path / "prog.py")}[how]
    )
    assert (seen["cwd"], seen["flag"], seen["stdin"], seen["main"]) == (
        str(tmp_path),
        "on",
        "in",
        "__main__",
    )
    assert seen["path0"] in {"": "-c", str(tmp_path): "script"}.keys() | {str(tmp_path)}
    assert done.stderr == "to stderr\n"


@pytest.mark.parametrize("runner", RUNNERS)
def test_a_program_that_kills_itself_reports_the_signal(runner: str) -> None:
    code = "import os, signal; print('before', flush=True); os.kill(os.getpid(), signal.SIGKILL)"
    done = python_c(runner, code)
    assert (done.returncode, done.stdout) == (-9, "before\n")


@pytest.mark.parametrize("runner", RUNNERS)
def test_an_uncaught_error_exits_one_with_its_traceback(runner: str) -> None:
    done = python_c(runner, "raise ValueError('boom')")
    assert done.returncode == 1
    assert "ValueError: boom" in done.stderr


def test_a_program_over_its_timeout_is_killed() -> None:
    with pytest.raises(subprocess.TimeoutExpired):
        forkserver.run([sys.executable, "-c", "import time; time.sleep(60)"], timeout=1)


def test_atexit_and_threads_finish_before_the_exit(tmp_path: Path) -> None:
    code = (
        "import atexit, threading, time, sys\n"
        "atexit.register(lambda: print('atexit', flush=True))\n"
        "threading.Thread(target=lambda: (time.sleep(0.2), print('thread', flush=True))).start()\n"
    )
    done = forkserver.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout.split() == ["thread", "atexit"]


@pytest.mark.parametrize("runner", RUNNERS)
def test_a_module_runs_in_its_own_namespace(tmp_path: Path, runner: str) -> None:
    # `json` is the server's, never the program's: it must not be visible.
    (tmp_path / "prog.py").write_text("print(json.dumps(1))\n")
    done = RUNNERS[runner](
        [sys.executable, "-m", "prog"], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 1 and "NameError" in done.stderr


@pytest.mark.parametrize("runner", RUNNERS)
def test_a_file_left_open_is_flushed_at_the_end(tmp_path: Path, runner: str) -> None:
    code = f"f = open({str(tmp_path / 'out')!r}, 'w'); f.write('hello')"
    done = RUNNERS[runner]([sys.executable, "-c", code], timeout=60)
    assert done.returncode == 0
    assert (tmp_path / "out").read_text() == "hello"


@pytest.mark.parametrize("runner", RUNNERS)
def test_ctrl_c_uncaught_ends_by_the_signal(runner: str) -> None:
    done = python_c(runner, "raise KeyboardInterrupt")
    assert done.returncode == -2


@pytest.mark.parametrize("runner", RUNNERS)
def test_a_missing_folder_is_the_callers_error(tmp_path: Path, runner: str) -> None:
    with pytest.raises(FileNotFoundError):
        RUNNERS[runner]([sys.executable, "-c", "pass"], cwd=tmp_path / "nowhere", timeout=60)


@pytest.mark.parametrize("runner", RUNNERS)
def test_stderr_joins_stdout_when_asked(runner: str) -> None:
    code = "import sys; print('out', flush=True); print('err', file=sys.stderr, flush=True)"
    done = RUNNERS[runner](
        [sys.executable, "-c", code],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=60,
    )
    assert done.stdout.split() == ["out", "err"]
