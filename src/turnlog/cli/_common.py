"""What every turnlog command shares: exit codes, the console, error
reporting, the common options and JSON output."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, Final, NoReturn, TypeVar

import click
import msgspec

from turnlog.cli.numbers import WholeNumber
from turnlog.cli.visible import visible
from turnlog.core.revivable import DEFAULT_MAX_REVIVALS
from turnlog.errors import FormatError, SessionLockedError, TurnlogError, UsageError
from turnlog.stores import DEFAULT_STORE, STORE_ENV, Store

if TYPE_CHECKING:
    from rich.console import Console

    from turnlog import events as ev

EXIT_OK: Final = 0
EXIT_FINDINGS: Final = 1
EXIT_USAGE: Final = 2
EXIT_UNREADABLE: Final = 3
EXIT_LOCKED: Final = 4

# `ls` shows a progress bar past this many sessions, when on a terminal.
PROGRESS_AFTER_SESSIONS: Final = 50

F = TypeVar("F", bound=Callable[..., Any])


_PIPED_WIDTH: Final = 100_000


def _console(*, unfolded_when_piped: bool = True) -> Console:
    # Imported on use: a --json call never pays for the terminal renderer.
    from turnlog.cli.terminal import SafeConsole

    console = SafeConsole(highlight=False, soft_wrap=True)
    if unfolded_when_piped and not console.is_terminal:
        # Piped output is read by programs and pasted whole: a table cell is
        # never folded to fit an 80-column terminal that is not there.
        console.width = _PIPED_WIDTH
    return console


def _exit_code(error: TurnlogError) -> int:
    if isinstance(error, SessionLockedError):
        return EXIT_LOCKED
    if isinstance(error, UsageError):
        return EXIT_USAGE
    return EXIT_UNREADABLE


def _fail(message: str, hint: str, code: int, *, as_json: bool) -> NoReturn:
    if as_json:
        click.echo(msgspec.json.encode({"error": message, "hint": hint, "exit_code": code}))
    # A message may quote a session's id or a file's name: shown, not obeyed.
    click.echo(f"error: {visible(message)}", err=True)
    if hint:
        click.echo(f"hint: {visible(hint)}", err=True)
    sys.exit(code)


def _reports_errors(command: F) -> F:
    """Turn turnlog and OS errors into one line, a hint and the documented exit code."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        as_json = bool(kwargs.get("as_json"))
        try:
            return command(*args, **kwargs)
        except TurnlogError as error:
            _fail(error.message, error.hint, _exit_code(error), as_json=as_json)
        except IsADirectoryError as error:
            _fail(
                f"{error.filename} is a directory",
                "pass a .jsonl file or a session id",
                EXIT_UNREADABLE,
                as_json=as_json,
            )
        except OSError as error:
            _fail(
                str(error), "check the path and its permissions", EXIT_UNREADABLE, as_json=as_json
            )

    return wrapper  # type: ignore[return-value]


def _emit_json(document: Any) -> None:
    click.echo(msgspec.json.encode(document).decode())


def _to_builtins(value: Any) -> Any:
    return msgspec.to_builtins(value)


def _events(store: Store, session_id: str) -> Iterator[ev.Event]:
    """The session's events, streamed: a whole-log command holds one at a time."""
    events = store.iter_events(session_id)
    first = next(events, None)
    if first is None:
        raise FormatError(f"session {session_id!r} holds no valid record")
    yield first
    yield from events


def _stream_json(fields: dict[str, Any], *, indent: bool = False) -> None:
    """One JSON object on stdout, written piece by piece: a dict field is
    streamed the same way and a list or iterator field item by item, so a long
    log is never one string in memory.

    If reading fails half-way, the object is closed with the error, its hint
    and exit code as fields, so stdout still holds one valid JSON document.
    """
    out = sys.stdout.buffer
    # The standard library's codec only indents, for people; imported here so
    # a command that prints nothing indented never loads it.
    import json

    def encode(value: Any, depth: int) -> bytes:
        if not indent:
            return msgspec.json.encode(value)
        text = json.dumps(value, indent=2, ensure_ascii=False)
        return text.replace("\n", "\n" + "  " * depth).encode()

    def newline(depth: int) -> bytes:
        return b"\n" + b"  " * depth if indent else b""

    def write_object(document: dict[str, Any], depth: int) -> None:
        out.write(b"{")
        for number, (key, value) in enumerate(document.items()):
            out.write((b"," if number else b"") + newline(depth + 1))
            out.write(msgspec.json.encode(key) + (b": " if indent else b":"))
            if isinstance(value, dict):
                write_object(value, depth + 1)
            elif isinstance(value, list | Iterator):
                write_items(value, depth + 1)
            else:
                out.write(encode(value, depth + 1))
        out.write(newline(depth) + b"}")

    def write_items(items: Iterable[Any], depth: int) -> None:
        out.write(b"[")
        try:
            for index, item in enumerate(items):
                out.write((b"," if index else b"") + newline(depth + 1))
                out.write(encode(item, depth + 1))
        except TurnlogError as error:
            if depth > 1:
                raise
            code = _exit_code(error)
            trailer = {"error": error.message, "hint": error.hint, "exit_code": code}
            out.write(b"]," + msgspec.json.encode(trailer)[1:] + b"\n")
            out.flush()
            _fail(error.message, error.hint, code, as_json=False)
        out.write(newline(depth) + b"]")

    write_object(fields, 0)
    out.write(b"\n")
    out.flush()


json_option = click.option("--json", "as_json", is_flag=True, help="One JSON document on stdout.")


def max_revivals_option(help_text: str) -> Callable[[F], F]:
    """`--max-revivals N`: the revival cap, counted from each session's log."""
    return click.option(
        "--max-revivals",
        type=WholeNumber(min_value=0, example=str(DEFAULT_MAX_REVIVALS)),
        default=DEFAULT_MAX_REVIVALS,
        metavar="N",
        show_default=True,
        help=help_text,
    )


store_option = click.option(
    "--store",
    "store_url",
    metavar="URL",
    help=f"Where session ids are looked up (default: ${STORE_ENV}, else ./{DEFAULT_STORE}).",
)


def _progress(console: Console, ids: list[str], what: str, *, as_json: bool) -> Iterable[str]:
    """A progress bar on a terminal for long work; the items as they are otherwise."""
    if as_json or not console.is_terminal or len(ids) <= PROGRESS_AFTER_SESSIONS:
        return ids
    from rich.progress import track

    return track(ids, description=what, console=console, transient=True)
