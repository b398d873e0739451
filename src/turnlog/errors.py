"""The error hierarchy: one root, every error with a human hint."""

from __future__ import annotations


class TurnlogError(Exception):
    """Root of every error turnlog raises; `hint` says what to do about it."""

    hint: str = ""

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        if hint is not None:
            self.hint = hint
        if self.hint:
            # A traceback shows notes: a library user who never catches the
            # error still reads what to do about it.
            self.add_note(f"hint: {self.hint}")

    def __str__(self) -> str:
        return self.message


class UsageError(TurnlogError, ValueError):
    """An argument that can never work (a negative seq, an unknown mode)."""

    hint = "check the arguments against the documentation"


def refuse_a_path(value: object, *, function: str, instead: str, takes: str = "events") -> None:
    """Raise `UsageError` when a function that takes events (or messages) is
    given a path or a session id: a string iterates as characters, and the
    error would be a bare `AttributeError` deep inside. `instead` names the
    function that takes a path."""
    if isinstance(value, str | bytes) or hasattr(value, "__fspath__"):
        raise UsageError(
            f"{function} takes {takes}, not a path or a session id ({value!r})",
            hint=f"for a stored session use {instead}",
        )


class FormatError(TurnlogError):
    """A record that cannot be decoded: bad JSON, a missing field, a wrong type."""

    hint = "run `turnlog verify` on the session to list every problem"

    def __init__(
        self,
        message: str,
        *,
        line: int | None = None,
        offset: int | None = None,
        hint: str | None = None,
    ) -> None:
        # `detail` is the bare reason; `message` adds the location once, so an
        # error re-raised with its location never prints it twice.
        self.detail = message
        where = []
        if line is not None:
            where.append(f"line {line}")
        if offset is not None:
            where.append(f"byte {offset}")
        if where:
            message = f"{message} ({', '.join(where)})"
        super().__init__(message, hint=hint)
        self.line = line
        self.offset = offset


class UnknownEventTypeError(FormatError):
    """A record whose type is not in the vocabulary and is not a custom `x_` type."""

    hint = (
        "the vocabulary is closed; custom event types must start with `x_`, "
        "or the file was written by a newer turnlog"
    )


class LimitExceededError(FormatError):
    """A record past a hard limit (line size, nesting), refused rather than guessed at."""

    hint = "split large payloads into smaller events or store them beside the log"


class NotASessionError(FormatError):
    """A file whose first line is not a turnlog `session` header: not ours to touch."""

    hint = "turnlog only reads and writes its own session files; this file was left as it was"


class StoredRecordError(FormatError):
    """A record of a stored session that stops a reader, located by file, line and byte."""

    def __init__(
        self,
        message: str,
        *,
        path: str | None = None,
        line: int | None = None,
        offset: int | None = None,
        hint: str | None = None,
    ) -> None:
        if path is not None:
            message = f"{path}: {message}"
        super().__init__(message, line=line, offset=offset, hint=hint)
        self.path = path


class UnreadableRecordError(StoredRecordError):
    """A complete, intact record that this turnlog cannot understand (a newer type,
    a value out of range). Never a torn tail: it is reported and nothing is moved."""

    hint = (
        "the record is complete, so it is not crash damage; it may come from a newer "
        "turnlog. Upgrade turnlog, or run `turnlog verify` to see the record"
    )


class UnfinishedSessionError(FormatError):
    """A session file with no complete header: a crash cut its creation short."""

    hint = (
        "nothing was ever acknowledged in it: `turnlog.open(path)` creates the session "
        "again, keeping the partial bytes in a .torn sidecar"
    )


class CorruptLogError(StoredRecordError):
    """Damage before a later valid record: not a crash artifact, so nothing is written."""

    hint = (
        "the log is damaged in the middle, which a crash cannot cause; keep a copy, "
        "then `turnlog verify` lists every damaged line"
    )


class SeqConflictError(TurnlogError):
    """An append whose expected next seq is not the store's next seq."""

    hint = "another writer appended to this session; reopen it to see the new events"

    def __init__(self, message: str, *, expected: int, actual: int) -> None:
        super().__init__(message)
        self.expected = expected
        self.actual = actual


class SessionLockedError(TurnlogError):
    """A second writer on a session that already has a live one."""

    hint = (
        "another process is writing this session; wait for it to finish, or stop it if it is stuck"
    )

    def __init__(self, message: str, *, pid: int | None = None, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.pid = pid


class SessionHeldHereError(SessionLockedError):
    """A second handle on a session whose writer this very process holds."""

    hint = (
        "close that handle first or share it: one Log is safe to use from many threads "
        "and asyncio tasks"
    )


class SessionInterruptedError(TurnlogError):
    """Work started on a session whose last run crashed mid-turn, before recovery."""

    hint = "recover the session first: `turnlog recover SESSION`, or turnlog.recover()"


class SessionNotFoundError(TurnlogError):
    """A session id or path that names no session."""

    # Said to Python callers and shell users alike: no keyword of either.
    hint = "list the sessions with `turnlog ls`, or check the session id and the store"


class SessionExistsError(TurnlogError):
    """Creating a session whose id is already taken."""

    hint = "pick another session id, or open the existing session without create"


class WriteOrderError(UsageError):
    """A write that would make the log claim what it cannot prove: a step closed
    with calls unanswered, a result for a call that was never dispatched."""

    hint = (
        "dispatch every tool call with `log.dispatch(call)` before running it, and record "
        "its result inside that block"
    )


class ReplayDivergedError(TurnlogError):
    """An engine run, executed again after a crash, wrote other than what the
    log holds from its first execution: the workflow is not deterministic, or
    someone else wrote to its session."""

    hint = (
        "an engine replays a workflow from the top, so its turnlog writes must come in "
        "the same order with the same content; recover the session by hand "
        "(`turnlog recover SESSION`) if the engine has given the run up"
    )


class InvalidSessionIdError(UsageError):
    """A session id that could escape the store or is not portable."""

    hint = (
        "session ids are 1-128 characters of letters, digits, '.', '_' and '-', "
        "not starting with '.'; a subagent's is '<parent id>.agents/<agent id>'"
    )


class ForkBoundaryError(UsageError):
    """A fork point that would cut a turn in half or lies outside the log."""


class LogPoisonedError(TurnlogError):
    """A writer whose fsync failed: nothing after the last good sync can be trusted."""

    hint = (
        "the disk reported a failed sync, so the kernel may have dropped written data; "
        "close this handle and reopen the session, which checks and repairs the tail"
    )


class StoreIOError(TurnlogError):
    """An operating-system error from a store, translated with its errno."""

    hint = "check free disk space and permissions on the store's directory"

    def __init__(self, message: str, *, errno: int | None = None, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.errno = errno


class StoreNotFoundError(UsageError):
    """A store URL that names nothing: a mistyped path is an error, never an empty store."""

    hint = "check the store URL; `turnlog store init URL` creates a store"


class NotAStoreError(NotASessionError):
    """A database or folder that holds something other than turnlog's: never touched."""

    hint = (
        "turnlog only reads and writes its own stores; this one was left as it was. "
        "`turnlog store init URL` creates a store in an empty or new database"
    )
