"""The JSONL store's skim: a file's records checked a block at a time, or read through
the index kept beside it, trusted while the bytes it was made from are unchanged."""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
import zlib
from typing import Final, Literal

import msgspec

from turnlog.events import MAX_LINE_BYTES
from turnlog.stores.fileio import O_DIRECTORY, O_NOFOLLOW
from turnlog.stores.jsonl.forward import READ_BLOCK_BYTES
from turnlog.stores.record import check_crc
from turnlog.stores.skim import REINDEX_AFTER_RECORDS, Found, SkimHandlers, skim_lines

#: An index of the skim `name` of `<id>.jsonl` is `<id>.jsonl.index-<name>`.
INDEX_INFIX: Final = ".index-"
# A read through an index takes the file whole (one read, one checksum):
# a longer file is skimmed a block at a time, and keeps no index.
MAX_INDEXED_BYTES: Final = 256 * 1024 * 1024
# An index holds a few numbers per record it locates: one longer than this
# is not one turnlog wrote.
MAX_INDEX_BYTES: Final = 64 * 1024 * 1024
# The start of every index turnlog writes: a file at an index's name that is
# empty (a power loss before its bytes reached the disk) or starts so is ours
# to replace; any other is not.
INDEX_OPEN: Final = b'{"format":"turnlog skim index"'


class SkimIndex(msgspec.Struct, frozen=True, kw_only=True):
    """Where the records of `types` lie in a session file's first
    `size_bytes`, which hold `next_seq` records and whose CRC-32 is
    `bytes_crc`. Stored as one line checksummed as a record is."""

    format: Literal["turnlog skim index"] = "turnlog skim index"
    version: Literal[1] = 1
    session_id: str
    types: list[str]
    size_bytes: int
    next_seq: int
    bytes_crc: int
    records: list[Found]

    def sound(self) -> bool:
        """Every place it gives lies inside the bytes it covers, in seq order."""
        kinds, size, seq = len(self.types), self.size_bytes, -1
        for record_seq, number, offset, length in self.records:
            if not (seq < record_seq < self.next_seq and 0 <= number < kinds):
                return False
            if offset < 0 or length < 0 or offset + length > size:
                return False
            seq = record_seq
        return True


_decoder = msgspec.json.Decoder(SkimIndex)


def skim_blocks(
    fd: int,
    start: int,
    end: int,
    handlers: SkimHandlers,
    *,
    expected_seq: int,
    found: list[Found] | None,
    crc: int = 0,
) -> tuple[int, int] | None:
    """`skim_lines` over the file's bytes from `start` (a line's start) up to
    `end`, a block at a time; None, as there, for anything but sound records
    ending in a newline. Returns the next seq and the CRC-32 of the file up
    to `end`, given `crc`, that of the bytes before `start`."""
    expected = expected_seq
    carry = b""
    position = offset = start
    while position < end:
        block = os.pread(fd, min(READ_BLOCK_BYTES, end - position), position)
        if not block:
            return None
        position += len(block)
        crc = zlib.crc32(block, crc)
        lines = (carry + block if carry else block).split(b"\n")
        # The last piece has no newline yet: the start of the next block's first line.
        carry = lines.pop()
        if len(carry) >= MAX_LINE_BYTES:
            return None
        skimmed = skim_lines(lines, handlers, expected_seq=expected, offset=offset, found=found)
        if skimmed is None:
            return None
        offset = position - len(carry)
        expected = skimmed
    return None if carry else (expected, crc)


def skim_file(
    fd: int, end: int, handlers: SkimHandlers, *, index: str | None, beside: tuple[str, str, str]
) -> int | None:
    """The skim of an open session file up to `end`; through the index
    `index` when one is named. `beside` is the file's directory, its name and
    its session's id."""
    if index is None:
        skimmed = skim_blocks(fd, 0, end, handlers, expected_seq=0, found=None)
        return None if skimmed is None else skimmed[0]
    directory, file_name, session_id = beside
    try:
        dir_fd = os.open(directory, os.O_RDONLY | O_DIRECTORY)
    except OSError:  # a folder that cannot be opened keeps no index: skim without one
        return skim_file(fd, end, handlers, index=None, beside=beside)
    try:
        return skim_indexed(
            fd,
            end,
            handlers,
            dir_fd=dir_fd,
            file_name=file_name,
            session_id=session_id,
            name=index,
        )
    finally:
        os.close(dir_fd)


