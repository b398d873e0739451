"""The turnlog command line: parsing arguments and printing what the library says."""

from __future__ import annotations

import collections
import datetime as dt
import functools
import os
import signal
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Final, NoReturn, TypeVar

import click
import msgspec

from turnlog import events as ev
from turnlog.errors import (
    FormatError,
    SessionLockedError,
    TurnlogError,
    UsageError,
)
from turnlog.fold import Fold, Message
from turnlog.recovery import patch_dangling_tool_calls
from turnlog.revivable import DEFAULT_MAX_REVIVALS
from turnlog.stores import (
    DEFAULT_STORE,
    STORE_ENV,
    Store,
    existing_store,
    resolve_session,
    store_from_url,
)
from turnlog.triage import inspect, plan_stored, recover

# Only what `inspect --json`, the call a supervisor or a shell hook makes per
# session, runs through is imported here; every other command imports what it
# alone needs (the renderer, the providers, the loop, the writers) when it runs.

EXIT_OK: Final = 0
EXIT_FINDINGS: Final = 1
EXIT_USAGE: Final = 2
EXIT_UNREADABLE: Final = 3
EXIT_LOCKED: Final = 4

# `ls` shows a progress bar past this many sessions, when on a terminal.
PROGRESS_AFTER_SESSIONS: Final = 50

if TYPE_CHECKING:
    from rich.console import Console

F = TypeVar("F", bound=Callable[..., Any])


_PIPED_WIDTH: Final = 100_000


def _console(*, unfolded_when_piped: bool = True) -> Console:
    # Imported on use: a --json call never pays for the terminal renderer.
    from rich.console import Console

    console = Console(highlight=False, soft_wrap=True)
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
    click.echo(f"error: {message}", err=True)
    if hint:
        click.echo(f"hint: {hint}", err=True)
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
        type=click.IntRange(min=0),
        default=DEFAULT_MAX_REVIVALS,
        show_default=True,
        help=help_text,
    )


store_option = click.option(
    "--store",
    "store_url",
    metavar="URL",
    help=f"Where session ids are looked up (default: ${STORE_ENV}, else ./{DEFAULT_STORE}).",
)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="turnlog")
def main() -> None:
    """turnlog: a crash-safe session log for LLM agents.

    SESSION is a path to a .jsonl file, or a session id in --store.
    Exit codes: 0 ok, 1 findings, 2 usage, 3 unreadable or corrupt input,
    4 a live writer holds the session.
    """
    # Output piped into `head` ends quietly, as other command-line tools do,
    # not with an error about a broken pipe.
    if hasattr(signal, "SIGPIPE"):
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)


@main.command("ls")
@store_option
@click.option(
    "--limit",
    type=click.IntRange(min=1),
    default=None,
    metavar="N",
    help="At most N sessions (a page).",
)
@click.option(
    "--after",
    metavar="ID",
    default=None,
    help="Start after this session id (the last id of the previous page).",
)
@json_option
@_reports_errors
def ls_command(store_url: str | None, limit: int | None, after: str | None, as_json: bool) -> None:
    """List sessions: status, turns, events, last activity, owed calls.

    Sessions come in id order; --limit and --after page through a large store.
    """
    store = existing_store(store_url)
    ids = [sid for sid in store.sessions() if after is None or sid > after]
    more = limit is not None and len(ids) > limit
    ids = ids[:limit]
    console = _console()
    rows = []
    for session_id in _progress(console, ids, "reading session tails", as_json=as_json):
        found = inspect(store, session_id)
        rows.append(
            {
                "session_id": session_id,
                "status": found.status,
                "turns": found.turns,
                "events": found.events,
                "last_activity": found.last_activity,
                "owed_calls": len(found.owed_calls),
            }
        )
    next_after = ids[-1] if more and ids else None
    if as_json:
        _emit_json({"store": store.url, "sessions": rows, "next_after": next_after})
    else:
        from turnlog.render import render_sessions

        render_sessions(console, rows)
        if next_after is not None:
            console.print(f"more: turnlog ls --after {next_after} --limit {limit}")


@main.command("inspect")
@click.argument("session")
@store_option
@max_revivals_option("The revival cap used to say whether the session is revivable.")
@json_option
@_reports_errors
def inspect_command(session: str, store_url: str | None, max_revivals: int, as_json: bool) -> None:
    """Say what state SESSION is in, from its tail. Never writes.

    Exits 3 when the session is unreadable or corrupt, else 0.
    """
    store, session_id = resolve_session(session, store_url)
    found = inspect(store, session_id, max_revivals=max_revivals)
    if as_json:
        document = _to_builtins(found)
        document.pop("bytes_read", None)
        if document["torn_tail"] is not None:
            # The documented key; `size_bytes` is the library's field name.
            document["torn_tail"]["bytes"] = document["torn_tail"]["size_bytes"]
        _emit_json(document)
    else:
        from turnlog.render import render_inspection

        render_inspection(_console(), found)
    if found.status in ("unreadable", "corrupt"):
        sys.exit(EXIT_UNREADABLE)


