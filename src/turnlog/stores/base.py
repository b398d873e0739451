"""The store contract every backend implements, and the rules they share."""

from __future__ import annotations

import abc
import re
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from types import TracebackType
from typing import ClassVar, Final, Self

import msgspec

from turnlog import events as ev
from turnlog.core.damage import Problem, Scan, TornTail
from turnlog.core.tail import Tail, collect_tail
from turnlog.errors import (
    CorruptLogError,
    InvalidSessionIdError,
    NotASessionError,
    SeqConflictError,
    StoreNotFoundError,
    UnreadableRecordError,
    UsageError,
)
from turnlog.events import Event
from turnlog.stores import holders
from turnlog.stores.skim import Record, SkimHandlers

# Portable on every filesystem and safe as a file name: no separators, no
# leading dot (hidden files, `..`), bounded length.
_SESSION_ID = re.compile(r"[A-Za-z0-9_\-][A-Za-z0-9._\-]{0,127}")
MAX_SESSION_ID_CHARS: Final = 128
# A subagent's session is named after its parent: `<parent>.agents/<agent_id>`
# (for JSONL, that is the file `<parent>.agents/<agent_id>.jsonl`), so a tree
# is found by name and a child can never be mistaken for a root.
AGENTS_SUFFIX: Final = ".agents"
# Subagents nest, but not without end: the deepest child's id is bounded too.
MAX_AGENT_DEPTH: Final = 8
MAX_TREE_ID_CHARS: Final = (MAX_SESSION_ID_CHARS + len(AGENTS_SUFFIX) + 1) * (MAX_AGENT_DEPTH + 1)


def _check_name(name: str, what: str) -> None:
    if not name:
        raise InvalidSessionIdError(f"{what} is empty")
    if len(name) > MAX_SESSION_ID_CHARS:
        raise InvalidSessionIdError(
            f"{what} is {len(name)} characters, over the {MAX_SESSION_ID_CHARS} limit"
        )
    if _SESSION_ID.fullmatch(name) is None:
        raise InvalidSessionIdError(f"{what} {name!r} is not allowed")


def validate_session_id(session_id: object) -> str:
    """Return the id if it is safe to use as a name, else raise with the reason.

    A root session's id is one name; a subagent's is its parent's id, then
    `.agents/`, then its agent id (see `child_session_id`).
    """
    if not isinstance(session_id, str):
        raise InvalidSessionIdError(f"session id must be a string, not {type(session_id).__name__}")
    if "/" not in session_id:
        _check_name(session_id, "session id")
        return session_id
    if len(session_id) > MAX_TREE_ID_CHARS:
        raise InvalidSessionIdError(
            f"session id is {len(session_id)} characters, over the {MAX_TREE_ID_CHARS} limit"
        )
    parts = session_id.split("/")
    if len(parts) - 1 > MAX_AGENT_DEPTH:
        raise InvalidSessionIdError(
            f"session id {session_id!r} nests subagents {len(parts) - 1} deep, over the "
            f"{MAX_AGENT_DEPTH} limit"
        )
    for part in parts[:-1]:
        if not part.endswith(AGENTS_SUFFIX) or part == AGENTS_SUFFIX:
            raise InvalidSessionIdError(
                f"session id {session_id!r} is not allowed",
                hint="a subagent's session id is '<parent id>.agents/<agent id>'",
            )
        _check_name(part, "session id")
    _check_name(parts[-1], "session id")
    return session_id


def validate_agent_id(agent_id: object) -> str:
    """An agent id names a child session, so it obeys the same rules as a root id."""
    if not isinstance(agent_id, str):
        raise InvalidSessionIdError(f"agent id must be a string, not {type(agent_id).__name__}")
    _check_name(agent_id, "agent id")
    return agent_id


def child_session_id(parent_id: str, agent_id: str) -> str:
    """The session id of subagent `agent_id` spawned by session `parent_id`."""
    return validate_session_id(
        f"{validate_session_id(parent_id)}{AGENTS_SUFFIX}/{validate_agent_id(agent_id)}"
    )


def parent_session_id(session_id: str) -> str | None:
    """The id of the session that spawned this one, or None for a root."""
    head, slash, _ = validate_session_id(session_id).rpartition("/")
    if not slash:
        return None
    return head[: -len(AGENTS_SUFFIX)]


class SessionMismatchError(NotASessionError):
    """A stored session whose header names another session than the one it is
    stored as (a JSONL file copied or renamed by hand). It is neither session:
    nothing reads, writes, copies or revives it as one."""

    hint = (
        "a session is stored under the id its header names; this one was copied or "
        "renamed by hand: put it back under that id, or out of the store"
    )

    def __init__(self, where: str, *, stored_as: str, named: str, hint: str | None = None) -> None:
        super().__init__(
            f"{where} holds session {named!r}, not {stored_as!r}: its header names another session",
            hint=hint,
        )
        self.where = where
        self.stored_as = stored_as
        self.named = named