def skim_indexed(
    fd: int,
    end: int,
    handlers: SkimHandlers,
    *,
    dir_fd: int,
    file_name: str,
    session_id: str,
    name: str,
) -> int | None:
    """The skim of the file up to `end` through its index `name`: the records
    it locates are handed over as they lie, once one checksum of the bytes it
    was made from matches; the records past them are skimmed line by line.
    A missing, foreign or outdated index is skimmed past the same way, and a
    new one is written (best effort: an index only saves time)."""
    types = sorted(handlers)
    index = read_index(dir_fd, file_name, name)
    found: list[Found] = []
    start = expected = crc = 0
    if (
        index is not None
        and index.session_id == session_id
        and index.types == types
        and index.size_bytes <= end <= MAX_INDEXED_BYTES
        and index.sound()
    ):
        data = os.pread(fd, index.size_bytes, 0)
        if len(data) == index.size_bytes and zlib.crc32(data) == index.bytes_crc:
            asked = [handlers[type_name] for type_name in types]
            # Views, not copies: the records are handed over as they lie.
            whole = memoryview(data)
            for seq, number, offset, length in index.records:
                asked[number]((seq, whole[offset : offset + length]))
            found = index.records
            start, expected, crc = index.size_bytes, index.next_seq, index.bytes_crc
        else:
            index = None
    else:
        index = None
    more: list[Found] = []
    skimmed = skim_blocks(fd, start, end, handlers, expected_seq=expected, found=more, crc=crc)
    if skimmed is None:
        return None
    count, crc = skimmed
    if end <= MAX_INDEXED_BYTES and (index is None or count - expected >= REINDEX_AFTER_RECORDS):
        fresh = SkimIndex(
            session_id=session_id,
            types=types,
            size_bytes=end,
            next_seq=count,
            bytes_crc=crc,
            records=found + more,
        )
        write_index(dir_fd, file_name, name, fresh)
    return count


def _open_regular(dir_fd: int, name: str) -> int:
    """A descriptor on the regular file `name`, opened without waiting (a FIFO
    put at an index's name would block a read on the event loop's thread
    forever); OSError for anything else there."""
    fd = os.open(name, os.O_RDONLY | O_NOFOLLOW | os.O_NONBLOCK, dir_fd=dir_fd)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file")
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_index(dir_fd: int, file_name: str, name: str) -> SkimIndex | None:
    """The index, or None if there is none or the file there is not one."""
    try:
        fd = _open_regular(dir_fd, file_name + INDEX_INFIX + name)
    except OSError:
        return None
    try:
        data = os.read(fd, MAX_INDEX_BYTES + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    line = data[:-1] if data[-1:] == b"\n" else b""
    if len(data) > MAX_INDEX_BYTES or check_crc(line) is not True:
        return None
    try:
        return _decoder.decode(line)
    except msgspec.DecodeError:
        return None


def write_index(dir_fd: int, file_name: str, name: str, index: SkimIndex) -> None:
    """Write the index beside the file through a fresh temporary file and a
    rename; not over a file there that is not an index (not ours to
    replace). Best effort, and never synced (it may be written on an event
    loop's thread): a failure or a power loss leaves the old index, none, or
    an empty file, which the next write replaces."""
    target = file_name + INDEX_INFIX + name
    if not _ours_or_absent(dir_fd, target):
        return
    temporary = f"{target}.{secrets.token_hex(6)}.tmp"
    try:
        fd = os.open(
            temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | O_NOFOLLOW, 0o600, dir_fd=dir_fd
        )
    except OSError:
        return
    try:
        line = bytearray(msgspec.json.encode(index))
        del line[-1:]
        line += b',"crc":"%08x"}\n' % zlib.crc32(line)
        with os.fdopen(fd, "wb") as f:
            f.write(line)
        os.rename(temporary, target, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(temporary, dir_fd=dir_fd)


def _ours_or_absent(dir_fd: int, target: str) -> bool:
    """No file at `target`, or a regular file turnlog wrote there (see `INDEX_OPEN`)."""
    try:
        fd = _open_regular(dir_fd, target)
    except FileNotFoundError:
        return True
    except OSError:
        return False
    try:
        start = os.read(fd, len(INDEX_OPEN))
    except OSError:
        return False
    finally:
        os.close(fd)
    return start in (b"", INDEX_OPEN)
