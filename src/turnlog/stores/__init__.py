"""Where sessions live: the store contract and the way a target names a store."""

from __future__ import annotations

import os

from turnlog.errors import UsageError
from turnlog.stores.base import Store, StoreWriter, validate_session_id
from turnlog.stores.jsonl import SUFFIX, JSONLStore
from turnlog.stores.memory import MemoryStore

__all__ = ["JSONLStore", "MemoryStore", "Store", "StoreWriter", "open_store"]


def open_store(
    target: str | os.PathLike[str] | Store, session_id: str | None = None
) -> tuple[Store, str | None]:
    """Resolve a target to a store and, where the target names one, a session id.

    A `Store` is used as is; `path/to/<id>.jsonl` is that session in a JSONL
    store on its directory; any other path (or `jsonl:PATH`) is a JSONL store
    directory.
    """
    if isinstance(target, Store):
        return target, session_id
    text = os.fspath(target)
    if text.startswith("jsonl:"):
        text = text[len("jsonl:") :]
    elif "://" in text or text.startswith(("sqlite:", "postgres:", "postgresql:")):
        raise UsageError(
            f"no store backend for {text!r} in this version",
            hint="use a directory (JSONL store) or a .jsonl file",
        )
    if text.endswith(SUFFIX) and not os.path.isdir(text):
        stem = os.path.basename(text)[: -len(SUFFIX)]
        validate_session_id(stem)
        if session_id is not None and session_id != stem:
            raise UsageError(
                f"the file names session {stem!r} but session_id {session_id!r} was given"
            )
        return JSONLStore(os.path.dirname(text) or "."), stem
    return JSONLStore(text), session_id
