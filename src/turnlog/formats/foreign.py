"""Reading and appending to other tools' JSONL files: damage found, never hidden, bytes kept."""

from __future__ import annotations

import contextlib
import errno
import json
import math
import os
import stat
import time
from collections.abc import Iterator
from typing import Any, Final

import msgspec

from turnlog.core.damage import Problem, TornTail
from turnlog.core.sniff import CLAUDE_CODE, CODEX
from turnlog.errors import SessionLockedError, TurnlogError, UsageError
from turnlog.stores.sidecar import move_torn_tail

# A transcript modified this recently may still be written by its tool. Codex
# holds its rollout open for the session's whole life (its recorder owns the
# file in a writer task), so an open file descriptor is the signal and the
# window only a backstop. Claude Code opens, appends and closes for each line
# (spliced lines in its own issue tracker show unsynchronised appends), so no
# descriptor betrays it, and it writes nothing while a tool runs or while it
# waits for the user: a Bash call may run 10 minutes by its own timeout.
LIVE_WINDOW_S: Final = 10.0
LIVE_WINDOWS_S: Final = {CLAUDE_CODE: 600.0, CODEX: 10.0}
# An mtime up to this far ahead of the clock is a write just now, seen through
# timestamp jitter; further ahead it is a clock set back or a copied file,
# which says nothing about a live writer.
CLOCK_SKEW_S: Final = 2.0
# A foreign file is read whole to repair it; past this it is refused.
MAX_FOREIGN_BYTES: Final = 4 * 1024**3
# The tail a directory scan reads of each file first, and the most it reads
# when the first window holds no turn boundary to judge from.
SCAN_TAIL_BYTES: Final = 64 * 1024
MAX_SCAN_TAIL_BYTES: Final = 8 * 1024 * 1024
_DECODER: Final = json.JSONDecoder()


class Record(msgspec.Struct, frozen=True, kw_only=True):
    """One JSON object of a foreign file, with where it starts.

    `damaged` marks an object salvaged from a line that is not one whole JSON
    value (glued, spliced, NUL-padded): Claude Code and Codex parse each line
    whole and skip such a line, so what it holds is evidence, never part of
    the conversation the tool will load.
    """

    offset: int
    line: int
    data: dict[str, Any]
    damaged: bool = False


class ForeignFileError(TurnlogError):
    """A path that cannot be read as a transcript: not a regular file, too big."""

    hint = "pass a regular transcript file; devices, FIFOs and sockets are never read"


class AppendFailedError(TurnlogError):
    """An append that did not complete; the file was cut back to its size before it."""

    hint = "free some space (or fix the permissions) and run doctor again"


class Parsed(msgspec.Struct, frozen=True, kw_only=True):
    """Every record of a file, and what stood in the way of reading it.

    `torn` is a final fragment that cannot be a finished record (no newline,
    not a JSON object). A last record that is whole but lacks its newline is
    a record, not a fragment: an append adds the newline first.
    """

    records: tuple[Record, ...]
    problems: tuple[Problem, ...]
    torn: TornTail | None
    size_bytes: int


def _objects(text: str) -> list[dict[str, Any]] | None:
    """The JSON objects a line holds, one or more glued; None if it holds anything else."""
    out: list[dict[str, Any]] = []
    index = 0
    while index < len(text):
        try:
            value, end = _DECODER.raw_decode(text, index)
        except (ValueError, RecursionError):
            return None
        if not isinstance(value, dict):
            return None
        out.append(value)
        index = end
        while index < len(text) and text[index] in " \t\r":
            index += 1
    return out


def _read_line(raw: bytes, offset: int, number: int, problems: list[Problem]) -> list[Record]:
    stripped = raw.replace(b"\0", b"")
    if len(stripped) != len(raw):
        problems.append(
            Problem(
                message=f"{len(raw) - len(stripped)} NUL bytes (a power loss leaves them)",
                line=number,
                offset=offset,
            )
        )
    if not stripped.strip():
        return []
    try:
        text = stripped.decode("utf-8")
    except UnicodeDecodeError:
        problems.append(Problem(message="not UTF-8; kept, not read", line=number, offset=offset))
        return []
    objects = _objects(text.strip())
    if objects is not None:
        # One whole object on a clean line is what the tool loads; glued
        # records or NUL bytes make the tool's own parser skip the line.
        damaged = len(objects) > 1 or len(stripped) != len(raw)
        if len(objects) > 1:
            problems.append(
                Problem(
                    message=f"{len(objects)} records glued on one line; the tool skips the line",
                    line=number,
                    offset=offset,
                )
            )
        return [Record(offset=offset, line=number, data=item, damaged=damaged) for item in objects]
    # A partial write followed by the next append: find where a whole record
    # (or several) starts, and report the fragment before it.
    position = text.find('{"', 1)
    while position != -1:
        rest = _objects(text[position:].strip())
        if rest is not None:
            problems.append(
                Problem(
                    message=f"a cut-off record of {position} characters glued before the next one; "
                    "kept, not read (the tool skips the line)",
                    line=number,
                    offset=offset,
                )
            )
            return [
                Record(offset=offset + position, line=number, data=item, damaged=True)
                for item in rest
            ]
        position = text.find('{"', position + 1)
    problems.append(
        Problem(message="not a JSON record; kept, not read", line=number, offset=offset)
    )
    return []