@main.command("plan")
@click.argument("session")
@store_option
@click.option("--check", is_flag=True, help="Exit 1 when the plan is not empty.")
@json_option
@_reports_errors
def plan_command(session: str, store_url: str | None, check: bool, as_json: bool) -> None:
    """Show the events recovery would append to SESSION, without appending them.

    Reads only the tail, as `recover` does. Exits 4 while a live writer holds
    the session: its open turn is work in progress, not a crash.
    """
    store, session_id = resolve_session(session, store_url)
    repairs = plan_stored(store, session_id)
    if as_json:
        _emit_json(
            {
                "session_id": session_id,
                "repairs": [
                    {"type": e.type, "data": ev.to_builtins(e)["data"], "origin": e.origin}
                    for e in repairs.events
                ],
                "warnings": list(repairs.warnings),
            }
        )
    else:
        console = _console()
        from turnlog.render import render_events

        render_events(console, repairs.events, title="recovery would append")
        for warning in repairs.warnings:
            console.print(f"warning: {warning}", style="yellow")
    if check and repairs.events:
        sys.exit(EXIT_FINDINGS)


@main.command("recover")
@click.argument("session")
@store_option
@click.option(
    "--force",
    is_flag=True,
    help="Append even though a live writer holds the session (only for a stuck holder).",
)
@json_option
@_reports_errors
def recover_command(session: str, store_url: str | None, force: bool, as_json: bool) -> None:
    """Repair a crashed SESSION by appending: a result per owed call, then the turn end.

    A torn tail is moved to a sidecar file first. Running it again appends nothing.
    """
    store, session_id = resolve_session(session, store_url)
    recovery = recover(store, session_id, force=force)
    repairs, torn = recovery.plan, recovery.torn_tail
    if as_json:
        _emit_json(
            {
                "session_id": session_id,
                "appended": [ev.to_builtins(e) for e in repairs.events],
                "torn_tail": _to_builtins(torn),
                "warnings": list(repairs.warnings),
            }
        )
        return
    console = _console()
    if torn is not None:
        console.print(f"moved a torn tail of {torn.size_bytes} bytes to {torn.sidecar}")
    if repairs.events:
        from turnlog.render import render_events

        render_events(console, repairs.events, title="appended")
    else:
        console.print("nothing to recover: no open turn")


@main.command("revive")
@click.argument("session")
@store_option
@click.option("--tree", is_flag=True, help="Revive the subagents it waits on too, each as itself.")
@max_revivals_option("The revival cap, counted from each session's log; 0 turns revival off.")
@json_option
@_reports_errors
def revive_command(
    session: str, store_url: str | None, tree: bool, max_revivals: int, as_json: bool
) -> None:
    """Revive a crashed SESSION as itself: recover, mark the revival, tell the model.

    Prints what it appended (each synthetic result with its risk, the
    run_revived marker, the notice) and what the agent's loop must do next:
    which session to carry on, as which agent, and (with --tree) which waits
    on subagents stay pending until those subagents finish. Tool calls are
    never replayed. A session already revived and not run on since is not
    told again (exit 0, nothing written). Exits 0 when the session is revived,
    1 when there was nothing to revive (finished, empty, past the cap), 4
    while a live writer holds a session.
    """
    from turnlog.log import open as open_log
    from turnlog.revival import revive
    from turnlog.tree import revive_tree

    store, session_id = resolve_session(session, store_url)
    if tree:
        with revive_tree(store, session_id, max_revivals=max_revivals) as revived_tree:
            nodes = [_revived_node(node) for node in revived_tree.nodes]
            appended = [node.appended for node in revived_tree.nodes]
        revived_any = any(node["revived"] for node in nodes)
        if as_json:
            _emit_json({"session_id": session_id, "revived": revived_any, "sessions": nodes})
        else:
            console = _console()
            for node, events in zip(nodes, appended, strict=True):
                _print_node(console, node, events)
            if revived_any:
                console.print(
                    "next: run the revived sessions in the order above (children first); "
                    "each child's answer goes to its parent's pending wait under its call id "
                    "(turnlog.revive_tree, then turnlog.continue_tree)"
                )
        if not revived_any:
            _not_revived(nodes[0] if nodes else {}, as_json=as_json)
        return
    with open_log(store, session_id, create=False) as log:
        torn = log.torn_tail
        revival = revive(log, max_revivals=max_revivals)
    node = _revival_fields(session_id, revival)
    node["torn_tail"] = _to_builtins(torn)
    if as_json:
        _emit_json(node)
    else:
        console = _console()
        if torn is not None:
            console.print(f"moved a torn tail of {torn.size_bytes} bytes to {torn.sidecar}")
        _print_node(console, node, revival.appended)
        if node["next"]:
            console.print(f"next: {node['next']}")
    if not revival.revived:
        _not_revived(node, as_json=as_json)


