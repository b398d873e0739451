"""Rescue Claude Code and Codex sessions: repair in place by appending, or import."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Final

import msgspec

from turnlog import events as ev
from turnlog.core.damage import Problem, TornTail
from turnlog.core.fold import Fold
from turnlog.core.sniff import CLAUDE_CODE, CODEX, sniff
from turnlog.core.verdict import decide
from turnlog.errors import (
    NotASessionError,
    SessionExistsError,
    SessionLockedError,
    TurnlogError,
    UsageError,
)
from turnlog.formats import claude_code, codex
from turnlog.formats.builder import Transcript, is_reasoning_only
from turnlog.formats.foreign import (
    MAX_SCAN_TAIL_BYTES,
    SCAN_TAIL_BYTES,
    ForeignFileError,
    append_lines,
    checked_window_s,
    live_window,
    parse,
    quarantine,
    read_first_line,
    read_tail,
    refuse_if_live,
)
from turnlog.formats.repair_lines import (
    OwedOutput as OwedOutput,
    owed_outputs as owed_outputs,
    repair_lines,
)
from turnlog.ops.transfer import write_events
from turnlog.stores import Store

KINDS: Final = (CLAUDE_CODE, CODEX)
DEFAULT_FOLDERS: Final = {
    CLAUDE_CODE: os.path.join("~", ".claude", "projects"),
    CODEX: os.path.join("~", ".codex", "sessions"),
}


class Diagnosis(msgspec.Struct, frozen=True, kw_only=True):
    """What `doctor` finds in a file and would append to it."""

    path: str
    kind: str
    session_id: str
    status: str  # "crashed", "interrupted by the user", "healthy", "torn"
    owed: tuple[OwedOutput, ...] = ()
    lines: tuple[str, ...] = ()
    torn_tail: TornTail | None = None
    problems: tuple[Problem, ...] = ()
    counted: dict[str, int] = msgspec.field(default_factory=dict)
    # A subagent's own file: its agent id and the session that spawned it.
    agent_id: str | None = None
    subagent_of: str | None = None

    @property
    def needs_repair(self) -> bool:
        return bool(self.lines) or self.torn_tail is not None


class Repair(msgspec.Struct, frozen=True, kw_only=True):
    """What `doctor` did to a file."""

    diagnosis: Diagnosis
    action: str  # "repaired", "nothing to repair", "would repair"
    appended_bytes: int = 0
    torn_tail: TornTail | None = None


class Failure(msgspec.Struct, frozen=True, kw_only=True):
    """A file a folder scan or repair could not handle, and why: reported, never skipped."""

    path: str
    error: str
    hint: str = ""
    action: str = "failed"
    # The error's class name (SessionLockedError, ForeignFileError, ...).
    kind: str = ""


def kind_of(path: str, kind: str) -> str:
    """The file's format, proved from its first line before any byte is read
    further or written: "auto" takes what the line shows, a named kind must
    match it. Anything else (a turnlog session, other JSONL) is refused."""
    if kind not in (*KINDS, "auto"):
        raise UsageError(f"unknown transcript kind {kind!r}", hint="use claude-code, codex or auto")
    if os.path.isdir(path):
        raise UsageError(f"{path} is a directory", hint="pass a session file, or --all DIR")
    # Read whole, however long: a first line with a pasted screenshot runs to
    # many MiB, and a prefix of it is not JSON.
    first = read_first_line(path)
    found = sniff(first)
    if found is None or (kind != "auto" and found != kind):
        named = "a Claude Code or Codex" if kind == "auto" else f"a {kind}"
        seen = f" (it looks like a {found} transcript)" if found else ""
        raise NotASessionError(
            f"{path} is not {named} transcript{seen}; it was left unchanged",
            hint="name the right kind; a turnlog session is repaired with `turnlog recover`",
        )
    return found


def read_transcript(path: str, kind: str) -> Transcript:
    kind = kind_of(path, kind)
    if kind == CLAUDE_CODE:
        return claude_code.read_claude_code(path)
    return codex.read_codex(path)


def diagnose(path: str, kind: str = "auto") -> Diagnosis:
    """Read a transcript and say what `doctor` would append; writes nothing."""
    return _diagnosis(path, read_transcript(path, kind))


def _diagnosis(path: str, transcript: Transcript) -> Diagnosis:
    owed = owed_outputs(transcript)
    if owed:
        lines = repair_lines(transcript, owed)
        status = "crashed"
    else:
        lines = ()
        status = _calm_status(transcript)
    return Diagnosis(
        path=path,
        kind=transcript.kind,
        session_id=transcript.session_id,
        status="torn" if transcript.torn is not None and not owed else status,
        owed=owed,
        lines=lines,
        torn_tail=transcript.torn,
        problems=transcript.problems,
        counted=transcript.counted,
        agent_id=transcript.agent_id,
        subagent_of=transcript.parent_session,
    )


# A reply cut off after its reasoning: nothing to append (no call is owed),
# and the session is not finished; reviving it after import carries on.
CUT_AFTER_REASONING: Final = "cut off after reasoning (nothing to append; revivable)"


def _calm_status(transcript: Transcript) -> str:
    if transcript.stopped_by_user:
        return "interrupted by the user"
    for event in reversed(transcript.events):
        data = event.data
        if isinstance(data, ev.TurnEnd):
            return "interrupted by the user" if data.reason == "cancelled" else "healthy"
        if isinstance(data, ev.AssistantMessage):
            if not data.tool_calls and is_reasoning_only(data.content):
                return CUT_AFTER_REASONING
            return "healthy"
        if isinstance(data, ev.TurnStart):
            return "healthy"
    return "healthy"


def doctor(
    path: str,
    kind: str = "auto",
    *,
    dry_run: bool = False,
    force: bool = False,
    live_window_s: float | None = None,
) -> Repair:
    """Repair a crashed transcript in its own format, by appending only.

    A torn final fragment is first moved to `<file>.torn-<offset>`; every other
    byte stays where it was. Refuses a file its tool may still be writing
    (`SessionLockedError`) unless `force`: open in a process, or modified in
    the last `live_window_s` seconds (by default the tool's own quiet time,
    `formats.foreign.LIVE_WINDOWS_S`), it or another file of its session (a
    Claude Code session's own file and its subagents' files are written by
    one process). A second run appends nothing. An append that fails (a full
    disk) is undone and raised as `AppendFailedError`.

    The file is read again here even when a caller diagnosed it before
    asking a person: what is appended follows the file as it is now.
    """
    run = RepairRun(force=force, live_window_s=live_window_s)
    if dry_run:
        found = diagnose(path, kind)
        action = "would repair" if found.needs_repair else "nothing to repair"
        return Repair(diagnosis=found, action=action)
    return run.repair(path, kind)


class RepairRun:
    """One `doctor` run over one or many files (a session and its subagents, a
    folder).

    The files of one session (a Claude Code session's own file and its
    subagents' files; a Codex rollout alone) are written by one process, so
    they are judged live together: a subagent at work means its parent waits
    on it, and a parent being written may carry a subagent on at any moment.
    Each session is judged once, before the run appends to any of its files,
    so the run's own appends never make the rest of the session look live.
    """

    def __init__(self, *, force: bool = False, live_window_s: float | None = None) -> None:
        self.force = force
        self.live_window_s = None if live_window_s is None else checked_window_s(live_window_s)
        # Per session (its main file): None when judged not live, else the
        # file found live and the error saying so.
        self._judged: dict[str, tuple[str, SessionLockedError] | None] = {}

    def repair(self, path: str, kind: str = "auto") -> Repair:
        """`doctor` of one file, as part of this run."""
        found = diagnose(path, kind)
        if not found.needs_repair:
            return Repair(diagnosis=found, action="nothing to repair")
        if not self.force:
            self._refuse_if_live(path, found)
        moved = quarantine(path, found.torn_tail) if found.torn_tail is not None else None
        written = 0
        if found.lines:
            written = append_lines(
                path,
                [line.encode() for line in found.lines],
                newline_first=_missing_newline(path),
            )
        return Repair(diagnosis=found, action="repaired", appended_bytes=written, torn_tail=moved)

    def _refuse_if_live(self, path: str, found: Diagnosis) -> None:
        window = live_window(found.kind) if self.live_window_s is None else self.live_window_s
        main, others = _session_of(path, found)
        if main not in self._judged:
            self._judged[main] = None
            for member in [path, *others]:
                try:
                    refuse_if_live(member, window_s=window)
                except FileNotFoundError:
                    # The session's other files prove liveness when they
                    # exist; one that is not there writes nothing.
                    if member == path:
                        raise
                except SessionLockedError as error:
                    self._judged[main] = (member, error)
                    break
        judged = self._judged[main]
        if judged is None:
            return
        member, live = judged
        if member == path:
            raise SessionLockedError(live.message, pid=live.pid, hint=live.hint)
        raise SessionLockedError(
            f"{path} belongs to a session that may still be being written: {live.message}",
            pid=live.pid,
            hint="a Claude Code session and its subagents are written by one process; wait for "
            "it to exit, or pass --force when you know it has",
        )


def _session_of(path: str, found: Diagnosis) -> tuple[str, list[str]]:
    """The main file of the session `path` belongs to (the key a run judges
    it by), and the session's other files one process writes with it."""
    if found.kind != CLAUDE_CODE:
        return os.path.abspath(path), []
    if found.subagent_of is None:
        main = os.path.abspath(path)
        session_id = found.session_id
    else:
        main = claude_code.main_file_of(path, found.subagent_of)
        session_id = found.subagent_of
    members = [main, *claude_code.agent_files(main, session_id, {})]
    itself = os.path.abspath(path)
    return main, [member for member in members if os.path.abspath(member) != itself]


def subagent_diagnoses(path: str, found: Diagnosis) -> list[Diagnosis | Failure]:
    """What `doctor FILE` repairs with a Claude Code session's own file, in the
    same run: each of its subagents' own files that needs a repair, and each
    that could not be read (with why). None for a Codex file or for a
    subagent's own file."""
    if found.kind != CLAUDE_CODE or found.subagent_of is not None:
        return []
    out: list[Diagnosis | Failure] = []
    for child in claude_code.agent_files(path, found.session_id, {}):
        try:
            diagnosis = diagnose(child, found.kind)
        except (OSError, TurnlogError) as error:
            out.append(failure(child, error))
            continue
        if diagnosis.needs_repair:
            out.append(diagnosis)
    return out


def _missing_newline(path: str) -> bool:
    with open(path, "rb") as f:
        f.seek(0, os.SEEK_END)
        if f.tell() == 0:
            return False
        f.seek(-1, os.SEEK_END)
        return f.read(1) != b"\n"


# -- directory mode ---------------------------------------------------------------------


def walk_files(folder: str) -> Iterator[str]:
    """Every file under `folder`, sorted per folder, following links to folders
    but entering each folder once (a symlink loop is walked once)."""
    seen: set[tuple[int, int]] = set()
    for root, dirs, files in os.walk(folder, followlinks=True):
        try:
            info = os.stat(root)
        except OSError:
            dirs[:] = []
            continue
        key = (info.st_dev, info.st_ino)
        if key in seen:
            dirs[:] = []
            continue
        seen.add(key)
        dirs.sort()
        for name in sorted(files):
            yield os.path.join(root, name)


def session_files(kind: str, folder: str) -> list[str]:
    """The session files under a Claude Code projects folder or a Codex
    sessions folder; for Claude Code, subagents' own files too (2.0
    `agent-<id>.jsonl`, 2.1 `<session>/subagents/`): a subagent killed
    mid-call leaves its own file owing results. Listed by name, whatever they
    are: a FIFO or an unreadable file is reported by the scan, not skipped."""
    folder = os.path.expanduser(folder)
    found = [f for f in walk_files(folder) if f.endswith(".jsonl")]
    if kind == CLAUDE_CODE:
        return found
    return [f for f in found if os.path.basename(f).startswith("rollout-")]


def _tail_transcript(kind: str, path: str) -> Transcript:
    """The transcript of the file's tail: from a window that holds an assistant
    line (where any orphan call was asked), growing it until it does."""
    size = SCAN_TAIL_BYTES
    while True:
        data, whole = read_tail(path, size)
        parsed = parse(data)
        if kind == CLAUDE_CODE:
            transcript = claude_code.from_parsed(parsed, path, subagents=False)
        else:
            transcript = codex.from_parsed(parsed, path)
        asked = any(isinstance(e.data, ev.AssistantMessage) for e in transcript.events)
        if asked or whole or size >= MAX_SCAN_TAIL_BYTES:
            return transcript
        size *= 4


def tail_diagnosis(kind: str, path: str) -> Diagnosis:
    """What `diagnose` would say, from the file's tail only: for scanning a
    folder in time. The repair itself reads the whole file again."""
    return _diagnosis(path, _tail_transcript(kind, path))


def scan_folder(
    kind: str,
    folder: str,
    *,
    progress: Callable[[Sequence[str]], Iterable[str]] | None = None,
) -> list[Diagnosis | Failure]:
    """Every session under `folder` that will not resume, judged from the
    tails, and every file that could not be judged (with why)."""
    files = session_files(kind, folder)
    walk = progress(files) if progress is not None else files
    out: list[Diagnosis | Failure] = []
    for path in walk:
        try:
            if not stat.S_ISREG(os.stat(path).st_mode):
                raise ForeignFileError(f"{path} is not a regular file; it was not read")
            found = tail_diagnosis(kind, path)
        except (OSError, TurnlogError) as error:
            out.append(failure(path, error))
            continue
        if found.needs_repair:
            out.append(found)
    return out


def failure(path: str, error: OSError | TurnlogError) -> Failure:
    """What went wrong with one file, for a report that goes on to the next."""
    if isinstance(error, TurnlogError):
        return Failure(path=path, error=error.message, hint=error.hint, kind=type(error).__name__)
    reason = error.strerror or str(error)
    return Failure(
        path=path,
        error=f"{path}: {reason}",
        hint="check the path and its permissions",
        kind=type(error).__name__,
    )


# -- import -------------------------------------------------------------------------------


class Imported(msgspec.Struct, frozen=True, kw_only=True):
    path: str
    kind: str
    session_id: str
    events: int
    status: str
    subagents: tuple[str, ...] = ()
    problems: tuple[Problem, ...] = ()
    counted: dict[str, int] = msgspec.field(default_factory=dict)
    # Set when the file is a subagent's own: the session that spawned it.
    subagent_of: str | None = None


def import_file(store: Store, path: str, kind: str = "auto") -> Imported:
    """Write a transcript (and its subagents) to a turnlog store as sessions of
    `origin: import` events, so `inspect`, `show`, `export` and `revive` work on
    them. Refuses a session id the store already holds; a subagent already
    there (imported with its parent, or from its own file before) is kept as
    it is, so a folder imports whole in any order."""
    transcript = read_transcript(path, kind)
    sessions = [transcript, *_descendants(transcript)]
    if store.exists(transcript.session_id):
        if transcript.agent_id is not None:
            return _imported(path, transcript, status="already imported with its parent")
        raise SessionExistsError(
            f"session {transcript.session_id!r} is already in {store.url}",
            hint="it was imported before; inspect it there, or import into another store",
        )
    for item in sessions:
        if item is not transcript and store.exists(item.session_id):
            continue
        write_events(store, item.events)
    found = decide(Fold(transcript.events))
    return _imported(
        path,
        transcript,
        status="interrupted" if found.open_turn is not None else "closed",
        subagents=tuple(child.session_id for child in sessions[1:]),
    )


def _imported(
    path: str, transcript: Transcript, *, status: str, subagents: tuple[str, ...] = ()
) -> Imported:
    return Imported(
        path=path,
        kind=transcript.kind,
        session_id=transcript.session_id,
        events=len(transcript.events),
        status=status,
        subagents=subagents,
        problems=transcript.problems,
        counted=transcript.counted,
        subagent_of=transcript.parent_session,
    )


def _descendants(transcript: Transcript) -> list[Transcript]:
    out = []
    for child in transcript.children:
        out.append(child)
        out.extend(_descendants(child))
    return out
