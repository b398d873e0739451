"""The JSONL store: where session files live, opened, created, listed, locked."""

from __future__ import annotations

import contextlib
import errno
import itertools
import os
import stat
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Final, NoReturn

from turnlog.core.damage import Problem, Scan, TornTail
from turnlog.core.tail import Tail
from turnlog.errors import (
    CorruptLogError,
    SessionExistsError,
    SessionLockedError,
    SessionNotFoundError,
    StoreIOError,
    UnfinishedSessionError,
    UnreadableRecordError,
    UsageError,
)
from turnlog.events import Event
from turnlog.stores import holders
from turnlog.stores.base import (
    AGENTS_SUFFIX,
    Holder,
    Store,
    StoreWriter,
    batched,
    check_contiguous,
    check_named,
    first_of_session,
    validate_check,
    validate_header,
    validate_session_id,
)
from turnlog.stores.fileio import DEFAULT_IO, O_DIRECTORY, O_NOFOLLOW, FileIO
from turnlog.stores.jsonl.backward import read_tail
from turnlog.stores.jsonl.head import Head, misnamed_hint, read_head
from turnlog.stores.jsonl.listing import SUFFIX, collect_sessions
from turnlog.stores.jsonl.oserrors import closed_on_error, exists_at, kind_of, translate
from turnlog.stores.locks import flock_holder, lock_pid, retry_lock, try_flock
from turnlog.stores.record import (
    encode_line,
)
from turnlog.stores.skim import SkimHandlers

if TYPE_CHECKING:
    from turnlog.stores.jsonl.writer import JSONLWriter

# The whole-file scanner, the writer and the sidecar are imported by the
# methods that use them: reading a session's tail loads none of them.

# Longer directory paths are refused up front (Linux's PATH_MAX), so a
# runaway path is a clear error, not a failure deep inside makedirs.
MAX_PATH_BYTES: Final = 4096
# Session layouts a store object remembers (see `JSONLStore._layout`): past
# this many, the memory is dropped and filled again.
_MAX_LAYOUTS_CACHED: Final = 4096