def _next_step(session_id: str, revival: Any) -> str | None:
    """What the agent's loop must do now, in words; None when nothing was revived."""
    if not revival.revived:
        return None
    agent = revival.agent
    who = f" as agent {agent.id}" if agent is not None and agent.id else ""
    if revival.pending:
        return (
            f"run the subagents {', '.join(w.agent_id for w in revival.pending)} to their "
            f"answers, write each to {session_id}'s pending wait under its call id, then "
            f"resume {session_id}'s open turn{who} (turnlog.revive_tree and "
            "turnlog.continue_tree do all of it)"
        )
    return (
        f"run the agent's loop on {session_id}{who}: it carries on from the log as it is, "
        "and the model reads the synthetic results and the notice (turnlog.continue_run, "
        "or your own loop with log.messages); no tool call is replayed"
    )


def _revival_fields(session_id: str, revival: Any) -> dict[str, Any]:
    agent = revival.agent
    return {
        "session_id": session_id,
        "revived": revival.revived,
        "reason": revival.reason,
        "revival": revival.revival,
        "agent_id": agent.id if agent is not None else None,
        "agent_type": agent.type if agent is not None else None,
        "agent_label": agent.label if agent is not None else None,
        "appended": [ev.to_builtins(e) for e in revival.appended],
        "pending": [_to_builtins(wait) for wait in revival.pending],
        "next": _next_step(session_id, revival),
        "hint": revival.hint,
    }


def _revived_node(node: Any) -> dict[str, Any]:
    if node.revival is not None:
        fields = _revival_fields(node.session_id, node.revival)
        # With the answers of finished children, written before the revival.
        fields["appended"] = [ev.to_builtins(e) for e in node.appended]
    else:
        fields = {
            "session_id": node.session_id,
            "revived": False,
            "reason": node.outcome,
            "revival": node.verdict.revivals,
            "agent_id": node.agent_id,
            "agent_type": node.agent_type,
            "agent_label": None,
            "appended": [],
            "pending": [],
            "next": None,
            "hint": None,
        }
    fields["parent"] = node.parent_id
    fields["outcome"] = node.outcome
    return fields


def _describe_node(node: dict[str, Any]) -> str:
    who = f" as agent {node['agent_id']}" if node.get("agent_id") else ""
    if not node["revived"]:
        return f"{node['session_id']}: not revived ({node.get('outcome') or node['reason']})"
    if node["reason"] == "already_revived":
        line = (
            f"{node['session_id']}: already revived{who} (revival {node['revival']}) and not "
            "run on since: not told again, no revival spent"
        )
    else:
        line = f"{node['session_id']}: revived{who} (revival {node['revival']})"
    for wait in node["pending"]:
        line += f"\n  pending wait {wait['call_id']} on agent {wait['agent_id']}"
    return line


def _print_node(console: Console, node: dict[str, Any], events: Sequence[ev.Event]) -> None:
    """A node's outcome, then every event it appended, synthetic results with their risk."""
    from turnlog.render import render_events

    console.print(_describe_node(node))
    if events:
        render_events(console, events, title="appended")
    elif node["revived"]:
        console.print("appended: nothing")


def _not_revived(node: dict[str, Any], *, as_json: bool) -> NoReturn:
    hint = node.get("hint")
    if hint and not as_json:
        click.echo(f"hint: {hint}", err=True)
    sys.exit(EXIT_FINDINGS)


@main.command("show")
@click.argument("session")
@click.option(
    "--turn",
    "turn",
    type=click.IntRange(min=1),
    metavar="N",
    help="Only turn N: the request that opened it, through its end.",
)
@click.option(
    "--tail", "tail", type=click.IntRange(min=1), metavar="N", help="Only the last N events."
)
@click.option(
    "--since",
    metavar="TIME",
    help="Only events at or after TIME (ISO 8601, e.g. 2026-12-01T09:00:00Z).",
)
@click.option(
    "--full", is_flag=True, help="Show every text whole (the revival notice, long results)."
)
@store_option
@json_option
@_reports_errors
def show_command(
    session: str,
    turn: int | None,
    tail: int | None,
    since: str | None,
    full: bool,
    store_url: str | None,
    as_json: bool,
) -> None:
    """Show SESSION's timeline: turns, steps, messages, tool calls and their results.

    Events turnlog wrote itself are marked with their origin and risk. The
    filters combine: --turn, then --since, then --tail.
    """
    store, session_id = resolve_session(session, store_url)
    events = _selected(_events(store, session_id), turn=turn, since=_instant(since), tail=tail)
    if as_json:
        _stream_json({"session_id": session_id, "events": (ev.to_builtins(e) for e in events)})
    else:
        from turnlog.render import render_timeline

        render_timeline(_console(), events, full=full)