def check_named(
    header: Event | None,
    session_id: str,
    where: str,
    *,
    hint: Callable[[str], str] | None = None,
) -> None:
    """The one rule for which stored session is which: the session `session_id`
    is the one stored under that id whose header names that id too. Raises
    `SessionMismatchError` for a header that names another; `where` says
    where it is stored (a file), and `hint(named)` what to do about it."""
    if header is None or not isinstance(header.data, ev.Session):
        return
    named = header.data.session_id
    if named != session_id:
        raise SessionMismatchError(
            where,
            stored_as=session_id,
            named=named,
            hint=hint(named) if hint is not None else None,
        )


def seq_conflict(session_id: str, expected: int, actual: int) -> SeqConflictError:
    """The refusal of an append whose first seq is not the session's next."""
    return SeqConflictError(
        f"session {session_id!r}: expected next seq {expected}, the store's next seq is {actual}",
        expected=expected,
        actual=actual,
    )


# Events go to a store in batches this size when a whole session is written:
# one write (or one statement) each, and memory bounded by a batch.
WRITE_BATCH_EVENTS: Final = 1000


# What a writer checks when it opens: every record, or the tail only.
CHECK_MODES: Final = ("full", "tail")


def validate_check(check: object) -> str:
    """The `check=` a writer is opened with, refused unless it is one of `CHECK_MODES`."""
    if check not in CHECK_MODES:
        raise UsageError(f"check must be 'full' or 'tail', not {check!r}")
    return str(check)


def validate_header(header: Event) -> str:
    """The id of the session `header` creates; refuses anything but a
    `session` header at seq 0."""
    if header.seq != 0 or not isinstance(header.data, ev.Session):
        raise UsageError("a session is created from its 'session' header at seq 0")
    return validate_session_id(header.data.session_id)


def first_of_session(stream: Iterator[Event]) -> tuple[Event, str]:
    """The header a whole-session write starts with, taken from `stream`, and
    the session's id."""
    header = next(stream, None)
    if header is None:
        raise UsageError("no events to write: a session starts with its header")
    return header, validate_header(header)


def batched(stream: Iterator[Event], size: int = WRITE_BATCH_EVENTS) -> Iterator[list[Event]]:
    """`stream` in lists of at most `size` events."""
    batch: list[Event] = []
    for event in stream:
        batch.append(event)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def check_contiguous(events: Sequence[Event], expected_seq: int) -> None:
    """Refuse a batch whose seqs do not run on from `expected_seq` one by one."""
    for offset, event in enumerate(events):
        if event.seq != expected_seq + offset:
            raise UsageError(
                f"events must be contiguous: got seq {event.seq}, expected {expected_seq + offset}"
            )


# The payloads that move the open turn; every other event leaves it as it is.
TAIL_FACT_TYPES: Final = frozenset({ev.TurnStart, ev.TurnEnd})


def open_turn_change(events: Sequence[Event]) -> tuple[int | None] | None:
    """How appending these events moves a session's open turn, for stores
    that keep it beside the events (an index of crashed sessions): None if
    they hold no turn boundary, else a 1-tuple of the new open turn's start
    seq, or of None once it ended."""
    change: tuple[int | None] | None = None
    for event in events:
        data = event.data
        if type(data) not in TAIL_FACT_TYPES:
            continue
        if isinstance(data, ev.TurnStart):
            change = (event.seq,)
        elif isinstance(data, ev.TurnEnd):
            change = (None,)
    return change


class Holder(msgspec.Struct, frozen=True, kw_only=True):
    """Who holds a session's writer lock, as far as the store can tell."""

    pid: int | None = None
    host: str | None = None
    since: str | None = None
    # Backend specifics (a lock file, a database backend id).
    detail: str | None = None

    def describe(self) -> str:
        if self.pid is None:
            return "another process"
        return f"process {self.pid}" + (f" on {self.host}" if self.host else "")


