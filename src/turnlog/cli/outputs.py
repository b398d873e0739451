"""A command's output file: never written over an input, never left half-written."""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile

from turnlog.errors import UsageError

#: How far into an existing file its marker is looked for.
_MARKER_WINDOW_BYTES = 512


def write_output(path: str, data: bytes, *, marker: bytes, what: str) -> None:
    """Write `data` to `path` through a temporary file and a rename. An
    existing file is replaced only when turnlog wrote it for the same
    purpose (`marker` among its first bytes) or is empty: a session, a
    database or anything else at that name is refused, and left as it was."""
    try:
        found = os.stat(path)
    except FileNotFoundError:
        found = None
    except OSError as exc:
        raise UsageError(
            f"cannot write {what} to {path}: {exc.strerror}",
            hint="choose another file with -o (or -o - for stdout)",
        ) from None
    if found is not None and not _ours(path, found, marker):
        raise UsageError(
            f"refusing to write {what} over {path}: it exists and turnlog did not write it "
            "as one (it may be the session itself, or another input)",
            hint="choose another file with -o (or -o - for stdout), or move that file away",
        )
    folder = os.path.dirname(os.path.abspath(path))
    # The file keeps the mode it had, or gets the one `open` would give it
    # (a temporary file is made private).
    mode = stat.S_IMODE(found.st_mode) if found is not None else 0o666 & ~_umask()
    try:
        fd, temporary = tempfile.mkstemp(dir=folder, prefix=".turnlog-", suffix=".tmp")
    except OSError as exc:
        raise UsageError(
            f"cannot write {what} to {path}: {exc.strerror}",
            hint="check that the folder exists and is writable",
        ) from None
    try:
        with os.fdopen(fd, "wb") as out:
            os.fchmod(out.fileno(), mode)
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current


def _ours(path: str, found: os.stat_result, marker: bytes) -> bool:
    if not stat.S_ISREG(found.st_mode):
        return False  # a FIFO, a device, a folder: never ours to replace
    if found.st_size == 0:
        return True  # nothing in it to lose
    try:
        with open(path, "rb") as existing:
            head = existing.read(_MARKER_WINDOW_BYTES)
    except OSError:
        return False
    return marker in head
