"""The JSONL store: one checksummed, append-only, OS-locked file per session."""

from __future__ import annotations

from turnlog.damage import Scan
from turnlog.stores.jsonl.backward import TAIL_BLOCK_BYTES
from turnlog.stores.jsonl.forward import READ_BLOCK_BYTES, scan_file, scan_lines
from turnlog.stores.jsonl.head import HEADER_START, Head
from turnlog.stores.jsonl.store import MAX_PATH_BYTES, SUFFIX, JSONLStore
from turnlog.stores.locks import LOCK_RETRY_S, lock_pid

__all__ = [
    "HEADER_START",
    "LOCK_RETRY_S",
    "MAX_PATH_BYTES",
    "READ_BLOCK_BYTES",
    "SUFFIX",
    "TAIL_BLOCK_BYTES",
    "Head",
    "JSONLStore",
    "Scan",
    "lock_pid",
    "scan_file",
    "scan_lines",
]