def _instant(text: str | None) -> dt.datetime | None:
    if text is None:
        return None
    try:
        moment = dt.datetime.fromisoformat(text)
    except ValueError:
        raise UsageError(
            f"--since {text!r} is not a time",
            hint="give an ISO 8601 time such as 2026-12-01T09:00:00Z or 2026-12-01",
        ) from None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=dt.UTC)


def _selected(
    events: Iterable[ev.Event], *, turn: int | None, since: dt.datetime | None, tail: int | None
) -> Iterable[ev.Event]:
    """The events `show` prints, streamed: a long session is never held whole,
    except the last `tail` events."""
    if turn is not None:
        events = _turn_events(events, turn)
    if since is not None:
        moment = since
        events = (
            e for e in events if e.ts is not None and dt.datetime.fromisoformat(e.ts) >= moment
        )
    if tail is not None:
        events = collections.deque(events, maxlen=tail)
    return events


def _turn_events(events: Iterable[ev.Event], number: int) -> Iterator[ev.Event]:
    """Turn `number`'s events: from the first event after the turn before it
    ended (the request that opened it) through its `turn_end`. Turns are
    counted by their `turn_start`s, as the writer numbers them."""
    count = 0
    pending: list[ev.Event] = []
    inside = False
    for event in events:
        data = event.data
        if isinstance(data, ev.TurnStart):
            count += 1
            inside = count == number
            if inside:
                yield from pending
            pending = []
        if inside:
            yield event
            if isinstance(data, ev.TurnEnd):
                return
        elif isinstance(data, ev.TurnEnd):
            pending = []
        elif count == number - 1 and not isinstance(data, ev.Session):
            pending.append(event)


@main.command("verify")
@click.argument("session", required=False)
@store_option
@click.option("--strict", is_flag=True, help="Also require a checksum on every record.")
@json_option
@_reports_errors
def verify_command(session: str | None, store_url: str | None, strict: bool, as_json: bool) -> None:
    """Check SESSION (or every session in --store): checksums, seq order, header,
    vocabulary, turn and step pairing, one result per call.

    Exits 1 listing every problem, 0 when clean.
    """
    from turnlog.verify import verify_session, verify_store

    if session is not None:
        store, session_id = resolve_session(session, store_url)
        found = [verify_session(store, session_id, strict=strict, raise_unreadable=True)]
    else:
        found = verify_store(existing_store(store_url), strict=strict)
    reports = [_to_builtins(report) for report in found]
    ok = all(report["ok"] for report in reports)
    if as_json:
        _emit_json({"ok": ok, "sessions": reports})
    else:
        console = _console()
        for report in reports:
            if report["ok"]:
                console.print(f"{report['session_id']}: ok ({report['events']} events)")
                continue
            console.print(
                f"{report['session_id']}: {len(report['problems'])} problem(s)", style="bold red"
            )
            for problem in report["problems"]:
                where = []
                if problem.get("line") is not None:
                    where.append(f"line {problem['line']}")
                if problem.get("offset") is not None:
                    where.append(f"byte {problem['offset']}")
                prefix = f"{', '.join(where)}: " if where else ""
                console.print(f"  {prefix}{problem['message']}")
        if not reports:
            console.print("no sessions")
    if not ok:
        sys.exit(EXIT_FINDINGS)


@main.command("fork")
@click.argument("session")
@click.option("--at", "at_seq", type=int, required=True, help="The last seq the fork inherits.")
@click.option("--id", "new_id", help="The new session's id (default: <session>-fork-<n>).")
@store_option
@json_option
@_reports_errors
def fork_command(
    session: str, at_seq: int, new_id: str | None, store_url: str | None, as_json: bool
) -> None:
    """Start a new session from SESSION's events 0..AT, keeping their seqs and the lineage.

    A fork point inside a turn is refused: half a turn is never inherited.
    """
    from turnlog.fork import fork_session
    from turnlog.log import utc_now

    store, session_id = resolve_session(session, store_url)
    new_id = fork_session(store, session_id, at_seq, new_id=new_id, created_at=utc_now())
    path = store.location(new_id)
    if as_json:
        _emit_json(
            {"session_id": new_id, "parent": session_id, "seed_length": at_seq + 1, "path": path}
        )
    else:
        _console().print(
            f"forked {session_id} at seq {at_seq} into {new_id}" + (f" ({path})" if path else "")
        )