def _last_line(
    raw: bytes, offset: int, number: int, problems: list[Problem]
) -> tuple[list[Record], TornTail | None]:
    """The records of a last line with no newline, and the fragment after them.

    Only bytes that cannot be a finished record are a fragment: whole records
    at the start of the line (a newline lost, then a cut append) are kept.
    """
    if not raw.strip(b"\0 \t\r"):
        return [], None
    found: list[Problem] = []
    whole = _read_line(raw, offset, number, found)
    if whole and raw.strip(b"\0 \t\r").endswith(b"}"):
        problems.extend(found)
        return whole, None
    kept: list[Record] = []
    cut = 0
    if b"\0" not in raw:
        try:
            text = raw.decode("utf-8", errors="strict")
        except UnicodeDecodeError:
            text = ""
        index = 0
        while text:
            while index < len(text) and text[index] in " \t\r":
                index += 1
            try:
                value, index = _DECODER.raw_decode(text, index)
            except (ValueError, RecursionError):
                break
            if not isinstance(value, dict):
                break
            # Whole records before a cut fragment: once the fragment is moved
            # to its sidecar they end the file as a whole line the tool loads.
            kept.append(Record(offset=offset + cut, line=number, data=value))
            cut = len(text[:index].encode("utf-8"))
    return kept, TornTail(offset=offset + cut, size_bytes=len(raw) - cut)


def parse(data: bytes) -> Parsed:
    """Read every record of a foreign JSONL file's bytes. Never raises for
    damage: it is reported, and the bytes are left where they are."""
    records: list[Record] = []
    problems: list[Problem] = []
    torn: TornTail | None = None
    offset = 0
    number = 0
    size = len(data)
    while offset < size:
        number += 1
        end = data.find(b"\n", offset)
        if end == -1:
            whole, torn = _last_line(data[offset:], offset, number, problems)
            records.extend(whole)
            break
        records.extend(_read_line(data[offset:end], offset, number, problems))
        offset = end + 1
    return Parsed(
        records=tuple(records),
        problems=tuple(problems),
        torn=torn,
        size_bytes=size,
    )


