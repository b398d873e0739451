"""Opening a session for writing: find or create it, take its lock, fold its tail.

`turnlog.open` (in `turnlog.ops.open`) makes the handle from what this returns.
"""

from __future__ import annotations

import os
import uuid
from dataclasses import dataclass
from typing import Any, NamedTuple

from turnlog import events as ev
from turnlog.core.clock import utc_now
from turnlog.core.durability import Durability, check_durability
from turnlog.core.fold import Fold
from turnlog.errors import FormatError, SessionNotFoundError, UnfinishedSessionError
from turnlog.events import Event
from turnlog.stores import open_store, session_needed
from turnlog.stores.base import Store, StoreWriter
from turnlog.text import says_something


def prepare_opening() -> None:
    """Make now what a process's first open of a session makes on the way:
    the JSONL reader, skimmer and writer modules, the record decoders, the places a
    writer is not opened from. For a process that will open sessions (an
    agent program), at import: about 3 ms once, instead of in its first turn."""
    import turnlog.stores.jsonl.forward
    import turnlog.stores.jsonl.skimming
    import turnlog.stores.jsonl.writer  # noqa: F401 - imported for the import's sake
    from turnlog.stores import holders

    ev.prepare_decoders()
    holders.library_dirs()


@dataclass(frozen=True)
class OpenOptions:
    """How a session is opened (see `turnlog.open`): one value, carried from
    the public call through the handle down to the store."""

    create: bool | None = None
    durability: Durability = "barrier"
    agent: ev.Agent | None = None
    parent: ev.Parent | None = None
    spawned_by: ev.SpawnedBy | None = None
    meta: dict[str, Any] | None = None
    recover: bool = False
    engine_run: ev.EngineRun | None = None
    replay: bool = True


#: `turnlog.open`'s defaults, and an open of a session that exists (a
#: repair never creates one).
DEFAULT_OPEN = OpenOptions()
MUST_EXIST = OpenOptions(create=False)


class Opened(NamedTuple):
    """A session held for writing, before it has a handle."""

    store: Store
    writer: StoreWriter
    fold: Fold
    # False when `fold` was fed from the tail only.
    whole: bool


def open_session(
    target: str | os.PathLike[str] | Store, session_id: str | None, options: OpenOptions
) -> Opened:
    """The store, writer and fold of the session `turnlog.open` names, created
    when `options.create` says so (see `turnlog.open`)."""
    store, session_id = open_store(target, session_id)
    check_durability(options.durability)  # before anything is created
    create = options.create
    if session_id is None:
        if create is False:
            raise session_needed(target, "open(create=False)")
        session_id = uuid.uuid4().hex
    if create is None:
        create = not store.exists(session_id)
        if not create:
            try:
                return _open_existing(store, session_id)
            except UnfinishedSessionError:
                # A crash cut the session's creation short: nothing in it was
                # ever acknowledged, so it is created again (bytes kept aside).
                create = True
    if create:
        header = Event(
            seq=0,
            data=ev.Session(
                session_id=session_id,
                created_at=utc_now(),
                agent=options.agent,
                parent=options.parent,
                spawned_by=options.spawned_by,
                meta=options.meta,
            ),
            ts=utc_now(),
        )
        writer = store.create(header)
        return Opened(store, writer, Fold([header]), whole=True)
    if not store.exists(session_id):
        raise SessionNotFoundError(f"no session {session_id!r} in {store.url}")
    return _open_existing(store, session_id)


def _user_spoke_before(store: Store, session_id: str, end_seq: int) -> bool:
    """Whether a user message (or a compaction's summary) with text lies
    before `end_seq`: read forward from the header, stopping at the first,
    which a real session has within its first events."""
    for event in store.iter_events(session_id):
        if event.seq >= end_seq:
            return False
        data = event.data
        if isinstance(data, ev.UserMessage) and says_something(data.content):
            return True
        if isinstance(data, ev.Compaction) and says_something(data.summary):
            return True
    return False


def _open_existing(store: Store, session_id: str) -> Opened:
    writer = store.writer(session_id, check="tail")
    try:
        # The tail the writer checked under its lock, or read now that it holds
        # it: a writer that only appends never reads the whole log.
        tail = writer.tail or store.read_tail(session_id)
        fold = tail.fold()
        named = fold.session.session_id if fold.session is not None else None
        if named is not None and named != session_id:
            # A copied or renamed file: this handle would append here and read
            # the session its header names, which is another one.
            where = store.location(session_id) or session_id
            raise FormatError(
                f"{where} holds session {named!r}, not {session_id!r}: its header names "
                "another session",
                hint="its header was written for another session (copied or edited by "
                "hand); give it back the id its header names, or remove it from the store",
            )
        if fold.user_spoke is None:
            # The tail skipped the log's start: whether the user has spoken
            # (what an assistant message must follow) is read from the head.
            first = tail.events[0].seq if tail.events else 0
            fold.learn_user_spoke(_user_spoke_before(store, session_id, first))
        return Opened(store, writer, fold, whole=False)
    except BaseException:
        writer.close()
        raise