class _ProviderChoice(click.Choice[str]):
    """`click.Choice` of the provider names, read from `turnlog.providers` when
    `export` parses its options or prints its help, not when the command line
    is built: every other command leaves the four renderers unloaded."""

    def __init__(self) -> None:
        super().__init__(())

    @property
    def choices(self) -> tuple[str, ...]:
        from turnlog.providers import PROVIDERS

        return tuple(PROVIDERS)

    @choices.setter
    def choices(self, value: object) -> None:
        # `click.Choice.__init__` stores the (empty) tuple it was given.
        pass


@main.command("export")
@click.argument("session")
@click.option(
    "--to",
    "provider",
    type=_ProviderChoice(),
    required=True,
    help="The provider API to render the request messages for.",
)
@click.option(
    "--validate", is_flag=True, help="Exit 1 listing every rule the provider would reject."
)
@click.option(
    "--patch-in-memory",
    is_flag=True,
    help="Answer unanswered tool calls in memory only (for logs you may not change).",
)
@store_option
@json_option
@_reports_errors
def export_command(
    session: str,
    provider: str,
    validate: bool,
    patch_in_memory: bool,
    store_url: str | None,
    as_json: bool,
) -> None:
    """Print SESSION's transcript as PROVIDER request messages (JSON). Writes nothing.

    With --json the output is {"provider", "request", "violations"}.
    """
    from turnlog.providers import render as render_request
    from turnlog.providers import validate as validate_request

    store, session_id = resolve_session(session, store_url)
    # Only the transcript is kept, never the events; the request is written
    # item by item.
    state = Fold(_events(store, session_id)).state
    messages: Sequence[Message] = state.messages
    dangling = patch_dangling_tool_calls(messages)
    fix = _export_fix(session, state.open_turn is not None, len(dangling) != len(messages))
    if patch_in_memory:
        messages = dangling
    del dangling
    request = render_request(provider, messages)
    del messages, state
    violations = validate_request(provider, request) if validate or as_json else []
    if as_json:
        _stream_json(
            {
                "provider": provider,
                "request": request,
                "violations": [_to_builtins(v) for v in violations],
            }
        )
    else:
        _stream_json(request, indent=True)
    for violation in violations:
        where = f" (call {violation.call_id})" if violation.call_id else ""
        click.echo(f"violation: item {violation.index}: {violation.message}{where}", err=True)
    if validate and violations:
        click.echo(f"hint: {fix}", err=True)
        sys.exit(EXIT_FINDINGS)


def _export_fix(session: str, turn_open: bool, dangling: bool) -> str:
    """What fixes an export a provider would reject, from what the log shows."""
    if turn_open:
        return (
            "the session has a turn that never ended (a crash, or a run still going): "
            f"`turnlog inspect {session}` says which; once no writer holds it, "
            f"`turnlog recover {session}` answers its calls"
        )
    if dangling:
        return (
            "a turn that ended left tool calls unanswered; that is not a crash, so recovery "
            "leaves it as it is: export with --patch-in-memory to answer them in the request only"
        )
    return (
        "no crash caused this, so recovery would change nothing: the rule is broken by what "
        "the log itself holds (for example a conversation that opens with the assistant, "
        "which this provider refuses); edit the request, or export for another provider"
    )


@main.command("copy")
@click.argument("source", metavar="SOURCE")
@click.argument("dest", metavar="DEST")
@click.option(
    "--session",
    "session_ids",
    multiple=True,
    metavar="ID",
    help="A session to copy (repeatable; default: every session in SOURCE).",
)
@click.option(
    "--skip-existing",
    is_flag=True,
    help="Leave sessions DEST already holds as they are and copy the others.",
)
@json_option
@_reports_errors
def copy_command(
    source: str, dest: str, session_ids: tuple[str, ...], skip_existing: bool, as_json: bool
) -> None:
    """Copy sessions from the SOURCE store to the DEST store, event for event.

    Same seq, timestamps, origins and content; a session that exists in DEST
    is never overwritten: without --skip-existing the copy is refused before
    anything is written. Each copy is read back and compared. This is how a
    store moves from files to a database.
    """
    from turnlog.errors import SessionExistsError
    from turnlog.transfer import copy_session

    source_store = existing_store(source)
    dest_store = store_from_url(dest)
    ids = list(session_ids) or source_store.sessions()
    there = [session_id for session_id in ids if dest_store.exists(session_id)]
    if there and not skip_existing:
        # Refused whole, before the first copy: a second run is never left
        # to find half the sessions copied.
        named = ", ".join(repr(session_id) for session_id in there[:5])
        raise SessionExistsError(
            (
                f"session {named} already exists in {dest_store.url}"
                if len(there) == 1
                else f"{len(there)} sessions already exist in {dest_store.url}: {named}"
                + (", …" if len(there) > 5 else "")
            ),
            hint="copy never overwrites: pass --skip-existing to copy the others, or copy "
            "into another store",
        )
    todo = [session_id for session_id in ids if session_id not in set(there)]
    console = _console()
    copied = []
    for session_id in _progress(console, todo, "copying sessions", as_json=as_json):
        copied.append(copy_session(source_store, session_id, dest_store))
    if as_json:
        _emit_json(
            {
                "source": source_store.url,
                "dest": dest_store.url,
                "copied": copied,
                "skipped": there,
            }
        )
        return
    for item in copied:
        console.print(f"copied {item.session_id} ({item.events} events)")
    for session_id in there:
        console.print(f"skipped {session_id} (already in {dest_store.url})")
    if not copied and not there:
        console.print("no sessions to copy")


