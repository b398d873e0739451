"""Where sessions live: the store contract and the one way a target names a store."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

from turnlog.errors import NotAStoreError, SessionNotFoundError, StoreNotFoundError, UsageError
from turnlog.stores.base import (
    AGENTS_SUFFIX,
    Holder,
    SessionMismatchError,
    Store,
    StoreWriter,
    child_session_id,
    parent_session_id,
    validate_session_id,
)
from turnlog.stores.jsonl import SUFFIX, JSONLStore

if TYPE_CHECKING:
    from turnlog.stores.memory import MemoryStore
    from turnlog.stores.sqlite import SQLiteStore

__all__ = [
    "DEFAULT_STORE",
    "STORE_ENV",
    "Holder",
    "JSONLStore",
    "MemoryStore",
    "NotAStoreError",
    "SQLiteStore",
    "SessionMismatchError",
    "Store",
    "StoreNotFoundError",
    "StoreWriter",
    "child_session_id",
    "existing_store",
    "open_store",
    "parent_session_id",
    "register_backend",
    "resolve_session",
    "store_from_url",
]


def __getattr__(name: str) -> Any:
    # The SQLite store (sqlite3, its URL parsing) and the in-memory store are
    # imported on first use: a command on a JSONL session loads neither.
    if name == "SQLiteStore":
        from turnlog.stores.sqlite import SQLiteStore

        return SQLiteStore
    if name == "MemoryStore":
        from turnlog.stores.memory import MemoryStore

        return MemoryStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


#: Where session ids are looked up when nothing else says.
DEFAULT_STORE: Final = "sessions"
#: The environment variable naming the default store.
STORE_ENV: Final = "TURNLOG_STORE"


#: A backend opens the store a URL of its scheme names.
StoreOpener = Callable[[str], Store]
_BACKENDS: dict[str, StoreOpener] = {}


def register_backend(scheme: str, opener: StoreOpener) -> None:
    """Make `scheme:...` URLs open stores with `opener(url)` (a third-party
    backend registers itself this way; a later registration replaces one)."""
    if not scheme.isidentifier():
        raise UsageError(f"a URL scheme is a name, not {scheme!r}")
    _BACKENDS[scheme] = opener


def _open_sqlite(url: str) -> Store:
    # As SQLAlchemy spells it: three slashes and a relative path, four for an
    # absolute one.
    if not url.startswith("sqlite:///") or len(url) == len("sqlite:///"):
        raise UsageError(
            f"{url!r} is not an SQLite store URL",
            hint="write sqlite:///relative/file.db or sqlite:////absolute/file.db",
        )
    from turnlog.stores.sqlite import SQLiteStore

    return SQLiteStore(url[len("sqlite:///") :])


def _open_postgres(url: str) -> Store:
    from turnlog.stores.postgres import store_from_url

    return store_from_url(url)


register_backend("jsonl", lambda url: JSONLStore(url[len("jsonl:") :]))
register_backend("sqlite", _open_sqlite)
register_backend("postgresql", _open_postgres)
register_backend("postgres", _open_postgres)


def open_store(
    target: str | os.PathLike[str] | Store, session_id: str | None = None
) -> tuple[Store, str | None]:
    """Resolve a target to a store and, where the target names one, a session id.

    A `Store` is used as is; `scheme:...` goes to the backend registered for
    the scheme (`jsonl:DIR`, `sqlite:///FILE`, `postgresql://...`);
    `path/to/<id>.jsonl` is that session in a JSONL store on its directory;
    any other path is a JSONL store directory.
    """
    if isinstance(target, Store):
        return target, session_id
    text = os.fspath(target)
    if "\0" in text:
        raise UsageError(f"{text!r} holds a NUL byte", hint="pass a path without NUL bytes")
    scheme, colon, _ = text.partition(":")
    if colon and scheme in _BACKENDS:
        return _BACKENDS[scheme](text), session_id
    if colon and "://" in text:
        raise UsageError(
            f"no store backend for {scheme!r} URLs",
            hint=f"known schemes: {', '.join(sorted(_BACKENDS))}; or a directory or .jsonl file",
        )
    if text.endswith(SUFFIX) and not os.path.isdir(text):
        directory, stem = os.path.split(text)
        stem = stem[: -len(SUFFIX)]
        # A subagent's file sits in `<parent>.agents/`: its store is the
        # root's directory and its id names the whole path from there.
        while directory.endswith(AGENTS_SUFFIX) and os.path.basename(directory) != AGENTS_SUFFIX:
            directory, parent = os.path.split(directory)
            stem = f"{parent}/{stem}"
        validate_session_id(stem)
        if session_id is not None and session_id != stem:
            raise UsageError(
                f"the file names session {stem!r} but session_id {session_id!r} was given"
            )
        return JSONLStore(directory or "."), stem
    return JSONLStore(text), session_id


def session_needed(target: object, what: str) -> UsageError:
    """The refusal of a call that needs one session and was given a store."""
    return UsageError(
        f"{what} needs a session: {target!r} names a store, not a session",
        hint="pass the session id too, or the path of a .jsonl session file",
    )


def stored_session(
    target: str | os.PathLike[str] | Store, session_id: str | None, *, what: str = "this call"
) -> tuple[Store, str]:
    """A stored session named the way `turnlog.open` takes it: a `.jsonl`
    path, or a store (directory, URL or `Store`) and a session id. `what`
    names the call, for the refusal when the target names only a store."""
    store, named = open_store(target, session_id)
    if named is None:
        raise session_needed(target, what)
    return store, named


def resolve_session(session: str, store_url: str | None = None) -> tuple[Store, str]:
    """A SESSION as people type it: a path to a `.jsonl` file, or an id in a
    store (`store_url`, else `$TURNLOG_STORE`, else `./sessions`)."""
    looks_like_path = session.endswith(SUFFIX) or os.path.lexists(session)
    if not looks_like_path and os.sep in session:
        # `<parent>.agents/<agent>` is a subagent's id; any other slash is a path.
        try:
            validate_session_id(session)
        except UsageError:
            looks_like_path = True
    if looks_like_path:
        if os.path.isdir(session):
            raise UsageError(
                f"{session} is a directory, not a session file",
                hint="pass a .jsonl file, or a session id with --store DIR",
            )
        if not os.path.lexists(session):
            raise SessionNotFoundError(
                f"{session}: no such file",
                hint="check the path, or list sessions with `turnlog ls`",
            )
        if not session.endswith(SUFFIX):
            raise UsageError(
                f"{session} is not a .jsonl session file",
                hint="turnlog sessions are <session_id>.jsonl files",
            )
        store, session_id = open_store(session)
        assert session_id is not None
        return store, session_id
    store, _ = open_store(store_url or os.environ.get(STORE_ENV) or DEFAULT_STORE)
    validate_session_id(session)
    if not store.exists(session):
        raise SessionNotFoundError(
            f"no session {session!r} in {store.url}",
            hint="list sessions with `turnlog ls --store DIR`, or pass the .jsonl path",
        )
    return store, session


def existing_store(store_url: str | None = None) -> Store:
    """`store_from_url` for a command that only reads or repairs: a store that
    is not there (a mistyped directory, a database without turnlog's schema)
    raises `StoreNotFoundError`, and nothing is created for it."""
    store = store_from_url(store_url)
    store.require()
    return store


def store_from_url(store_url: str | None = None) -> Store:
    """The store a command lists or sweeps: `store_url`, `$TURNLOG_STORE`, `./sessions`."""
    store, _ = open_store(store_url or os.environ.get(STORE_ENV) or DEFAULT_STORE)
    return store
