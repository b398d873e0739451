"""The JSONL store: one checksummed, append-only, OS-locked file per session."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from turnlog.core.damage import Scan
from turnlog.stores.jsonl.backward import TAIL_BLOCK_BYTES
from turnlog.stores.jsonl.head import HEADER_START, Head
from turnlog.stores.jsonl.listing import SUFFIX
from turnlog.stores.jsonl.store import MAX_PATH_BYTES, JSONLStore
from turnlog.stores.locks import LOCK_RETRY_S, lock_pid

if TYPE_CHECKING:
    from turnlog.stores.jsonl.forward import READ_BLOCK_BYTES, scan_file, scan_lines

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


def __getattr__(name: str) -> Any:
    # The whole-file scanner is imported on first use: reading a tail never loads it.
    if name in ("READ_BLOCK_BYTES", "scan_file", "scan_lines"):
        from turnlog.stores.jsonl import forward

        return getattr(forward, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