@main.command("sweep")
@click.argument("store_positional", metavar="[STORE]", required=False)
@store_option
@click.option(
    "--older-than",
    "older_than_s",
    type=click.FloatRange(min=0),
    default=0,
    metavar="SECONDS",
    help="Only sessions whose last event is at least this old.",
)
@click.option("--revive", is_flag=True, help="Revive each recovered session, within the cap.")
@max_revivals_option("The revival cap for --revive.")
@json_option
@_reports_errors
def sweep_command(
    store_positional: str | None,
    store_url: str | None,
    older_than_s: float,
    revive: bool,
    max_revivals: int,
    as_json: bool,
) -> None:
    """Recover every crashed session in the store (--store, as every command
    takes it; a STORE argument is still read): an open turn and no live writer.

    Safe to run from many processes or machines at once: each session is
    repaired under its writer lock, once. Lists what this sweeper did and what
    it skipped (running, corrupt, too recent), and why.
    """
    from turnlog.sweeper import sweep

    if store_positional is not None and store_url is not None and store_positional != store_url:
        raise UsageError(
            f"two stores given: {store_positional!r} and --store {store_url!r}",
            hint="name the store once, with --store",
        )
    store = existing_store(store_url or store_positional)
    console = _console()
    done = sweep(
        store,
        older_than_s=older_than_s,
        revive=revive,
        max_revivals=max_revivals,
        progress=lambda ids: _progress(console, ids, "sweeping", as_json=as_json),
    )
    # A cron sweeper must not report success for a repair that failed.
    failed = sum(item.action == "failed" for item in done)
    if as_json:
        _emit_json({"store": store.url, "sessions": done})
    else:
        for item in done:
            extra = f", {item.appended} events appended" if item.appended else ""
            console.print(f"{item.session_id}: {item.action} ({item.reason}{extra})")
        if not done:
            console.print("nothing to sweep: no session has an open turn without a writer")
        if failed:
            click.echo(f"error: {failed} of {len(done)} repairs failed", err=True)
    if failed:
        sys.exit(EXIT_FINDINGS)


@main.group("store")
def store_group() -> None:
    """Manage stores."""


@store_group.command("init")
@click.argument("store_url", metavar="URL")
@json_option
@_reports_errors
def store_init_command(store_url: str, as_json: bool) -> None:
    """Create the store at URL (a directory, or a database and its schema)."""
    store = store_from_url(store_url)
    store.init()
    if as_json:
        _emit_json({"store": store.url, "sessions": len(store.sessions())})
    else:
        _console().print(f"ready: {store.url} ({len(store.sessions())} sessions)")


def _progress(console: Console, ids: list[str], what: str, *, as_json: bool) -> Iterable[str]:
    """A progress bar on a terminal for long work; the items as they are otherwise."""
    if as_json or not console.is_terminal or len(ids) <= PROGRESS_AFTER_SESSIONS:
        return ids
    from rich.progress import track

    return track(ids, description=what, console=console, transient=True)


KIND_CHOICE = click.Choice(["claude-code", "codex"])
# A folder's report exits with its worst file: unreadable above live above
# a usage problem above findings.
_SEVERITY: Final = (EXIT_OK, EXIT_FINDINGS, EXIT_USAGE, EXIT_LOCKED, EXIT_UNREADABLE)


def _worst(codes: Iterable[int]) -> int:
    return max(codes, key=_SEVERITY.index, default=EXIT_OK)


