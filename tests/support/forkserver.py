"""The tests' fork server: a warm interpreter that starts each program as a fresh process.

Most of a program's start is its imports (the Agents SDK alone takes over a
second). A test that needs a fresh process, to SIGKILL it or to hold a lock
across processes, does not need a fresh interpreter: `run` asks one server
per test process, which has imported the heavy modules once, to fork a child
that runs the program as `python` would (`-c CODE`, `-m MODULE` or a script,
with the caller's argv, environment, working directory and standard
streams). The child is a real process: a SIGKILL ends it as it ends any
other, and the locks it held go with it.

What only a fresh interpreter shows (import costs, memory, which modules a
command loads) keeps `subprocess`. TURNLOG_TEST_FRESH_INTERPRETERS=1 sends
every program to `subprocess` instead, to check that nothing depends on the
server.
"""

from __future__ import annotations

import atexit
import contextlib
import errno
import gc
import importlib
import json
import os
import selectors
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import traceback
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any, NoReturn

FRESH_ENV = "TURNLOG_TEST_FRESH_INTERPRETERS"
# Imported once by the server. Only modules that read no settings from the
# environment when imported (DBOS and Temporal read theirs when a program
# configures them); Prefect reads its settings at import, so its programs
# import it fresh in the child.
PRELOAD = (
    "turnlog",
    "turnlog.cli",
    "turnlog.integrations.openai_agents",
    "turnlog.integrations.pydantic_ai",
    "turnlog.integrations.langgraph",
    "turnlog.integrations.adk",
    "agents",
    "pydantic_ai",
    "langgraph.graph",
    "langgraph.checkpoint.sqlite",
    "google.adk.runners",
    "google.adk.agents",
    "psycopg",
    "dbos",
    "temporalio.client",
    "temporalio.worker",
)
_HEADER = struct.Struct("<I")
_START_TIMEOUT_S = 120.0


# -- the client, in the test process --------------------------------------------------


class _Server:
    def __init__(self) -> None:
        self.folder = tempfile.mkdtemp(prefix="turnlog-forkserver-")
        self.socket_path = os.path.join(self.folder, "s")
        self.log_path = os.path.join(self.folder, "server.log")
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen(
                [sys.executable, __file__, self.socket_path],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
                env={**os.environ, "PYTHONPATH": _pythonpath()},
            )
        assert self.process.stdout is not None
        ready = self.process.stdout.readline()
        if ready.strip() != b"ready":
            raise RuntimeError(f"the fork server did not start: {Path(self.log_path).read_text()}")

    def alive(self) -> bool:
        return self.process.poll() is None


_server: _Server | None = None
_server_lock = threading.Lock()


def _pythonpath() -> str:
    # The server imports turnlog and the support folder as the test process does.
    here = str(Path(__file__).resolve().parent)
    inherited = os.environ.get("PYTHONPATH")
    return os.pathsep.join([here, inherited] if inherited else [here])


def _the_server() -> _Server:
    global _server
    with _server_lock:
        if _server is None or not _server.alive():
            _server = _Server()
            atexit.register(_stop, _server)
        return _server


def _stop(server: _Server) -> None:
    # Closing its stdin ends the server; the children it forked are the callers' to end.
    with contextlib.suppress(Exception):
        assert server.process.stdin is not None
        server.process.stdin.close()
        server.process.wait(timeout=10)
    shutil.rmtree(server.folder, ignore_errors=True)


def _forkable(args: Sequence[str]) -> bool:
    if os.environ.get(FRESH_ENV) == "1" or len(args) < 2 or args[0] != sys.executable:
        return False
    first = args[1]
    if first in ("-c", "-m"):
        return len(args) >= 3
    return not first.startswith("-")


def _output_file(
    choice: Any, capture: bool, files: contextlib.ExitStack
) -> tuple[int, IO[bytes] | None]:
    """The descriptor the child writes to (-1: the caller's own), and the file to read back."""
    if capture or choice == subprocess.PIPE:
        kept = files.enter_context(tempfile.TemporaryFile())  # noqa: SIM115
        return kept.fileno(), kept
    if choice == subprocess.DEVNULL:
        return files.enter_context(open(os.devnull, "wb")).fileno(), None
    if choice is None:
        return -1, None
    return _fd_of(choice), None


def _fd_of(choice: Any) -> int:
    return choice if isinstance(choice, int) else int(choice.fileno())


def _read_line(conn: socket.socket) -> bytes:
    line = b""
    while not line.endswith(b"\n"):
        chunk = conn.recv(1)
        if not chunk:
            raise RuntimeError("the fork server went away")
        line += chunk
    return line


