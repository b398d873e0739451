"""A throwaway PostgreSQL cluster for the tests, or the one TURNLOG_TEST_POSTGRES_DSN names."""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager

DSN_ENV = "TURNLOG_TEST_POSTGRES_DSN"
REQUIRE_ENV = "TURNLOG_REQUIRE_POSTGRES"


def _bin_dir() -> str | None:
    """Where initdb and pg_ctl are: on PATH, or Debian's versioned directory."""
    found = shutil.which("initdb")
    if found:
        return os.path.dirname(found)
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), reverse=True)
    return os.path.dirname(candidates[0]) if candidates else None


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def postgres_dsn() -> Iterator[str | None]:
    """Yield a DSN for a superuser on a server; None when there is none to start."""
    if os.environ.get(DSN_ENV):
        yield os.environ[DSN_ENV]
        return
    bin_dir = _bin_dir()
    if bin_dir is None:
        yield None
        return
    run_as: list[str] = []
    if os.geteuid() == 0:
        # initdb refuses to run as root: the cluster belongs to `postgres`.
        run_as = ["runuser", "-u", "postgres", "--"]
    root = tempfile.mkdtemp(prefix="turnlog-pg-")
    data = os.path.join(root, "data")
    if run_as:
        shutil.chown(root, "postgres", "postgres")
    port = _free_port()
    try:
        subprocess.run(
            [
                *run_as,
                f"{bin_dir}/initdb",
                "-D",
                data,
                "-U",
                "postgres",
                "-A",
                "trust",
                "--no-sync",
                "-E",
                "UTF8",
            ],
            check=True,
            capture_output=True,
        )
        subprocess.run(
            [
                *run_as,
                f"{bin_dir}/pg_ctl",
                "-D",
                data,
                "-w",
                "-t",
                "60",
                "-l",
                os.path.join(root, "log"),
                "-o",
                f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c fsync=on",
                "start",
            ],
            check=True,
            capture_output=True,
        )
        yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run(
            [*run_as, f"{bin_dir}/pg_ctl", "-D", data, "-m", "immediate", "stop"],
            capture_output=True,
        )
        shutil.rmtree(root, ignore_errors=True)