@main.command("doctor")
@click.argument("kind", type=KIND_CHOICE)
@click.argument("path", metavar="FILE|DIR", required=False)
@click.option(
    "--all",
    "scan_all",
    is_flag=True,
    help="Scan a folder (default ~/.claude/projects or ~/.codex/sessions) for sessions that "
    "will not resume, and repair them after one confirmation.",
)
@click.option("--dry-run", is_flag=True, help="Show what would be appended; write nothing.")
@click.option("--yes", is_flag=True, help="Repair without asking (for scripts).")
@click.option(
    "--force",
    is_flag=True,
    help="Repair a file that looks live (open in a process, or modified recently).",
)
@click.option(
    "--live-window",
    "live_window_s",
    type=click.FloatRange(min=0),
    default=None,
    metavar="SECONDS",
    help="Treat a file modified this recently as live and leave it alone (default: 600 for "
    "Claude Code, which writes nothing while a tool runs or it waits for you; 10 for Codex, "
    "which holds its file open while it runs).",
)
@json_option
@_reports_errors
def doctor_command(
    kind: str,
    path: str | None,
    scan_all: bool,
    dry_run: bool,
    yes: bool,
    force: bool,
    live_window_s: float | None,
    as_json: bool,
) -> None:
    """Repair a Claude Code or Codex session that will not resume, in its own
    format, by appending only.

    Claude Code: one `user` line per unanswered `tool_use` line, answering its
    calls with an error result that says what is known. Codex: one output
    item per orphan call, with the real output where Codex recorded it. A torn
    final fragment is moved to a sidecar first; no other byte changes. A
    healthy or user-interrupted session is left alone; a second run appends
    nothing. With --all, a file that cannot be repaired is reported and the
    scan goes on. Exits 0 when repaired or nothing to repair, 1 when --dry-run
    finds a repair to make, 4 when a file looks live, 3 when a file could not
    be read or repaired: the worst over all files.
    """
    from turnlog.rescue import (
        DEFAULT_FOLDERS,
        Failure,
        Repair,
        diagnose,
        doctor,
        failure,
        scan_folder,
    )

    console = _console()
    if scan_all:
        folder = os.path.expanduser(path or DEFAULT_FOLDERS[kind])
        if not os.path.isdir(folder):
            raise UsageError(f"{folder} is not a folder", hint="pass the folder to scan")
        found = scan_folder(
            kind,
            folder,
            progress=lambda files: _progress(console, list(files), "scanning", as_json=as_json),
        )
    else:
        if path is None:
            raise UsageError("doctor needs a FILE, or --all to scan a folder")
        found = [diagnose(path, kind)]
    diagnosed = [item for item in found if not isinstance(item, Failure)]
    failed: list[Failure] = [item for item in found if isinstance(item, Failure)]
    wanted = [item for item in diagnosed if item.needs_repair]
    if not as_json:
        for item in diagnosed:
            _print_diagnosis(console, item)
        if scan_all and not wanted and not failed:
            console.print(f"nothing to repair in {folder}")
    if wanted and not dry_run and not yes:
        if not sys.stdin.isatty():
            raise UsageError(
                "not repairing without a confirmation",
                hint="pass --yes to repair without asking, or --dry-run to look only",
            )
        if not click.confirm(f"append the repairs to {len(wanted)} file(s)?", default=False):
            sys.exit(EXIT_FINDINGS)
    # A folder reports the sessions that need a repair; one file always reports.
    listed = wanted if scan_all else diagnosed
    done: list[Repair | Failure] = []
    codes = [_failure_code(unread) for unread in failed]
    for item in listed:
        if dry_run:
            action = "would repair" if item.needs_repair else "nothing to repair"
            done.append(Repair(diagnosis=item, action=action))
            continue
        # The repair reads each file whole again: a scan judged from tails.
        try:
            done.append(doctor(item.path, kind, force=force, live_window_s=live_window_s))
        except (TurnlogError, OSError) as error:
            if not scan_all:
                raise
            # One bad file does not stop the others; it is reported with them.
            lost = failure(item.path, error)
            done.append(lost)
            codes.append(_failure_code(lost))
    if as_json:
        _emit_json(
            {
                "repairs": [_to_builtins(repair) for repair in done],
                "failed": [_to_builtins(unread) for unread in failed],
            }
        )
    else:
        for unread in failed:
            console.print(f"{unread.path}: not read: {unread.error}", style="red")
        for repair in done:
            if isinstance(repair, Failure):
                console.print(f"{repair.path}: not repaired: {repair.error}", style="red")
                if repair.hint:
                    console.print(f"  hint: {repair.hint}")
                continue
            where = repair.diagnosis.path
            moved = repair.torn_tail
            if moved is not None:
                console.print(
                    f"{where}: moved a torn fragment of {moved.size_bytes} bytes to {moved.sidecar}"
                )
            if repair.action == "repaired" and repair.appended_bytes:
                lines = len(repair.diagnosis.lines)
                console.print(f"{where}: appended {lines} line(s), {repair.appended_bytes} bytes")
            elif repair.action != "repaired":
                console.print(f"{where}: {repair.action}")
    if dry_run and wanted:
        codes.append(EXIT_FINDINGS)
    worst = _worst(codes)
    if worst != EXIT_OK:
        sys.exit(worst)


def _failure_code(item: Any) -> int:
    """The exit status a failed file stands for, from its error's class."""
    if item.kind == "SessionLockedError":
        return EXIT_LOCKED
    if item.kind == "UsageError":
        return EXIT_USAGE
    return EXIT_UNREADABLE