def _read_back(kept: IO[bytes] | None, text: bool) -> Any:
    if kept is None:
        return None
    kept.seek(0)
    data = kept.read()
    if not text:
        return data
    return data.decode().replace("\r\n", "\n").replace("\r", "\n")


def run(
    args: Sequence[str],
    *,
    cwd: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    input: str | bytes | None = None,
    stdin: Any = None,
    capture_output: bool = False,
    stdout: Any = None,
    stderr: Any = None,
    text: bool = False,
    timeout: float | None = None,
    check: bool = False,
) -> subprocess.CompletedProcess[Any]:
    """`subprocess.run` for a Python program, forked from the warm server.

    Takes the subset of `subprocess.run`'s arguments the tests use and
    returns what it returns: the exit code (minus the signal's number when a
    signal ended the program), and the output when captured.
    """
    args = [str(a) for a in args]
    if cwd is not None and not os.path.isdir(cwd):
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), os.fspath(cwd))
    if not _forkable(args):
        return subprocess.run(
            args,
            cwd=cwd,
            env=env,
            input=input,
            stdin=stdin,
            capture_output=capture_output,
            stdout=stdout,
            stderr=stderr,
            text=text,
            timeout=timeout,
            check=check,
        )
    with contextlib.ExitStack() as files:
        # No input reads as an empty file: the test process's own stdin is not the program's.
        given = files.enter_context(tempfile.TemporaryFile())
        if input is not None:
            given.write(input.encode() if isinstance(input, str) else input)
            given.seek(0)
        in_fd = given.fileno() if stdin in (None, subprocess.DEVNULL) else _fd_of(stdin)
        out_fd, out_file = _output_file(stdout, capture_output, files)
        out_fd = out_fd if out_fd >= 0 else 1
        if stderr == subprocess.STDOUT:
            err_fd, err_file = out_fd, None
        else:
            err_fd, err_file = _output_file(stderr, capture_output, files)
            err_fd = err_fd if err_fd >= 0 else 2
        fds = [in_fd, out_fd, err_fd]
        returncode = _fork_and_wait(args, fds, cwd, env, timeout, (out_file, err_file), text)
        done = subprocess.CompletedProcess(
            args, returncode, _read_back(out_file, text), _read_back(err_file, text)
        )
    if check:
        done.check_returncode()
    return done


def _fork_and_wait(
    args: list[str],
    fds: list[int],
    cwd: str | os.PathLike[str] | None,
    env: Mapping[str, str] | None,
    timeout: float | None,
    outputs: tuple[IO[bytes] | None, IO[bytes] | None],
    text: bool,
) -> int:
    """The exit code of `args` run by a child of the server on `fds`."""
    request = json.dumps(
        {
            "argv": args[1:],
            "cwd": os.fspath(cwd) if cwd is not None else os.getcwd(),
            "env": dict(os.environ if env is None else env),
        }
    ).encode()
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.connect(_the_server().socket_path)
        socket.send_fds(conn, [_HEADER.pack(len(request))], fds)
        conn.sendall(request)
        conn.settimeout(_START_TIMEOUT_S)
        pid = int(_read_line(conn))
        conn.settimeout(timeout)
        try:
            return int(_read_line(conn))
        except TimeoutError:
            _kill(pid)
            conn.settimeout(_START_TIMEOUT_S)
            _read_line(conn)
            raise subprocess.TimeoutExpired(
                args,
                timeout or 0,
                output=_read_back(outputs[0], text),
                stderr=_read_back(outputs[1], text),
            ) from None
        except BaseException:
            # A test's own time limit, or Ctrl-C: the program ends with the
            # wait, as `subprocess.run`'s does.
            _kill(pid)
            raise


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


# -- the server, in its own process ---------------------------------------------------


def _preload() -> None:
    for name in PRELOAD:
        # A module missing here is missing in the child too: it fails there, as it would.
        with contextlib.suppress(Exception):
            importlib.import_module(name)