def open_regular(path: str) -> int:
    """A read-only descriptor on `path`, refused unless it is a regular file.

    Opened non-blocking, so a FIFO never hangs the open; checked with `fstat`
    on what was opened, so a swapped path cannot slip a device in after the
    check. The caller closes it.
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        os.close(fd)
        raise
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise ForeignFileError(f"{path} is not a regular file; it was not read")
    return fd


def read_limited(fd: int, limit: int) -> bytes:
    """Up to `limit` bytes from `fd`, counted as read (a file's `stat` size can
    lie: /proc, a file still growing)."""
    chunks: list[bytes] = []
    total = 0
    while total < limit:
        chunk = os.read(fd, min(1 << 20, limit - total))
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    return b"".join(chunks)


def read_file(path: str, *, limit: int | None = None) -> bytes:
    """The whole of a regular file, refused past `limit` bytes (default
    MAX_FOREIGN_BYTES), measured by reading."""
    cap = MAX_FOREIGN_BYTES if limit is None else limit
    fd = open_regular(path)
    try:
        data = read_limited(fd, cap + 1)
    finally:
        os.close(fd)
    if len(data) > cap:
        raise UsageError(
            f"{path} is over the {cap}-byte limit for one transcript",
            hint="split the file, or repair it by hand",
        )
    return data


def read_first_line(path: str, *, limit: int = MAX_FOREIGN_BYTES) -> bytes:
    """The file's first line, however long (a pasted screenshot makes it many
    MiB), up to `limit` bytes."""
    fd = open_regular(path)
    try:
        chunks: list[bytes] = []
        total = 0
        while total < limit:
            chunk = os.read(fd, min(1 << 20, limit - total))
            if not chunk:
                break
            end = chunk.find(b"\n")
            if end != -1:
                chunks.append(chunk[: end + 1])
                break
            chunks.append(chunk)
            total += len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def read_tail(path: str, size_bytes: int = SCAN_TAIL_BYTES) -> tuple[bytes, bool]:
    """The last `size_bytes` of a file, from its first whole line; and whether
    that is the whole file."""
    fd = open_regular(path)
    try:
        size = os.fstat(fd).st_size
        start = max(0, size - size_bytes)
        os.lseek(fd, start, os.SEEK_SET)
        data = read_limited(fd, size_bytes)
    finally:
        os.close(fd)
    if start:
        cut = data.find(b"\n")
        data = data[cut + 1 :] if cut != -1 else b""
    return data, start == 0


# -- liveness -------------------------------------------------------------------------


def holders(path: str) -> list[int]:
    """Pids of processes that hold the file open (Linux's /proc; empty elsewhere)."""
    target = os.path.realpath(path)
    found: list[int] = []
    with contextlib.suppress(OSError):
        for name in os.listdir("/proc"):
            if not name.isdigit() or int(name) == os.getpid():
                continue
            fd_dir = f"/proc/{name}/fd"
            with contextlib.suppress(OSError):
                for fd in os.listdir(fd_dir):
                    with contextlib.suppress(OSError):
                        if os.readlink(f"{fd_dir}/{fd}") == target:
                            found.append(int(name))
                            break
    return found


def live_window(kind: str) -> float:
    """The default quiet time after which `kind`'s writer is taken to have stopped."""
    return LIVE_WINDOWS_S.get(kind, LIVE_WINDOW_S)


def checked_window_s(window_s: Any) -> float:
    """A live window as given, if it is a finite number of seconds, 0 or more.

    NaN is refused above all: every comparison with it is false, so "modified
    less than NaN seconds ago" never holds and the check would be off.
    """
    if (
        not isinstance(window_s, int | float)
        or isinstance(window_s, bool)
        or not math.isfinite(window_s)
        or window_s < 0
    ):
        raise UsageError(
            f"a live window must be a finite number of seconds, 0 or more, not {window_s!r}",
            hint="pass a number of seconds such as 600, or leave it out for the tool's own",
        )
    return float(window_s)


def refuse_if_live(path: str, *, window_s: float = LIVE_WINDOW_S) -> None:
    """Refuse a file its tool may still be writing: held open by a process, or
    modified in the last `window_s` seconds.

    An mtime in the future (a clock set back, a file from another machine)
    says nothing about a live writer: it is not refused for that, or it would
    be refused until the clock caught up.
    """
    window_s = checked_window_s(window_s)
    pids = holders(path)
    if pids:
        raise SessionLockedError(
            f"{path} is open in process {', '.join(map(str, pids))}; its tool may still be "
            "writing it",
            pid=pids[0],
        )
    age_s = time.time() - os.stat(path).st_mtime
    if 0 <= age_s < window_s or -CLOCK_SKEW_S < age_s < 0:
        raise SessionLockedError(
            f"{path} was modified {max(age_s, 0.0):.1f} s ago; its tool may still be writing "
            f"it (a writer that is running a tool or waiting for you writes nothing for "
            f"minutes; this check waits {window_s:g} s: pass --live-window SECONDS, or --force "
            "when you know the tool has exited)"
        )


# -- writing ----------------------------------------------------------------------------


def quarantine(path: str, torn: TornTail) -> TornTail:
    """Move a torn final fragment to `<file>.torn-<offset>` (the one move the
    JSONL store makes too, `stores.sidecar`): the only bytes of a foreign file
    turnlog ever moves."""
    directory, file_name = os.path.split(os.path.abspath(path))
    dir_fd = os.open(directory, os.O_RDONLY)
    try:
        fd = os.open(path, os.O_RDWR)
        try:
            name = move_torn_tail(fd, dir_fd, file_name, torn)
        finally:
            os.close(fd)
    finally:
        os.close(dir_fd)
    return TornTail(
        offset=torn.offset, size_bytes=torn.size_bytes, sidecar=os.path.join(directory, name)
    )


def append_lines(path: str, lines: Iterator[bytes] | list[bytes], *, newline_first: bool) -> int:
    """Append whole lines in one write and sync them; returns the bytes written.

    All or nothing: a short or failed write (a full disk) is undone by cutting
    the file back to its size before the append, which removes only bytes this
    call wrote, and is reported as `AppendFailedError`.
    """
    data = (b"\n" if newline_first else b"") + b"".join(line + b"\n" for line in lines)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    try:
        before = os.fstat(fd).st_size
        done = 0
        try:
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                if written == 0:
                    raise OSError(errno.ENOSPC, "no byte written")
                done += written
                view = view[written:]
            os.fsync(fd)
        except OSError as error:
            raise AppendFailedError(
                f"appending the repair to {path} failed ({error.strerror or error}); "
                + _undo(fd, before, done)
            ) from error
    finally:
        os.close(fd)
    return len(data)


def _undo(fd: int, before: int, done: int) -> str:
    """Cut a failed append back, when the file holds exactly what it held plus
    the bytes this append wrote; never a byte another writer added."""
    size = os.fstat(fd).st_size
    if size != before + done:
        return (
            f"the file grew by {size - before} bytes, not the {done} this append wrote, so "
            "another writer is at work: nothing was cut, and the end of the file needs a look"
        )
    os.ftruncate(fd, before)
    with contextlib.suppress(OSError):
        os.fsync(fd)
    return f"the file was cut back to its {before} bytes before the repair"