class StoreWriter(abc.ABC):
    """Exclusive write access to one session; the lock lives as long as this does."""

    # Set at construction: the tail the store read under the writer's lock,
    # and the lock's key among this process's writers once `hold` recorded it.
    _tail: Tail | None = None
    _held: Hashable | None = None

    #: True when an append that is not synced may wait on I/O (a database's
    #: round trip); False when it only hands bytes to memory (the OS page
    #: cache, a list) and a sync is a call of its own. An asyncio handle then
    #: runs such appends on the event loop's thread (`turnlog.handle.async_log`).
    unsynced_append_waits: ClassVar[bool] = True

    def __init__(self, *, tail: Tail | None = None) -> None:
        self._tail = tail
        self._held = None

    def hold(self, key: Hashable, site: str | None) -> Self:
        """Record this writer as this process's holder of the session's lock
        (and the line that opened it), so a second handle is told where the
        first was opened; `release_hold` undoes it when the writer closes."""
        self._held = key
        holders.hold(key, self, site)
        return self

    def release_hold(self) -> None:
        held, self._held = self._held, None
        if held is not None:
            holders.release(held, self)

    @abc.abstractmethod
    def append(self, events: Sequence[Event], *, expected_seq: int, sync: bool) -> None:
        """Append events whose first seq must be `expected_seq`, the session's next.

        Raises `SeqConflictError` on a mismatch. With `sync`, returns only once
        the events are durable.
        """

    def append_one(self, event: Event, sync: bool) -> None:
        """Append one event whose seq must be the session's next: the hot path
        of every agent loop. Stores override it to skip the batch machinery."""
        self.append((event,), expected_seq=event.seq, sync=sync)

    @abc.abstractmethod
    def sync(self) -> None:
        """Make every appended event durable."""

    @abc.abstractmethod
    def close(self) -> None:
        """Sync and release the lock. Idempotent."""

    @property
    def torn_tail(self) -> TornTail | None:
        """The torn tail quarantined when this writer opened, if any."""
        return None

    @property
    def light_read(self) -> bool:
        """True when reading the whole session now costs less than handing
        the read to another thread: a small local file. An asyncio handle then
        runs such a read on the event loop's thread (`AsyncLog.call_read`)."""
        return False

    @property
    def tail(self) -> Tail | None:
        """The tail the writer read under its lock when opened with
        `check="tail"`, so a caller need not read it again."""
        return self._tail

    @property
    @abc.abstractmethod
    def next_seq(self) -> int:
        """The seq the next append must carry: what reached the store so far."""

    def __enter__(self) -> StoreWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class Store(abc.ABC):
    """Sessions by id: create, write under an exclusive lock, read, read the tail.

    A session is stored under the id its header names (`check_named`): one
    stored under another id (a JSONL file renamed by hand) is neither session.
    """

    #: How a person would name this store on the command line.
    url: str = ""

    @abc.abstractmethod
    def create(self, header: Event) -> StoreWriter:
        """Create a session from its header (seq 0) and return its locked writer.

        The header is durable when this returns. Raises `SessionExistsError`.
        """

    def write_session(self, events: Iterable[Event]) -> int:
        """Write a whole session of prebuilt events (header first, seqs from 0)
        as they are, and return the count. Atomic where the store can be: the
        session appears whole or not at all, so a write that fails half way
        (a full disk) leaves nothing that passes for a crashed session, and
        the retry is not refused as "already exists". Raises
        `SessionExistsError`. This default, for stores that hold nothing
        across a crash (memory), creates and appends in batches."""
        stream = iter(events)
        header, _ = first_of_session(stream)
        count = 1
        with self.create(header) as writer:
            for batch in batched(stream):
                writer.append(batch, expected_seq=batch[0].seq, sync=False)
                count += len(batch)
            writer.sync()
        return count

    @abc.abstractmethod
    def writer(self, session_id: str, *, force: bool = False, check: str = "full") -> StoreWriter:
        """Take the session's writer lock. Raises `SessionLockedError` when a
        live writer holds it, `SessionNotFoundError` when there is no session.
        `force` writes without the lock: only for a holder known to be stuck.
        `check="tail"` validates only the end of the log, for appenders (such
        as recovery) that need nothing else; `"full"` checks every record."""

    @abc.abstractmethod
    def read(self, session_id: str, from_seq: int = 0) -> list[Event]:
        """Every valid event from `from_seq` on, never modifying anything."""

    @abc.abstractmethod
    def sessions(self) -> list[str]:
        """Every session id in the store, subagents' included, sorted."""

    def children(self, session_id: str) -> list[str]:
        """The sessions of the subagents `session_id` spawned, sorted."""
        return [child for child in self.sessions() if parent_session_id(child) == session_id]

    @abc.abstractmethod
    def exists(self, session_id: str) -> bool: ...

    @abc.abstractmethod
    def lock_holder(self, session_id: str) -> Holder | None:
        """Who holds the session's writer lock, or None when no live writer does."""

    def init(self) -> None:  # noqa: B027 - most stores make themselves on first use
        """Make the store ready (a directory, a schema); idempotent. Refuses
        (`NotAStoreError`) a database that holds another application's data."""

    def present(self) -> bool:
        """Whether the store is there to read: a directory, a database with
        turnlog's schema. Never creates anything; raises `NotAStoreError` for
        something that is not a turnlog store. Read-only commands check it
        first, so a mistyped URL is an error, not an empty store."""
        return True

    def require(self) -> None:
        """Raise `StoreNotFoundError` unless the store is there to read."""
        if not self.present():
            raise StoreNotFoundError(f"no turnlog store at {self.url}")

    def sweep_candidates(self) -> list[str]:
        """Sessions that may hold an open turn: every session, unless the store
        keeps an index of open turns and can answer from it."""
        return self.sessions()

    def location(self, session_id: str) -> str | None:
        """Where a person finds the session (a file path), if it has one."""
        return None

    def scan(self, session_id: str, *, on_event: Callable[[Event], None] | None = None) -> Scan:
        """Read every record and report the first that stops a reader, never
        modifying anything. With `on_event`, each valid event goes to it and
        is not kept. A store with torn tails (JSONL) overrides this."""
        events: list[Event] = []
        try:
            for event in self.iter_events(session_id):
                if on_event is None:
                    events.append(event)
                else:
                    on_event(event)
        except (CorruptLogError, UnreadableRecordError) as exc:
            refusal = Problem(message=exc.detail)
            kind = "unreadable" if isinstance(exc, UnreadableRecordError) else "corrupt"
            return Scan(events=events, problems=[refusal], refusal=refusal, refusal_kind=kind)
        return Scan(events=events, problems=[])

    def iter_events(self, session_id: str) -> Iterator[Event]:
        """Every valid event, oldest first. Stores override this to stream, so
        a whole-log command holds one record at a time, not the log."""
        yield from self.read(session_id)

    #: True for a store whose `skim` keeps the index it is named (the JSONL
    #: store): bringing one up to date is then worth a skim.
    keeps_skim_index: ClassVar[bool] = False

    def skim(
        self, session_id: str, handlers: SkimHandlers, *, index: str | None = None
    ) -> int | None:
        """Check every record of the session and hand those of the types in
        `handlers` to them, oldest first, decoding none of the others
        (`turnlog.stores.skim`): a reader that needs a few kinds of event from
        a long log. Returns the session's next seq; None when the store cannot
        skim it (damage, hand-made records, a store that keeps no lines): read
        it with `iter_events` then, which says what is wrong.

        With `index`, a store may keep, beside the session, where the records
        of these types lie (the JSONL store's `<id>.jsonl.index-<index>`), and
        read through it: an index holds only while one checksum of the bytes
        it was made from matches, and only the records past it are checked
        one by one. Only the session's writer passes one."""
        return None

    def read_records(
        self, session_id: str, into: Mapping[str, list[Record]], *, index: str | None = None
    ) -> int:
        """Append each record of the types `into` names to its list, oldest
        first, and return the session's next seq. Always answers: a skim
        (`skim`) where the store can, else the careful read (`iter_events`),
        which raises on damage and says what is wrong. A reader calls this,
        never `skim`: it need not know whether a store skims.

        Lists shared by several types get them interleaved in seq order. What
        a skim that gave up had appended is taken back before the careful
        read, and all of it when the read raises."""
        lists = {id(kept): (kept, len(kept)) for kept in into.values()}

        def take_back() -> None:
            for kept, length in lists.values():
                del kept[length:]

        handlers = {name: kept.append for name, kept in into.items()}
        try:
            count = self.skim(session_id, handlers, index=index)
            if count is not None:
                return count
            take_back()
            count = 0
            for event in self.iter_events(session_id):
                asked = into.get(event.type)
                if asked is not None:
                    asked.append((event.seq, ev.encode_event(event)))
                count = event.seq + 1
            return count
        except BaseException:
            take_back()  # the lists hold all of a session's records, or none
            raise

    def iter_newest_first(self, session_id: str) -> Iterator[Event]:
        """Events newest first. Stores override this to read backwards lazily."""
        yield from reversed(self.read(session_id))

    def read_header(self, session_id: str) -> Event | None:
        """Event 0. Stores override this to read only the first record."""
        first = self.read(session_id)[:1]
        return first[0] if first else None

    def read_tail(self, session_id: str) -> Tail:
        """The header and just enough of the newest events to decide the state."""
        events, revivals_before = collect_tail(self.iter_newest_first(session_id))
        header = self.read_header(session_id) if events and events[0].seq != 0 else None
        return Tail(header=header, events=tuple(events), revivals_before=revivals_before)

    def close(self) -> None:  # noqa: B027 - optional for stores that hold nothing
        """Release connections or handles the store holds. Idempotent."""

    def __enter__(self) -> Store:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
