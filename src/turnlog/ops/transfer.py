"""Moving sessions between stores, event for event, each written whole or not at all."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import msgspec

from turnlog.errors import (
    SessionExistsError,
    SessionLockedError,
    SessionNotFoundError,
    TurnlogError,
    UnfinishedSessionError,
)
from turnlog.events import Event, encode_event
from turnlog.stores.base import WRITE_BATCH_EVENTS, Store, check_named

# Events go to the destination in batches this size (see the stores).
COPY_BATCH_EVENTS = WRITE_BATCH_EVENTS

#: Wraps each pass over the sessions (a progress bar): called with the ids
#: and what the pass does, it yields the ids.
Progress = Callable[[list[str], str], Iterable[str]]


def _ignore(event: Event) -> None:
    pass


def write_events(dest: Store, events: Iterable[Event]) -> int:
    """Write a whole session of prebuilt events into a store as they are: the
    same seq, ts, origin and content (for copy, fork and importers). The first
    must be the `session` header; the session must not exist. Returns the count.

    Nothing is checked or stamped here beyond what every store checks on
    append (contiguous seqs, the limits), so what went in is what comes out.
    Atomic per session (`Store.write_session`): a write that fails half way
    leaves no session behind, and the retry succeeds.
    """
    return dest.write_session(events)


class Copied(msgspec.Struct, frozen=True, kw_only=True):
    session_id: str
    events: int


class CopyRefusedError(TurnlogError):
    """A copy of several sessions refused before anything was written: every
    session that cannot be copied, each with its own error."""

    hint = "nothing was written; deal with each session as its error says, then copy again"

    def __init__(self, refused: Sequence[tuple[str, TurnlogError]], *, of: int) -> None:
        self.summary = f"{len(refused)} of {of} sessions cannot be copied, so nothing was copied"
        lines = "".join(f"\n  {session_id}: {error.message}" for session_id, error in refused)
        super().__init__(f"{self.summary}:{lines}")
        self.refused = list(refused)


class CopyIncompleteError(TurnlogError):
    """A copy of several sessions that failed part way (a full disk, a writer
    that started meanwhile): what was copied is whole and stays; the error
    says exactly which sessions those are."""

    def __init__(
        self,
        cause: TurnlogError,
        *,
        session_id: str,
        written: bool | None,
        dest: str,
        copied: Sequence[Copied],
        not_copied: Sequence[str],
    ) -> None:
        if written is None:
            what = f"copying session {session_id!r} failed, and the destination cannot say "
            what += "whether it holds it"
        elif written:
            what = f"session {session_id!r} was written but does not read back as its source"
        else:
            what = f"copying session {session_id!r} failed, and nothing of it was written"
        done = ", ".join(item.session_id for item in copied) or "none"
        left = ", ".join(not_copied) or "none"
        super().__init__(
            f"{what}: {cause.message}. Copied into {dest} before it, each whole and read "
            f"back: {done}; not copied: {left}",
            hint=cause.hint,
        )
        self.cause = cause
        self.session_id = session_id
        self.written = written
        self.copied = list(copied)
        self.not_copied = list(not_copied)


def check_source(source: Store, session_id: str) -> None:
    """Raise unless the session can be copied as it is now: it is there, no
    live writer holds it, it is the session it is stored as (its header names
    the same id: a renamed copy of a session is neither), and every record of
    it reads (streamed, nothing kept). Writes nothing."""
    if not source.exists(session_id):
        raise SessionNotFoundError(
            f"no session {session_id!r} in {source.url}",
            hint=f"check the session id; `turnlog ls --store {source.url}` lists its sessions",
        )
    holder = source.lock_holder(session_id)
    if holder is not None:
        # Its writer is appending: a copy now could end mid-turn and pass
        # for a crashed session in the destination.
        raise SessionLockedError(
            f"session {session_id!r} in {source.url} is being written by {holder.describe()}",
            hint="copy it once its writer has closed the session",
        )
    where = source.location(session_id) or f"session {session_id!r} in {source.url}"
    header = source.read_header(session_id)
    if header is None:
        raise UnfinishedSessionError(
            f"{where} holds no complete session header: a crash cut its creation short",
            hint="nothing in it was ever acknowledged, so there is nothing to copy",
        )
    check_named(header, session_id, where)
    if source.scan(session_id, on_event=_ignore).refusal is not None:
        source.read(session_id)  # raises the store's own refusal, located


def _refuse_existing(dest: Store, session_id: str) -> None:
    if dest.exists(session_id):
        raise SessionExistsError(
            f"session {session_id!r} already exists in {dest.url}",
            hint="copy never overwrites; remove it there first, or copy another session",
        )


def copy_session(source: Store, session_id: str, dest: Store) -> Copied:
    """Copy one session into another store: the same events with the same seq,
    ts, origin and content. Refuses to overwrite, refuses a damaged source, a
    live one, and a renamed copy of another session (`check_source`), before
    the destination holds a single event; reads the copy back to check it."""
    _refuse_existing(dest, session_id)
    check_source(source, session_id)
    return _copy_checked(source, session_id, dest)


def copy_sessions(
    source: Store,
    session_ids: Sequence[str],
    dest: Store,
    *,
    progress: Progress | None = None,
) -> list[Copied]:
    """Copy sessions into another store, as `copy_session` copies one, all of
    them or none: every session is checked (`check_source`, and that `dest`
    does not hold it) before the first is written, and any that cannot be
    copied refuse the whole copy (`CopyRefusedError` naming each; a copy of
    one session raises its own error). A failure after that (a full disk)
    raises `CopyIncompleteError`, naming the sessions copied, each whole and
    read back."""
    ids = list(dict.fromkeys(session_ids))
    refused: list[tuple[str, TurnlogError]] = []
    for session_id in progress(ids, "checking sessions") if progress else ids:
        try:
            _refuse_existing(dest, session_id)
            check_source(source, session_id)
        except TurnlogError as exc:
            refused.append((session_id, exc))
    if len(ids) == 1 and refused:
        raise refused[0][1]
    if refused:
        raise CopyRefusedError(refused, of=len(ids))
    copied: list[Copied] = []
    for index, session_id in enumerate(progress(ids, "copying sessions") if progress else ids):
        try:
            copied.append(_copy_checked(source, session_id, dest))
        except TurnlogError as exc:
            written = _holds(dest, session_id)
            raise CopyIncompleteError(
                exc,
                session_id=session_id,
                written=written,
                dest=dest.url,
                copied=copied,
                not_copied=([] if written else [session_id]) + ids[index + 1 :],
            ) from exc
    return copied


def _holds(dest: Store, session_id: str) -> bool | None:
    """Whether `dest` holds the session now, or None when it cannot say."""
    try:
        return dest.exists(session_id)
    except (TurnlogError, OSError):
        return None


def _copy_checked(source: Store, session_id: str, dest: Store) -> Copied:
    """Write a checked session into `dest` and read it back."""
    holder = source.lock_holder(session_id)
    if holder is not None:
        # A writer opened it since it was checked.
        raise SessionLockedError(
            f"session {session_id!r} in {source.url} is being written by {holder.describe()}",
            hint="copy it once its writer has closed the session",
        )
    count = write_events(dest, source.iter_events(session_id))
    # The copy reads back record for record as the source holds it.
    pairs = zip(source.iter_events(session_id), dest.iter_events(session_id), strict=False)
    checked = 0
    for original, copied in pairs:
        if encode_event(original) != encode_event(copied):
            raise TurnlogError(
                f"session {session_id!r}: the copy differs from the source at seq {original.seq}",
                hint="the destination store changed the record; keep the source",
            )
        checked += 1
    if checked != count:
        raise TurnlogError(f"session {session_id!r}: copied {count} events, read back {checked}")
    return Copied(session_id=session_id, events=count)