def _print_diagnosis(console: Console, item: Any) -> None:
    what = f"{item.kind} session {item.session_id}"
    if item.subagent_of is not None:
        what = f"{item.kind} subagent {item.agent_id} of session {item.subagent_of}"
    console.print(f"{item.path}: {what}, {item.status}")
    for owed in item.owed:
        if owed.recorded:
            known = "real output recorded elsewhere"
        elif owed.rule == "R1":
            known = f"{owed.risk} (the file shows it started)"
        else:
            known = f"{owed.risk} (the file does not show whether it started)"
        console.print(f"  owes {owed.call_id} ({owed.name}): {known}")
    if item.torn_tail is not None:
        console.print(
            f"  torn final fragment: {item.torn_tail.size_bytes} bytes at {item.torn_tail.offset}"
        )
    for problem in item.problems:
        where = f"line {problem.line}: " if problem.line else ""
        console.print(f"  found: {where}{problem.message}", style="yellow")


@main.command("import")
@click.argument("kind", type=click.Choice(["claude-code", "codex", "auto"]))
@click.argument("files", metavar="FILE...", nargs=-1, required=True)
@store_option
@json_option
@_reports_errors
def import_command(kind: str, files: tuple[str, ...], store_url: str | None, as_json: bool) -> None:
    """Import Claude Code or Codex sessions (and their subagents) into a turnlog store.

    The files are only read. Each becomes a session of `origin: import` events,
    so `inspect`, `show`, `export`, `recover` and `revive` work on it. A
    subagent's own file becomes a child of the session that spawned it,
    whatever order the files come in. Exits 3 if any file could not be
    imported (the others are).
    """
    from turnlog.rescue import import_file

    store = store_from_url(store_url)
    store.init()
    console = _console()
    results: list[dict[str, Any]] = []
    failed = False
    for path in files:
        try:
            done = import_file(store, path, kind)
        except (TurnlogError, OSError) as error:
            failed = True
            message = error.message if isinstance(error, TurnlogError) else str(error)
            hint = error.hint if isinstance(error, TurnlogError) else ""
            results.append({"path": path, "error": message, "hint": hint})
            if not as_json:
                # The message names the file already when it can.
                shown = message if path in message else f"{path}: {message}"
                click.echo(f"error: {shown}", err=True)
                if hint:
                    click.echo(f"hint: {hint}", err=True)
            continue
        results.append(_to_builtins(done))
        if not as_json:
            extra = f", {len(done.subagents)} subagent(s)" if done.subagents else ""
            facts = f"{done.events} events, {done.status}{extra}"
            role = f" (subagent of {done.subagent_of})" if done.subagent_of else ""
            console.print(f"{path}: imported as {done.session_id}{role} ({facts})")
    if as_json:
        _emit_json({"store": store.url, "imported": results})
    if failed:
        sys.exit(EXIT_UNREADABLE)


@main.command("demo")
@click.option(
    "--dir",
    "directory",
    default=DEFAULT_STORE,
    show_default=True,
    help="Where the demo leaves its session.",
)
@_reports_errors
def demo_command(directory: str) -> None:
    """Crash a scripted agent mid-tool-call, then inspect, plan, recover and revive it."""
    from turnlog.demo import run_demo

    # The demo draws rules across the width: piped, it keeps a terminal's.
    run_demo(_console(unfolded_when_piped=False), directory)


# One example per command, shown at the end of its --help. Kept together so a
# new command is easy to check for one (tests/test_cli.py does).
EXAMPLES: Final = {
    "ls": "turnlog ls --store sessions --json",
    "inspect": "turnlog inspect sessions/run-1.jsonl",
    "plan": "turnlog plan sessions/run-1.jsonl --check",
    "recover": "turnlog recover sessions/run-1.jsonl",
    "revive": "turnlog revive sessions/run-1.jsonl --json",
    "show": "turnlog show sessions/run-1.jsonl",
    "verify": "turnlog verify --store sessions --strict",
    "fork": "turnlog fork sessions/run-1.jsonl --at 12 --id run-1-retry",
    "export": "turnlog export sessions/run-1.jsonl --to anthropic --validate",
    "copy": "turnlog copy sessions sqlite:///sessions.db",
    "sweep": "turnlog sweep --store sessions --revive",
    "store init": "turnlog store init sqlite:///sessions.db",
    "doctor": "turnlog doctor claude-code --all --dry-run",
    "import": "turnlog import claude-code ~/.claude/projects/my-app/*.jsonl --store sessions",
    "demo": "turnlog demo --dir /tmp/turnlog-demo",
}


def _add_examples(group: click.Group, prefix: str = "") -> None:
    for name, command in group.commands.items():
        path = f"{prefix}{name}"
        if isinstance(command, click.Group):
            _add_examples(command, f"{path} ")
        elif path in EXAMPLES:
            # `\b` keeps click from rewrapping the command line.
            command.epilog = f"\b\nExample:\n  {EXAMPLES[path]}"


_add_examples(main)