def _exit_code(exc: SystemExit) -> int:
    code = exc.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def _child(request: dict[str, Any], fds: list[int], base_path: list[str]) -> NoReturn:
    """Become the program (its streams, folder, environment, argv and path),
    run it, and end as a program does: non-daemon threads joined, atexit
    run, files it left open flushed. Not by unwinding into the interpreter's
    own end, which tears down every module the server imported (2.8 s)."""
    try:
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
        for fd in fds:
            if fd > 2:
                os.close(fd)
        signal.set_wakeup_fd(-1)
        for number in (signal.SIGCHLD, signal.SIGTERM):
            signal.signal(number, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        argv: list[str] = request["argv"]
        extra = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
        # The program's own __main__, never the server's namespace.
        main = type(sys)("__main__")
        main.__dict__["__builtins__"] = __builtins__
        sys.modules["__main__"] = main
    except BaseException:
        # Never back into the server's loop.
        traceback.print_exc()
        os._exit(1)
    try:
        if argv[0] == "-c":
            sys.argv = ["-c", *argv[2:]]
            sys.path[:] = ["", *extra, *base_path]
            exec(compile(argv[1], "<string>", "exec"), main.__dict__)
        elif argv[0] == "-m":
            import runpy

            sys.argv = [argv[1], *argv[2:]]
            sys.path[:] = [os.getcwd(), *extra, *base_path]
            runpy._run_module_as_main(argv[1], alter_argv=True)  # type: ignore[attr-defined]
        else:
            import runpy

            script = os.path.abspath(argv[0])
            sys.argv = [argv[0], *argv[1:]]
            sys.path[:] = [os.path.dirname(script), *extra, *base_path]
            runpy.run_path(script, run_name="__main__")
        code = 0
    except SystemExit as exc:
        code = _exit_code(exc)
    except KeyboardInterrupt:
        # As the interpreter does: the program ends by the signal.
        traceback.print_exc()
        sys.stderr.flush()
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
        code = 1
    except BaseException:
        traceback.print_exc()
        code = 1
    _end(main, code)


def _end(main: Any, code: int) -> NoReturn:
    with contextlib.suppress(BaseException):
        threading._shutdown()  # type: ignore[attr-defined]
    with contextlib.suppress(BaseException):
        atexit._run_exitfuncs()
    # What the program's namespace held goes now: a file it left open is
    # flushed and closed, as at an interpreter's end. The server's objects
    # are frozen (`gc.freeze`), so this collection walks the program's only.
    with contextlib.suppress(BaseException):
        main.__dict__.clear()
        gc.collect()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(BaseException):
            stream.flush()
    os._exit(code)


def _receive(conn: socket.socket) -> tuple[dict[str, Any], list[int]]:
    header, fds, _, _ = socket.recv_fds(conn, _HEADER.size, 3)
    try:
        (size,) = _HEADER.unpack(header)
        body = b""
        while len(body) < size:
            chunk = conn.recv(size - len(body))
            if not chunk:
                raise EOFError("the caller went away")
            body += chunk
        return json.loads(body), fds
    except BaseException:
        for fd in fds:
            os.close(fd)
        raise


def serve(socket_path: str) -> None:
    _preload()
    gc.freeze()
    # Forking a process with threads can leave a lock held in the child.
    assert threading.active_count() == 1, threading.enumerate()
    base_path = [p for p in sys.path[1:] if p not in _pythonpath().split(os.pathsep)]
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(socket_path)
    listener.listen(64)
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_write, False)
    os.set_blocking(wake_read, False)
    signal.set_wakeup_fd(wake_write)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ)
    selector.register(wake_read, selectors.EVENT_READ)
    selector.register(sys.stdin.fileno(), selectors.EVENT_READ)
    waiting: dict[int, socket.socket] = {}
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    while True:
        for key, _ in selector.select():
            if key.fileobj is listener:
                conn, _ = listener.accept()
                try:
                    request, fds = _receive(conn)
                except (OSError, EOFError, ValueError):
                    conn.close()
                    continue
                pid = os.fork()
                if pid == 0:
                    listener.close()
                    for other in waiting.values():
                        other.close()
                    conn.close()
                    selector.close()
                    os.close(wake_read)
                    os.close(wake_write)
                    _child(request, fds, base_path)
                for fd in fds:
                    os.close(fd)
                with contextlib.suppress(OSError):
                    conn.sendall(b"%d\n" % pid)
                waiting[pid] = conn
            elif key.fileobj == wake_read:
                with contextlib.suppress(BlockingIOError):
                    os.read(wake_read, 4096)
                while waiting:
                    pid, status = os.waitpid(-1, os.WNOHANG)
                    if pid == 0:
                        break
                    conn = waiting.pop(pid)
                    with contextlib.suppress(OSError):
                        conn.sendall(b"%d\n" % os.waitstatus_to_exitcode(status))
                    conn.close()
            elif not os.read(sys.stdin.fileno(), 4096):
                return


if __name__ == "__main__":
    serve(sys.argv[1])