class JSONLStore(Store):
    """`<directory>/<session_id>.jsonl`, one file per session."""

    keeps_skim_index = True

    def __init__(self, directory: str | os.PathLike[str], *, io: FileIO = DEFAULT_IO) -> None:
        directory = os.fspath(directory)
        if "\0" in directory:
            raise UsageError(f"store directory {directory!r} holds a NUL byte")
        if len(os.fsencode(directory)) > MAX_PATH_BYTES:
            raise UsageError(
                f"store directory path is over {MAX_PATH_BYTES} bytes",
                hint="use a shorter path for the store",
            )
        self.directory = directory
        self.url = directory
        self.io = io
        self._layouts: dict[str, tuple[str, str]] = {}

    # -- paths -----------------------------------------------------------------

    def _layout(self, session_id: str) -> tuple[str, str]:
        """The directory a session file lives in and the file's name: the
        store's own directory for a root, `<parent>.agents/` (nested under the
        store) for a subagent. The id is checked once per store object, not at
        every path a command derives from it."""
        layout = self._layouts.get(session_id)
        if layout is None:
            parts = validate_session_id(session_id).split("/")
            layout = (os.path.join(self.directory, *parts[:-1]), parts[-1] + SUFFIX)
            if len(self._layouts) >= _MAX_LAYOUTS_CACHED:
                self._layouts.clear()  # a sweep over many sessions keeps it bounded
            self._layouts[session_id] = layout
        return layout

    def filename(self, session_id: str) -> str:
        """The session file's name inside its directory (see `path`)."""
        return self._layout(session_id)[1]

    def _session_dir(self, session_id: str | None) -> str:
        """The directory a session file lives in (see `_layout`)."""
        if session_id is None:
            return self.directory
        return self._layout(session_id)[0]

    def path(self, session_id: str) -> str:
        directory, name = self._layout(session_id)
        return os.path.join(directory, name)

    def init(self) -> None:
        os.close(self._dir_fd(create=True))

    def present(self) -> bool:
        return os.path.isdir(self.directory)

    def location(self, session_id: str) -> str:
        return self.path(session_id)

    def _make_dirs(self, directory: str) -> None:
        """Create `directory` and its parents, each made durable in its parent
        (a child session's file is worth nothing if its folder's name is lost)."""
        missing = []
        probe = directory
        while not os.path.isdir(probe):
            missing.append(probe)
            parent = os.path.dirname(probe)
            if not parent or parent == probe:
                break
            probe = parent
        try:
            os.makedirs(directory, mode=0o700, exist_ok=True)
        except OSError as exc:
            raise translate(exc, "create directory", directory) from exc
        except RecursionError:
            raise UsageError(
                f"store directory {directory} has too many components to create",
                hint="use a shorter path for the store",
            ) from None
        for made in reversed(missing):
            parent_fd = os.open(os.path.dirname(made) or ".", os.O_RDONLY | O_DIRECTORY)
            try:
                self.io.fsync_dir(parent_fd)
            finally:
                os.close(parent_fd)

    def _dir_fd(self, session_id: str | None = None, *, create: bool = False) -> int:
        directory = self._session_dir(session_id)
        if create:
            self._make_dirs(directory)
        try:
            return os.open(directory, os.O_RDONLY | O_DIRECTORY)
        except FileNotFoundError:
            if session_id is not None and directory != self.directory:
                raise SessionNotFoundError(
                    f"no session {session_id!r}: no directory {directory}",
                    hint="list sessions with `turnlog ls`",
                ) from None
            raise SessionNotFoundError(
                f"no store directory {directory}",
                hint="check the path, or create a session there first",
            ) from None
        except OSError as exc:
            raise translate(exc, "open directory", directory) from exc

    def _open_file(self, session_id: str, flags: int) -> int:
        """Open an existing session file: never through a link, never blocking
        on a pipe or device, and only if it is a regular file."""
        name = self.filename(session_id)
        path = self.path(session_id)
        dir_fd = self._dir_fd(session_id)
        try:
            fd = self.io.open(name, flags | O_NOFOLLOW | os.O_NONBLOCK, 0o600, dir_fd=dir_fd)
        except OSError as exc:
            raise translate(exc, "open", path) from exc
        finally:
            os.close(dir_fd)
        try:
            mode = os.fstat(fd).st_mode
        except OSError as exc:
            os.close(fd)
            raise translate(exc, "open", path) from exc
        if not stat.S_ISREG(mode):
            os.close(fd)
            raise StoreIOError(
                f"{path} is {kind_of(mode)}, not a session file",
                hint="a session is a regular <session_id>.jsonl file; move this entry out of "
                "the store",
            )
        return fd

    def _head(self, fd: int, session_id: str) -> tuple[Head, int]:
        """The proof the file is ours and is the session it is named for, and
        the size this read goes up to (taken once, so a writer appending
        meanwhile is not read half-way)."""
        end = os.fstat(fd).st_size
        head = read_head(fd, self.path(session_id), end)
        self._check_named(head, session_id)
        return head, end

    def _check_named(self, head: Head, session_id: str) -> None:
        """Refuse a file whose header names another session than its name does."""
        path = self.path(session_id)
        check_named(head.header, session_id, path, hint=lambda named: self._misnamed(path, named))

    def _misnamed(self, path: str, named: str) -> str:
        try:
            return misnamed_hint(path, self.path(named))
        except UsageError:
            return f"its header names no valid session id: move {path} out of the store"

    # -- reading -----------------------------------------------------------------

    def scan(self, session_id: str, *, on_event: Callable[[Event], None] | None = None) -> Scan:
        """Read and classify the whole file, never modifying it.

        With `on_event`, each valid event is handed to it and not kept, so a
        log of any length is checked in memory bounded by one read block of
        records (`READ_BLOCK_BYTES`), or one record if it is longer. The last
        record of a session a live writer holds may still be arriving: an
        unterminated last line is then in flight, not torn.
        """
        fd = self._open_file(session_id, os.O_RDONLY)
        try:
            head, end = self._head(fd, session_id)
            if head.header is None:
                return Scan(
                    events=[],
                    problems=[Problem(message="no complete session header", offset=0)],
                    torn=TornTail(offset=0, size_bytes=end) if end else None,
                )
            from turnlog.stores.jsonl.forward import LINE_BUFFER_BYTES, Scanner

            scanner = Scanner(checksummed=head.checksummed)
            with os.fdopen(os.dup(fd), "rb", buffering=LINE_BUFFER_BYTES) as f:
                f.seek(0)
                stream = scanner.stream(f, end)
                if on_event is None:
                    events = list(stream)
                else:
                    events = []
                    for event in stream:
                        on_event(event)
            scan = scanner.scan(events)
            torn = scan.torn
            if (
                torn is not None
                and scan.problems[-1].offset == torn.offset
                and os.pread(fd, 1, end - 1) != b"\n"
                and flock_holder(fd) is not None
            ):
                # One unterminated line at the end of a live session: the
                # writer's append still arriving.
                scan.problems.pop()
                scan.torn = None
                scan.in_flight_bytes = torn.size_bytes
            return scan
        except OSError as exc:
            raise translate(exc, "read", self.path(session_id)) from exc
        finally:
            os.close(fd)

    def iter_events(self, session_id: str) -> Iterator[Event]:
        """Every valid event, oldest first, one at a time: memory bounded by
        one read block of records, or one record if it is longer. Raises the
        store's refusal, located, if the file is damaged; the events before
        the damage have been yielded by then."""
        fd = self._open_file(session_id, os.O_RDONLY)
        try:
            head, end = self._head(fd, session_id)
            if head.header is None:
                raise UnfinishedSessionError(
                    f"{self.path(session_id)} holds no complete session header: a crash cut "
                    "its creation short"
                )
            from turnlog.stores.jsonl.forward import LINE_BUFFER_BYTES, Scanner

            scanner = Scanner(checksummed=head.checksummed)
            with os.fdopen(os.dup(fd), "rb", buffering=LINE_BUFFER_BYTES) as f:
                f.seek(0)
                yield from scanner.stream(f, end)
            scan = scanner.scan([])
            if scan.refusal is not None:
                self._refuse(scan.refusal, session_id, scan)
        except OSError as exc:
            raise translate(exc, "read", self.path(session_id)) from exc
        finally:
            os.close(fd)

    def read(self, session_id: str, from_seq: int = 0) -> list[Event]:
        if from_seq < 0:
            raise UsageError(f"from_seq must be >= 0, not {from_seq}")
        scan = self.scan(session_id)
        problem = scan.refusal
        if problem is not None:
            self._refuse(problem, session_id, scan)
        return scan.events[from_seq:]

    def _refuse(self, problem: Problem, session_id: str, scan: Scan) -> NoReturn:
        path = self.path(session_id)
        if scan.refusal_kind == "unreadable":
            raise UnreadableRecordError(
                problem.message, path=path, line=problem.line, offset=problem.offset
            )
        raise CorruptLogError(
            f"damaged record before later valid ones: {problem.message}",
            path=path,
            line=problem.line,
            offset=problem.offset,
        )

    def read_header(self, session_id: str) -> Event | None:
        fd = self._open_file(session_id, os.O_RDONLY)
        try:
            head, _ = self._head(fd, session_id)
            return head.header
        finally:
            os.close(fd)

    def read_tail(self, session_id: str) -> Tail:
        """The tail that decides the state, read backwards from EOF.

        Reads a few blocks however long the log is: until the last turn
        boundary, the last message and a revival count are in hand.
        """
        fd = self._open_file(session_id, os.O_RDONLY)
        try:
            return read_tail(
                fd,
                self.path(session_id),
                live_writer_possible=True,
                check_head=lambda head: self._check_named(head, session_id),
            )
        except OSError as exc:
            raise translate(exc, "read", self.path(session_id)) from exc
        finally:
            os.close(fd)

    def sessions(self) -> list[str]:
        """Every `<id>.jsonl` entry, whatever it is, and the subagents' under
        `<id>.agents/`: commands report an entry that is not a session file
        (a directory, a pipe, a link) on its own."""
        out: list[str] = []
        collect_sessions(self.directory, "", out, deep=True)
        return sorted(out)

    def children(self, session_id: str) -> list[str]:
        folder = self.path(session_id)[: -len(SUFFIX)] + AGENTS_SUFFIX
        out: list[str] = []
        collect_sessions(folder, session_id + AGENTS_SUFFIX + "/", out, deep=False)
        return sorted(out)

    def skim(
        self, session_id: str, handlers: SkimHandlers, *, index: str | None = None
    ) -> int | None:
        from turnlog.stores.jsonl.skimming import skim_file

        fd = self._open_file(session_id, os.O_RDONLY)
        try:
            head, end = self._head(fd, session_id)
            if head.header is None or not head.checksummed:
                return None
            beside = (self._session_dir(session_id), self.filename(session_id), session_id)
            return skim_file(fd, end, handlers, index=index, beside=beside)
        except OSError as exc:
            raise translate(exc, "read", self.path(session_id)) from exc
        finally:
            os.close(fd)

    def exists(self, session_id: str) -> bool:
        return os.path.lexists(self.path(session_id))

    def lock_holder(self, session_id: str) -> Holder | None:
        fd = self._open_file(session_id, os.O_RDONLY)
        try:
            return flock_holder(fd)
        finally:
            os.close(fd)

    # -- writing -----------------------------------------------------------------

    def _lock(self, fd: int, session_id: str) -> None:
        retry_lock(lambda: try_flock(fd), lambda: self._locked(fd, session_id))

    def _locked(self, fd: int, session_id: str) -> SessionLockedError:
        """The refusal of a writer: this process's own (and where it was
        opened), or another process's."""
        here, site = holders.held_here(holders.file_key(fd))
        pid = lock_pid(fd)
        if here or pid == os.getpid():
            return holders.held_here_error(session_id, self.path(session_id), site)
        holder = f"process {pid}" if pid else "another process"
        return SessionLockedError(f"{self.path(session_id)} is being written by {holder}", pid=pid)

    @staticmethod
    def _hold(writer: JSONLWriter, fd: int, site: str | None) -> JSONLWriter:
        """Record the writer as this process's holder of the session's lock."""
        return writer.hold(holders.file_key(fd), site)

    def create(self, header: Event) -> StoreWriter:
        """Create the session file: write the header, sync the file, then its
        directory. An unfinished file of the same id that no one holds (empty,
        or a header cut short by a crash during creation) is created again,
        its bytes kept in a sidecar first."""
        session_id = validate_header(header)
        site = holders.caller_site()
        dir_fd = self._dir_fd(session_id, create=True)
        path = self.path(session_id)
        try:
            try:
                fd = self.io.open(
                    self.filename(session_id),
                    os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND | O_NOFOLLOW,
                    0o600,
                    dir_fd=dir_fd,
                )
            except FileExistsError:
                if os.path.islink(path):
                    raise StoreIOError(
                        f"{path} is a symbolic link; turnlog does not follow links in a store",
                        errno=errno.EEXIST,
                        hint="remove the link; a session file must be a regular file",
                    ) from None
                return self._create_again(header, session_id, dir_fd, site)
            except OSError as exc:
                raise translate(exc, "create", path) from exc
            from turnlog.stores.jsonl.writer import JSONLWriter

            writer = JSONLWriter(self.io, fd, path, size_bytes=0, next_seq=0)
            try:
                self._lock(fd, session_id)
                writer.append([header], expected_seq=0, sync=True)
                # The file's name is durable only once its directory is synced.
                self.io.fsync_dir(dir_fd)
                self._hold(writer, fd, site)
            except BaseException as exc:
                # Nothing was acknowledged: take back the file this call made,
                # so the id is free again rather than an empty, headless session.
                writer.close()
                with contextlib.suppress(OSError):
                    os.unlink(self.filename(session_id), dir_fd=dir_fd)
                if isinstance(exc, OSError):
                    raise translate(exc, "create", path) from exc
                raise
            return writer
        finally:
            os.close(dir_fd)

    def write_session(self, events: Iterable[Event]) -> int:
        """The whole session written to a private temporary file in its
        directory, synced, then linked to its name (which refuses an existing
        session) and the temporary name removed: the session appears whole or
        not at all. A failed write (a full disk) removes the temporary file."""
        stream = iter(events)
        header, session_id = first_of_session(stream)
        name = self.filename(session_id)
        path = self.path(session_id)
        # A leading dot and no `.jsonl` ending: never listed as a session.
        # os.urandom, not the secrets module: that loads OpenSSL, a cost every
        # command would pay at start-up for one random name.
        partial = f".{name}.partial-{os.getpid()}-{os.urandom(4).hex()}"
        dir_fd = self._dir_fd(session_id, create=True)
        try:
            if exists_at(name, dir_fd):
                # Refused as `create` refuses it: another program's file is
                # named as such, one of ours as an existing session.
                self.read_header(session_id)
                raise SessionExistsError(f"session {session_id!r} already exists at {path}")
            fd = self.io.open(
                partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL | O_NOFOLLOW, 0o600, dir_fd=dir_fd
            )
            count = 0
            try:
                for batch in batched(itertools.chain((header,), stream)):
                    check_contiguous(batch, count)
                    data = b"".join(map(encode_line, batch))
                    while data:
                        written = self.io.write(fd, data)
                        if written <= 0:
                            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
                        data = data[written:]
                    count += len(batch)
                self.io.fsync(fd)
            finally:
                self.io.close(fd)
            try:
                os.link(partial, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd, follow_symlinks=False)
            except FileExistsError:
                raise SessionExistsError(
                    f"session {session_id!r} already exists at {path}"
                ) from None
            os.unlink(partial, dir_fd=dir_fd)
            self.io.fsync_dir(dir_fd)
            return count
        except BaseException as exc:
            with contextlib.suppress(OSError):
                os.unlink(partial, dir_fd=dir_fd)
            if isinstance(exc, OSError):
                raise translate(exc, "write", path) from exc
            raise
        finally:
            os.close(dir_fd)

    def _create_again(
        self, header: Event, session_id: str, dir_fd: int, site: str | None
    ) -> StoreWriter:
        path = self.path(session_id)
        fd = self._open_file(session_id, os.O_RDWR | os.O_APPEND)
        with closed_on_error(fd, "create", path):
            self._lock(fd, session_id)
            head, end = self._head(fd, session_id)
            if head.header is not None:
                raise SessionExistsError(f"session {session_id!r} already exists at {path}")
            torn = None
            if end:
                torn = self._quarantine(fd, session_id, TornTail(offset=0, size_bytes=end))
            from turnlog.stores.jsonl.writer import JSONLWriter

            writer = JSONLWriter(self.io, fd, path, size_bytes=0, next_seq=0, torn=torn)
            writer.append([header], expected_seq=0, sync=True)
            self.io.fsync_dir(dir_fd)
            return self._hold(writer, fd, site)

    def writer(self, session_id: str, *, force: bool = False, check: str = "full") -> StoreWriter:
        path = self.path(session_id)
        validate_check(check)
        site = None if force else holders.caller_site()
        from turnlog.stores.jsonl.forward import scan_fd
        from turnlog.stores.jsonl.writer import JSONLWriter

        fd = self._open_file(session_id, os.O_RDWR | os.O_APPEND)
        with closed_on_error(fd, "open", path):
            if not force:
                self._lock(fd, session_id)
            head, end = self._head(fd, session_id)
            if head.header is None:
                raise UnfinishedSessionError(
                    f"{path} holds no complete session header: a crash cut its creation short"
                )
            tail: Tail | None = None
            if check == "full":
                scan = scan_fd(fd, end, checksummed=head.checksummed)
                if scan.refusal is not None:
                    self._refuse(scan.refusal, session_id, scan)
                torn = scan.torn
                next_seq = len(scan.events)
                valid_size = torn.offset if torn is not None else end
            else:
                # The lock is held: the head just read is the head at `end`.
                tail = read_tail(fd, path, live_writer_possible=False, head=head)
                torn, valid_size = tail.torn, tail.valid_size_bytes
                next_seq = tail.events[-1].seq + 1
                if torn is None:
                    valid_size = end
            if torn is not None:
                torn = self._quarantine(fd, session_id, torn)
                valid_size = torn.offset
            writer = JSONLWriter(
                self.io,
                fd,
                path,
                size_bytes=valid_size,
                next_seq=next_seq,
                tail=tail,
                torn=torn,
            )
            # A forced writer holds no lock: nothing to record.
            return writer if force else self._hold(writer, fd, site)

    def _quarantine(self, fd: int, session_id: str, torn: TornTail) -> TornTail:
        """Copy the torn bytes to a sidecar (synced), then cut the file back.

        The copy is durable before the cut, so a crash in between leaves both;
        a second try writes another sidecar rather than overwrite one. A
        sidecar that could not be written whole is removed again.
        """
        from turnlog.stores.sidecar import move_torn_tail

        dir_fd = self._dir_fd(session_id)
        try:
            name = move_torn_tail(fd, dir_fd, self.filename(session_id), torn, io=self.io)
        finally:
            os.close(dir_fd)
        return TornTail(
            offset=torn.offset,
            size_bytes=torn.size_bytes,
            sidecar=os.path.join(self._session_dir(session_id), name),
        )
