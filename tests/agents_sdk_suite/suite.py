"""The Agents SDK's own session tests, run against TurnlogSession: the installed
release's source package, fetched from the package registry (never copied into
this repository), with `shim.py` putting TurnlogSession in its sessions' place.

The cases counted are the ones that build a session (`SQLiteSession` or the
tests' `SimpleListSession`) and pass on the SDK's own sessions here: a first
run with the SDK's sessions (the shim only records which tests build one)
selects them, and is kept beside the unpacked release, so later runs pay only
for the TurnlogSession runs.
"""

from __future__ import annotations

import contextlib
import fcntl
import importlib.metadata
import json
import os
import re
import subprocess
import sys
import tarfile
import tempfile
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
VERSION = importlib.metadata.version("openai-agents")
CACHE = Path(sys.prefix) / "turnlog-suites" / f"openai-agents-{VERSION}"
# The session tests live beside many others; these folders test other
# sessions (Redis, SQLAlchemy, encrypted ones) or need a sandbox backend.
_OTHER_SESSIONS = ("tests/extensions/", "tests/sandbox/")
_BUILDS_A_SESSION = re.compile(r"\b(SQLiteSession|SimpleListSession)\(")
# A whole mode of the suite, at most: a hang fails the run, never stalls it.
RUN_TIMEOUT_S = 900


class SuiteUnavailable(Exception):
    """The release's source package could not be fetched (no registry here)."""


@contextlib.contextmanager
def _alone() -> Iterator[None]:
    """One process at a time fetches, unpacks and selects (the test workers
    of one run share the cache)."""
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def release() -> Path:
    """The unpacked source package of the installed release, fetched once."""
    with _alone():
        return _release()


def _release() -> Path:
    root = CACHE / f"openai_agents-{VERSION}"
    if (root / "tests").is_dir():
        return root
    CACHE.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=CACHE) as into:
        fetched = subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--quiet",
                "--no-deps",
                "--no-binary",
                ":all:",
                "--dest",
                into,
                f"openai-agents=={VERSION}",
            ],
            capture_output=True,
            text=True,
            timeout=300,
        )
        packages = list(Path(into).glob("*.tar.gz"))
        if fetched.returncode != 0 or not packages:
            raise SuiteUnavailable(fetched.stderr.strip()[-500:] or "no source package")
        with tarfile.open(packages[0]) as archive:
            archive.extractall(into, filter="data")
        unpacked = Path(into) / f"openai_agents-{VERSION}"
        unpacked.rename(root)
    return root


def session_test_files(root: Path) -> list[str]:
    """The SDK's test files that build one of its sessions."""
    out = []
    for path in sorted((root / "tests").rglob("test_*.py")):
        relative = path.relative_to(root).as_posix()
        if relative.startswith(_OTHER_SESSIONS):
            continue
        if _BUILDS_A_SESSION.search(path.read_text(encoding="utf-8")):
            out.append(relative)
    return out


@dataclass(frozen=True)
class Outcome:
    passed: bool
    message: str = ""


@dataclass(frozen=True)
class Run:
    outcomes: dict[str, Outcome]
    used: frozenset[str]
    returncode: int
    output: str


def run(root: Path, store: str, *, hooks: bool, only: list[str] | None = None) -> Run:
    """One pytest run of the SDK's session tests, in a process of its own.

    `store` is "sdk" (the SDK's own sessions, recorded), "jsonl" or "sqlite"
    (TurnlogSession on that store); `only` limits it to these node ids."""
    with tempfile.TemporaryDirectory() as scratch:
        junit, report = Path(scratch) / "junit.xml", Path(scratch) / "used"
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]),
            "TURNLOG_SDK_SUITE_STORE": store,
            "TURNLOG_SDK_SUITE_HOOKS": "1" if hooks else "0",
            "TURNLOG_SDK_SUITE_REPORT": str(report),
        }
        if only is not None:
            selected = Path(scratch) / "only.json"
            selected.write_text(json.dumps(only))
            env["TURNLOG_SDK_SUITE_ONLY"] = str(selected)
        command = [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:xdist",
            "-p",
            "no:langsmith_plugin",
            "-p",
            "shim",
            "-o",
            f"faulthandler_timeout={RUN_TIMEOUT_S // 10}",
            f"--junitxml={junit}",
            *session_test_files(root),
        ]
        done = subprocess.run(
            command,
            cwd=root,
            env=env,
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT_S,
        )
        output = (done.stdout + done.stderr)[-4000:]
        outcomes = _outcomes(junit) if junit.exists() else {}
        used = frozenset(json.loads(report.read_text())) if report.exists() else frozenset()
        return Run(outcomes, used, done.returncode, output)


def _outcomes(junit: Path) -> dict[str, Outcome]:
    out: dict[str, Outcome] = {}
    for case in ET.parse(junit).iter("testcase"):
        module, name = case.get("classname"), case.get("name")
        if module is None or name is None:
            continue
        node = f"{module.replace('.', '/')}.py::{name}"
        failed = next((c for c in case if c.tag in ("failure", "error")), None)
        skipped = any(c.tag == "skipped" for c in case)
        if failed is not None:
            out[node] = Outcome(False, (failed.get("message") or "").splitlines()[0][:300])
        elif not skipped:
            out[node] = Outcome(True)
    return out


def selection(root: Path) -> list[str]:
    """The cases that build a session and pass on the SDK's own sessions,
    found once per release and kept beside it."""
    with _alone():
        return _selection(root)


def _selection(root: Path) -> list[str]:
    kept = CACHE / "selection.json"
    if kept.exists():
        cases: list[str] = json.loads(kept.read_text())
        return cases
    baseline = run(root, "sdk", hooks=False)
    cases = sorted(
        node
        for node in baseline.used
        if node in baseline.outcomes and baseline.outcomes[node].passed
    )
    if not cases:
        raise AssertionError(f"the SDK's own run selected no case:\n{baseline.output}")
    kept.write_text(json.dumps(cases, indent=0))
    return cases
